"""FCSRClassifier: the estimator around :class:`~sklearn_lama.modules.FCSRModule`."""

from functools import partial
from numbers import Integral, Real

from skorch.callbacks import LRScheduler
from torch.optim.lr_scheduler import LambdaLR

from ..modules import FCSRModule, fcsr_lr_lambda
from ..training._parameters import INFERENCE_BATCH
from ..utils._persistence import register
from ..utils._sklearn_compat import Interval, StrOptions
from ._base import BaseSequenceClassifier
from ._parameters import ADDITIONS_OFF

# A quarter of the other models' budget: FCSR keeps the most per token for its
# backward pass (chosen for memory, cross-validated: the Results page's "Fit cost").
_MAX_BATCH_TOKENS = 8192

__all__ = ["FCSRClassifier"]


@register
class FCSRClassifier(BaseSequenceClassifier):
    """Full-context semantic representation (FCSR) text classifier.

    One layer: FOFE compresses each word's whole left and right context with
    forgetting factor ``alpha`` (Eq. 2-3 and 12-13 of the FCSR paper), a Context
    Integration Sub-cell and a Semantic Analysis Sub-cell, each with four
    sigmoid gates, combine them (Eq. 4-8), and feature attention pools the
    ``4n`` features over time (Eq. 9; see
    :class:`~sklearn_lama.modules.FeatureAttention` for how its inconsistent
    shapes are resolved). The cost is linear in the document length.

    From the paper: ``alpha=0.2``, Adam, learning rate 0.01, and (optionally,
    ``lr_schedule="paper"``) the epoch-wise decay of Eq. 16 with
    ``epoch_max = max_epochs``. Dropout 0.3, batch size 32 and ``max_epochs=20``
    are this library's choices (the paper sets them per dataset).

    Parameters
    ----------
    alpha : float, default=0.2
        FOFE forgetting factor, in [0, 1).
    learn_alpha : bool, default=False
        Learn ``alpha`` (starting from ``alpha``, which must then be > 0).
    hidden_size : int or None, default=None
        Width ``n`` of the cell. ``None`` uses the embedding size as the paper
        does; an int adds a linear projection of the embeddings first.
    pooling : {"attention", "mean"}, default="attention"
        ``"attention"`` is the paper's feature attention (Eq. 9); ``"mean"``
        averages ``R_t`` over the document's tokens.
    dropout : float, default=0.3
        Dropout before the output layer.
    lr_schedule : {"paper"} or None, default=None
        ``"paper"`` multiplies the learning rate by Eq. 16's factor each epoch,
        with ``epoch_max = max_epochs``: the paper's 40 is
        ``max_epochs=40``; with the default 20 the decay is twice as fast.
    context_window : int or None, default=None
        Limited context window of the paper's §5.3 (Fig. 3): the FOFE left and
        right contexts sum only the ``context_window`` nearest words on each
        side. ``None`` (the paper's FCSR) uses the whole context.
    embedding_dim : int, default=100
        Embedding size learned from scratch when ``X`` is an integer id array
        (unused otherwise: the tables or vectors of ``X`` set the size).
    freeze_embeddings : bool, default=False
        Keep the embedding tables fixed instead of fine-tuning them.
    embedding_dropout : float, default=0.0
        Dropout on the token vectors while training (the paper has none: 0; the
        results page compares other values).
    nb_unigram_weight : float, default=0.0
        Weight of the Naive Bayes features of single tokens, appended to every
        token vector when ``X`` comes with embedding tables (the vectorizers'
        output): the token's log-count ratio, how much more often the
        documents of a class hold it than the others (Wang & Manning, 2012;
        one column for two classes, else one per class), computed on the
        training documents only (never on the held-out validation ones),
        cross-fitted (``nb_folds``), standardised and scaled to
        ``nb_unigram_weight`` times the spread of the table's vectors (divided
        by the square root of the number of columns), and kept fixed. Word
        vectors trained on a small corpus barely separate "good" from "bad";
        these columns carry what TF-IDF + LogisticRegression learns from such
        a corpus. ``0`` leaves them out: the papers' inputs (word vectors
        only).

        .. versionchanged:: 0.8.0
           Renamed from ``nb_features``, a name that read as a count.
           Cross-fitted and kept fixed: they were fine-tuned columns of the
           tables, counted on every training document.
    nb_bigram_weight : float, default=3.0
        Weight of the Naive Bayes features of word pairs, appended to every
        token vector after those of ``nb_unigram_weight`` (same tables, same
        scaling): the log-count ratio of the pair the token ends (Wang &
        Manning, 2012, whose bigram features give a linear model most of its
        edge on sentiment), for the pairs held by at least two training
        documents (0 for the others and the first token); computed on the
        training documents only, cross-fitted (``nb_folds``) and kept fixed.
        ``0`` leaves them out.

        .. versionchanged:: 0.8.0
           Renamed from ``nb_bigrams``, a name that read as a count.
    nb_folds : int, default=10
        Cross-fitting of the Naive Bayes ratios (``nb_unigram_weight``,
        ``nb_bigram_weight``): while training, each document reads the ratios
        counted without the documents of its fold (one of ``nb_folds``, a hash
        of its tokens), as target encoding is cross-fitted, so that a token or
        pair held by few training documents is not a cue that gives their
        labels away; predictions use the ratios of all training documents.
        ``0`` counts every training document for every row: a document's own
        label then reaches its features while training (a label leak).

        .. versionchanged:: 0.8.0
           Applies to the token ratios too.
    max_epochs : int, default=20
        Maximum passes over the training data.
    max_time : float or None, default=None
        Training budget of a ``fit`` in seconds (``None``: none), checked after
        every training batch: the epoch then ends there (it is still validated
        and recorded) and training stops. Validation counts; what callbacks do
        at the end of an epoch does not. ``net_.history`` records the time so
        far as ``seconds``.
    batch_size : int, default=32
        Documents per training batch (batches also keep within a budget of
        padded tokens, so a batch of long documents holds fewer).
    optimizer : {"sgd", "adam"}, default="adam"
        ``"sgd"`` uses ``momentum``; the paper uses Adam.
    lr : float, default=0.01
        Learning rate.
    momentum : float, default=0.9
        SGD momentum, used with ``optimizer="sgd"``.
    weight_decay : float, default=0.0
        L2 penalty applied by the optimiser.
    early_stopping : bool, default=True
        Hold out ``validation_fraction`` of the training data (stratified) and
        keep the weights of the epoch with the lowest validation loss, stopping
        after ``patience`` epochs without improvement. Skipped when the data are
        too small for a useful split: fewer than 5 held-out documents per class
        (10 in all when several labels per document leave the split
        unstratified), fewer documents left to train on than classes, or a
        class with a single document.
    validation_fraction : float, default=0.1
        Share of the training data held out for early stopping.
    patience : int, default=1
        Epochs without improvement before stopping (the LAMA paper's is 5).
    tol : float, default=0.003
        Least decrease of the validation loss that counts as an improvement
        for early stopping: an epoch whose loss is not below the lowest so
        far by more than ``tol`` counts towards ``patience`` (scikit-learn's
        ``tol`` of its ``early_stopping`` estimators, on the loss). The weights
        kept are those of the lowest validation loss whatever ``tol``; ``0``
        counts every decrease.
    scoring : {"loss", "accuracy"}, default="loss"
        The hold-out score that early stopping follows (as ``scoring`` of
        scikit-learn's ``HistGradientBoostingClassifier``): ``"loss"``, the
        validation loss; ``"accuracy"``, the validation accuracy
        (``valid_acc``), which stops once the held-out predictions stop
        improving even while the loss still falls. ``tol`` is in the score's
        units; the weights kept are those of the best score (its first
        epoch).
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
        not average (one epoch, often of a few steps, per call), nor does a
        fit whose horizon is under one step; continued training
        (``warm_start``) starts a new average from the fitted weights.
    class_weight : dict, list of dict, "balanced" or None, default=None
        Weights of the classes in the loss, as in scikit-learn's linear
        models: a dict ``{label: weight}``, ``"balanced"`` for
        ``n_documents / (n_classes * np.bincount(y))``, or ``None`` for 1 each.
        Multiplied with ``sample_weight`` when both are given. With a 2-D
        ``y``, ``"balanced"`` balances each label's 1s and 0s (indicator
        matrix) or each task's classes over its labelled documents
        (multi-output), and a list holds one dict per column: ``{0: w0, 1:
        w1}`` per label, ``{label: weight}`` per task.
    calibration : {"temperature"} or None, default=None
        ``"temperature"`` divides the logits by temperatures fitted, after
        training, to minimise the log-loss of the validation split that ``fit``
        holds out (temperature scaling, reference [4]): one for a label per
        document, one for all labels of an indicator matrix, one per task. It
        changes ``predict_proba`` only, never ``predict`` (a positive
        temperature keeps every argmax and every sign); ``decision_function``
        stays the network's raw scores. It needs the held-out split, so
        ``early_stopping=True`` and enough documents, else ``fit`` raises a
        ValueError before training; ``partial_fit`` holds nothing out and
        resets ``temperature_`` to ``None``.
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
        before the suffix when absent: ``"run.safetensors"`` becomes
        ``"run-3f2a9c1b0d4e.safetensors"``), so the fits of a ``GridSearchCV`` never
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
        every CPU the process was given (``OMP_NUM_THREADS`` if set, else
        its CPU affinity) less those other work keeps busy when the call
        starts, where extra threads would spin waiting for each other:
        a worker of joblib's loky backend gets its share through
        ``OMP_NUM_THREADS``, a task of a Dask worker one, and fits that
        overlap in threads of one process divide the CPUs among them. A
        positive int asks for that many: 1 pins one core. A negative one
        counts from the given CPUs: -1 is all of them. See the user guide's
        "Scaling out" page.
    n_workers : int, default=1
        Processes that ``fit`` trains on (data parallelism over
        :mod:`torch.distributed`): each of ``k`` workers trains on its share
        of every batch, ``batch_size`` documents within ``max_batch_tokens``,
        and their gradients are averaged at every step, so that one step
        sees ``k`` times one worker's batch. ``fit`` starts them by forking
        this process (Linux), the torch threads divided among them; a
        negative value counts from the given CPUs (-1: one per CPU). In a
        script started by a launcher (``torchrun``) that initialised a
        process group, ``fit`` trains over the group's processes instead
        (each passing the whole training set or its own part) and
        ``n_workers`` must be 1. See the user guide's "Scaling out" page.
    max_batch_tokens : int, default=8192
        Budget of padded tokens (documents x longest length) of every batch,
        in training and inference; a longer document is a batch of its own.
        Memory grows linearly with it (the reliability page gives each
        model's bytes per token): raise it on a GPU with memory to spare.
    inference_batch_size : int, default=256
        Most documents per batch in ``predict``, ``predict_proba``,
        ``decision_function``, ``attention_weights`` and validation (at
        least ``batch_size``), within ``max_batch_tokens``.
        On the CPU, a batch of the prediction methods (not of validation) also
        holds at most 2,048 padded tokens, whose activations then stay in
        the processor's caches.
    verbose : int, default=0
        Above 0, print a progress bar and a per-epoch table of training
        loss/accuracy and validation loss/accuracy.
    random_state : int, RandomState instance or None, default=None
        Seeds initialisation, shuffling, dropout and the validation split. With
        an int, fits on the same data give the same model, whatever the order
        of the documents.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,) or list of ndarray
        Class labels; with an indicator matrix ``y``, the column indices
        ``arange(n_labels)``; with a multi-output ``y``, one array per task.
    target_encoder_ : object
        The encoding of ``y`` chosen in ``fit`` from its kind (one label per
        document, an indicator matrix, one column per task): it validates
        and encodes ``y``, gives the loss and turns the logits into scores,
        probabilities and labels.
    temperature_ : ndarray of shape (n_temperatures,) or None
        The temperatures of ``calibration="temperature"`` (one, or one per
        task), ``None`` without calibration.
    net_ : skorch.NeuralNetClassifier
        The trained skorch net; ``net_.history`` holds per-epoch metrics and
        ``net_.module_`` the torch network.
    inference_module_ : torch.nn.Module
        The module that ``predict``, ``predict_proba`` and
        ``decision_function`` run: ``net_.module_`` itself (FCSR has no
        folded inference form; see :class:`DuoClassifier`).
    n_epochs_ : int
        Epochs trained, over all ``fit`` calls that continued training
        (``warm_start``, ``partial_fit``).
    input_adapter_ : InputAdapter
        How ``X`` is read: the :class:`~sklearn_lama.InputAdapter` of its kind
        (``TokenSequences``, token ids, a 2-D or 3-D float array), holding
        what ``fit`` learned about it (vocabulary fingerprint and size, vector
        sizes); later inputs must match.
    n_features_in_ : int
        Number of tokens per document, when fitted on a plain array.
    checkpoint_path_ : str or None
        The file the last fit wrote its checkpoints to (``checkpoint``).

    References
    ----------
    .. [1] "Full-context semantic representation in sentence level" (the
       FCSR paper; authors as listed in its preprint).
    .. [2] Wang, S. and Manning, C. D. "Baselines and Bigrams: Simple, Good
       Sentiment and Topic Classification." ACL 2012 (the Naive Bayes
       log-count ratios of ``nb_unigram_weight`` and ``nb_bigram_weight``).
    .. [3] Polyak, B. T. and Juditsky, A. B. "Acceleration of Stochastic
       Approximation by Averaging." SIAM Journal on Control and Optimization
       30(4), 1992 (the weight average of ``ema_horizon``).
    .. [4] Guo, C., Pleiss, G., Sun, Y. and Weinberger, K. Q. "On Calibration
       of Modern Neural Networks." ICML 2017 (the temperature scaling of
       ``calibration``).

    Examples
    --------
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn_lama import FCSRClassifier, Word2VecVectorizer
    >>> docs = ["good great fine nice", "bad awful poor sad"] * 20
    >>> labels = ["pos", "neg"] * 20
    >>> pipe = make_pipeline(
    ...     Word2VecVectorizer(vector_size=16, min_count=1, random_state=0),
    ...     FCSRClassifier(alpha=0.5, random_state=0),
    ... ).fit(docs, labels)
    >>> pipe.predict(["great nice", "awful sad"]).tolist()
    ['pos', 'neg']
    """

    #: The paper's settings where the defaults differ (the library's additions
    #: off, see the user guide's "Paper-faithful settings"):
    #: ``clf.set_params(**clf.paper_parameters)``.
    paper_parameters = {
        **ADDITIONS_OFF,
    }

    # Padded tokens of a prediction batch on the CPU (BaseSequenceClassifier._inference_budget).
    _inference_tokens = 2048

    _parameter_constraints = {
        **BaseSequenceClassifier._parameter_constraints,
        "alpha": [Interval(Real, 0, 1, closed="left")],
        "learn_alpha": ["boolean"],
        "hidden_size": [Interval(Integral, 1, None, closed="left"), None],
        "pooling": [StrOptions({"attention", "mean"})],
        "dropout": [Interval(Real, 0, 1, closed="left")],
        "lr_schedule": [StrOptions({"paper"}), None],
        "context_window": [Interval(Integral, 1, None, closed="left"), None],
    }

    def __init__(
        self,
        alpha=0.2,
        *,
        learn_alpha=False,
        hidden_size=None,
        pooling="attention",
        dropout=0.3,
        lr_schedule=None,
        context_window=None,
        embedding_dim=100,
        freeze_embeddings=False,
        embedding_dropout=0.0,
        nb_unigram_weight=0.0,
        nb_bigram_weight=3.0,
        nb_folds=10,
        max_epochs=20,
        max_time=None,
        batch_size=32,
        optimizer="adam",
        lr=0.01,
        momentum=0.9,
        weight_decay=0.0,
        early_stopping=True,
        validation_fraction=0.1,
        patience=1,
        tol=0.003,
        scoring="loss",
        ema_horizon=0.5,
        class_weight=None,
        calibration=None,
        callbacks=None,
        warm_start=False,
        checkpoint=None,
        device="cpu",
        precision="32",
        torch_threads=None,
        n_workers=1,
        max_batch_tokens=_MAX_BATCH_TOKENS,
        inference_batch_size=INFERENCE_BATCH,
        verbose=0,
        random_state=None,
    ):
        self.alpha = alpha
        self.learn_alpha = learn_alpha
        self.hidden_size = hidden_size
        self.pooling = pooling
        self.dropout = dropout
        self.lr_schedule = lr_schedule
        self.context_window = context_window
        self.embedding_dim = embedding_dim
        self.freeze_embeddings = freeze_embeddings
        self.embedding_dropout = embedding_dropout
        self.nb_unigram_weight = nb_unigram_weight
        self.nb_bigram_weight = nb_bigram_weight
        self.nb_folds = nb_folds
        self.max_epochs = max_epochs
        self.max_time = max_time
        self.batch_size = batch_size
        self.optimizer = optimizer
        self.lr = lr
        self.momentum = momentum
        self.weight_decay = weight_decay
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.patience = patience
        self.tol = tol
        self.scoring = scoring
        self.ema_horizon = ema_horizon
        self.class_weight = class_weight
        self.calibration = calibration
        self.callbacks = callbacks
        self.warm_start = warm_start
        self.checkpoint = checkpoint
        self.device = device
        self.precision = precision
        self.torch_threads = torch_threads
        self.n_workers = n_workers
        self.max_batch_tokens = max_batch_tokens
        self.inference_batch_size = inference_batch_size
        self.verbose = verbose
        self.random_state = random_state

    def _check_params(self):
        if self.learn_alpha and self.alpha == 0:
            raise ValueError(
                "alpha must be > 0 with learn_alpha=True (it is learned through its "
                "logit); got alpha=0."
            )

    def _build_core(self, input_size, n_classes):
        return FCSRModule(
            input_size,
            n_classes,
            hidden_size=self.hidden_size,
            alpha=self.alpha,
            learn_alpha=self.learn_alpha,
            dropout=self.dropout,
            pooling=self.pooling,
            window=self.context_window,
        )

    def _attention_row_labels(self):
        return ["attention"]

    def _extra_callbacks(self):
        if self.lr_schedule is None:
            return []
        return [
            LRScheduler(
                policy=LambdaLR,
                lr_lambda=partial(fcsr_lr_lambda, max_epochs=self.max_epochs),
            )
        ]
