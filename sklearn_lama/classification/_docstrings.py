"""One source for the docstring text that several estimators share.

The classifiers share most of their training parameters; their docstrings
hold ``%(name)s`` fields that :class:`Substitution` fills from the texts
below (imbalanced-learn's idiom), so every class documents every parameter
and the text exists once.
"""

__all__ = ["Substitution", "classifier_docstring"]


class Substitution:
    """Decorator filling ``%(name)s`` fields of a docstring with the given texts."""

    def __init__(self, **texts):
        self.texts = texts

    def __call__(self, obj):
        obj.__doc__ = obj.__doc__ % self.texts
        return obj


TRAINING_PARAMETERS = """embedding_dim : int, default=100
        Embedding size learned from scratch when ``X`` is an integer id array
        (unused otherwise: the tables or vectors of ``X`` set the size).
    freeze_embeddings : bool, default=False
        Keep the embedding tables fixed instead of fine-tuning them.
    max_epochs : int, default=20
        Maximum passes over the training data.
    batch_size : int, default=32
        Documents per training batch (batches also keep within a budget of
        padded tokens, so a batch of long documents holds fewer).
    momentum : float, default=0.9
        SGD momentum, used with ``optimizer="sgd"``.
    early_stopping : bool, default=True
        Hold out ``validation_fraction`` of the training data (stratified) and
        keep the weights of the epoch with the lowest validation loss, stopping
        after ``patience`` epochs without improvement. Skipped when the data are
        too small for a useful stratified split (a class with one document, or
        fewer than 5 held-out documents per class).
    validation_fraction : float, default=0.1
        Share of the training data held out for early stopping.
    patience : int, default=5
        Epochs without improvement before stopping.
    ema_horizon : float, default=0.5
        Horizon, in epochs, of an exponential moving average of the weights
        (Polyak averaging): after every training step the average moves
        towards the weights by ``1 / (ema_horizon * steps_per_epoch)``, with
        ``ceil(n_training_documents / batch_size)`` steps per epoch. It starts
        from the initial weights, so the first epoch's average still leans
        towards them. Validation, early stopping, checkpoints and the fitted
        model use the average; training goes on from the optimiser's own
        weights. ``0`` trains as the papers do, on the last weights (the
        documentation's results page compares the two). ``partial_fit`` does
        not average (one epoch, often of a
        few steps, per call), nor does a fit whose horizon is under one step;
        continued training (``warm_start``) starts a new average from the
        fitted weights.
    class_weight : dict, "balanced" or None, default=None
        Weights of the classes in the loss, as in scikit-learn's linear
        models: a dict ``{label: weight}``, ``"balanced"`` for
        ``n_documents / (n_classes * np.bincount(y))``, or ``None`` for 1 each.
        Multiplied with ``sample_weight`` when both are given.
    callbacks : list or None, default=None
        skorch callbacks added to the net, as instances or ``(name, callback)``
        pairs (e.g. ``skorch.callbacks.LRScheduler``, ``GradientNormClipping``).
        They are code, so :func:`~sklearn_lama.save_weights` does not store
        them: a loaded estimator has ``callbacks=None``.
    warm_start : bool, default=False
        When the estimator is already fitted, ``fit`` continues training the
        current network, weights and optimizer state, for ``max_epochs`` more
        epochs instead of starting over. ``X`` must be of the kind seen in the
        first fit (the same vocabulary, or the same number of tokens) and ``y``
        may only hold labels of ``classes_``; architecture parameters must not
        change. The learning rate and the other optimizer settings are taken
        from the current parameters, the optimizer's moments are kept (unless
        ``optimizer`` changed). Early stopping starts afresh on each call.
        :meth:`partial_fit` always continues, one epoch per call.
    checkpoint : str or path-like, default=None
        File name for checkpoints in the format of
        :func:`~sklearn_lama.save_weights`, written after each epoch that
        lowers the validation loss (after every epoch when no validation split
        is used), through skorch's :class:`~skorch.callbacks.Checkpoint`.
        Every fit writes its own file: ``{fit}`` in the name is replaced by 12
        hex digits identifying the parameters and the training data (inserted
        before the suffix when absent: ``"run.pt"`` becomes
        ``"run-3f2a9c1b0d4e.pt"``), so the fits of a ``GridSearchCV`` never
        overwrite each other and a rerun of the same fit finds its file again;
        skorch's fields (``{last_epoch[epoch]}``) work too.
        ``checkpoint_path_`` names the file. Each write replaces the file
        atomically, so a killed process loses at most the epoch in progress,
        and ``load_weights(path).set_params(warm_start=True).fit(X, y)``
        resumes. A directory, or a file in a directory that does not exist or
        cannot be written, raises ``ValueError`` before training starts.
    device : str or torch.device, default="cpu"
        Where the network trains and predicts: ``"cpu"``, ``"cuda"``,
        ``"cuda:N"`` or ``"mps"`` (Apple GPUs), where available.
    precision : {"32", "bf16", "16-mixed"}, default="32"
        Arithmetic of the forward pass. ``"32"``: float32 throughout.
        ``"bf16"``: :func:`torch.autocast` to bfloat16 (on the CPU, and on
        GPUs that support it); ``"16-mixed"``: autocast to float16 with
        gradient scaling (:class:`torch.amp.GradScaler`), CUDA only: on
        another device it raises ``ValueError`` before training (float16 is
        not faster on CPUs; use ``"bf16"`` there). Weights, optimizer state,
        loss and the returned probabilities stay float32. A model trained with
        ``"16-mixed"`` and loaded where CUDA is missing predicts in float32.
    torch_threads : int or None, default=None
        torch's intra-op threads during ``fit``, ``predict`` and the other
        methods; the caller's setting is restored afterwards. ``None`` means
        1, as ``n_jobs=None`` does in scikit-learn: on a machine that other
        processes keep busy, threads beyond the idle cores spin waiting for
        each other, and under a parallel search (loky, Dask, Ray) each fit
        then keeps to one core. A positive int asks for that many; a
        negative one counts from the CPUs the process was given
        (``OMP_NUM_THREADS`` if set, else its CPU affinity): -1 is all of
        them. See the user guide's "Scaling out" page.
    max_batch_tokens : int, default=32768
        Budget of padded tokens (documents x longest length) of every batch,
        in training and inference; a longer document is a batch of its own.
        Memory grows linearly with it (the reliability page gives each
        model's bytes per token): raise it on a GPU with memory to spare.
    inference_batch_size : int, default=256
        Most documents per batch in ``predict``, ``predict_proba``,
        ``decision_function``, ``attention_weights`` and validation (at
        least ``batch_size``), within ``max_batch_tokens``.
    verbose : int, default=0
        Above 0, print a progress bar and a per-epoch table of training
        loss/accuracy and validation loss/accuracy.
    random_state : int, RandomState instance or None, default=None
        Seeds initialisation, shuffling, dropout and the validation split. With
        an int, fits on the same data give the same model, whatever the order
        of the documents."""

FITTED_ATTRIBUTES = """classes_ : ndarray of shape (n_classes,)
        Class labels.
    net_ : skorch.NeuralNetClassifier
        The trained skorch net; ``net_.history`` holds per-epoch metrics and
        ``net_.module_`` the torch network.
    n_epochs_ : int
        Epochs trained, over all ``fit`` calls that continued training
        (``warm_start``, ``partial_fit``).
    input_adapter_ : InputAdapter
        How ``X`` is read: its kind (``TokenSequences``, token ids, a 2-D or
        3-D float array) and what ``fit`` learned about it (vocabulary
        fingerprint and size, vector sizes); later inputs must match.
    n_features_in_ : int
        Number of tokens per document, when fitted on a plain array.
    checkpoint_path_ : str or None
        The file the last fit wrote its checkpoints to (``checkpoint``)."""

# Formatted by :func:`classifier_docstring`: each classifier has its own default.
NB_UNIGRAM_WEIGHT = """nb_unigram_weight : float, default={default}
        Weight of the Naive Bayes features of single tokens, appended to every
        token vector when ``X`` comes with embedding tables (the vectorizers'
        output): the token's log-count ratio, how much more often the
        documents of a class hold it than the others (Wang & Manning, 2012;
        one column for two classes, else one per class), computed on the
        training documents only (never on the held-out validation ones),
        standardised and scaled to ``nb_unigram_weight`` times the spread of
        the table's vectors (divided by the square root of the number of
        columns), then fine-tuned with them. Word vectors trained on a small
        corpus barely separate "good" from "bad"; these columns carry what
        TF-IDF + LogisticRegression learns from such a corpus. ``0`` leaves
        them out: the papers' inputs (word vectors only).

        .. versionchanged:: 0.8.0
           Renamed from ``nb_features``, a name that read as a count."""

# Formatted by :func:`classifier_docstring`: each classifier has its own default.
NB_BIGRAM_WEIGHT = """nb_bigram_weight : float, default={default}
        Weight of the Naive Bayes features of word pairs, appended to every
        token vector after those of ``nb_unigram_weight`` (same tables, same
        scaling): the log-count ratio of the pair the token ends (Wang &
        Manning, 2012, whose bigram features give a linear model most of its
        edge on sentiment), for the pairs held by at least two training
        documents (0 for the others and the first token); computed on the
        training documents only and kept fixed. ``0`` leaves them out.

        .. versionchanged:: 0.8.0
           Renamed from ``nb_bigrams``, a name that read as a count."""

NB_FOLDS = """nb_folds : int, default={default}
        Cross-fitting of the ``nb_bigram_weight`` ratios: while training, each
        document reads the ratios counted without the documents of its fold
        (one of ``nb_folds``, a hash of its tokens), as target encoding is
        cross-fitted, so that a pair held by few training documents is not a
        cue that gives their labels away; predictions use the ratios of all
        training documents. ``0`` counts every training document for all."""

# References [2] and [3] of every classifier (each has its paper as [1]).
SHARED_REFERENCES = """.. [2] Wang, S. and Manning, C. D. "Baselines and Bigrams: Simple, Good
       Sentiment and Topic Classification." ACL 2012 (the Naive Bayes
       log-count ratios of ``nb_unigram_weight`` and ``nb_bigram_weight``).
    .. [3] Polyak, B. T. and Juditsky, A. B. "Acceleration of Stochastic
       Approximation by Averaging." SIAM Journal on Control and Optimization
       30(4), 1992 (the weight average of ``ema_horizon``)."""


def classifier_docstring(nb_unigram_weight, nb_bigram_weight, nb_folds):
    """The :class:`Substitution` of a classifier: the shared texts, with its defaults.

    ``nb_unigram_weight``, ``nb_bigram_weight`` and ``nb_folds`` are the
    defaults, as written in the docstring (e.g. ``"3.0"``).
    """
    return Substitution(
        training_parameters=TRAINING_PARAMETERS,
        fitted_attributes=FITTED_ATTRIBUTES,
        shared_references=SHARED_REFERENCES,
        nb_unigram_weight=NB_UNIGRAM_WEIGHT.format(default=nb_unigram_weight),
        nb_bigram_weight=NB_BIGRAM_WEIGHT.format(default=nb_bigram_weight),
        nb_folds=NB_FOLDS.format(default=nb_folds),
    )
