"""DuoClassifier: the estimator around :class:`~sklearn_lama.modules.DuoModule`."""

import math
from numbers import Integral, Real

from ..modules import DuoModule, TableStreams
from ..training._batching import MAX_BATCH_TOKENS, BatchBudget
from ..training._parameters import INFERENCE_BATCH
from ..utils._persistence import register
from ..utils._sklearn_compat import Interval, StrOptions
from ._base import BaseSequenceClassifier
from ._parameters import ADDITIONS_OFF

__all__ = ["DuoClassifier"]

# Default bytes that one attention tensor of an encoder layer (documents x
# n_heads x T x T float32) may take in a batch; a layer holds several at once
# (the reliability page gives the peak memory at this limit).
_ATTENTION_BYTES = 2**28


@register
class DuoClassifier(BaseSequenceClassifier):
    """Meta-embedding classifier: two embeddings of the same words attend to each other.

    With two embeddings ``S`` and ``P`` of every token (the first two tables of
    the input, e.g. from :class:`~sklearn_lama.MetaEmbeddingTransformer`),
    learned vectors ``w^S`` and ``w^P`` give ``a^P = softmax(w^S Sᵀ) P`` and
    ``a^S = softmax(w^P Pᵀ) S`` (Eq. 1-2 of Li et al., padding masked),
    fused as ``e = [a^P, a^S] W^O`` (Eq. 3) and classified by an output layer.
    Given one table, both roles use it (the diagonal of the paper's Table 2).
    With ``n_layers >= 1`` the two streams first pass through that many Duo
    Transformer encoder layers (Duo multi-head attention, Eq. 4-5, and Duo
    layer norm, Eq. 6).

    From the paper: ``d_ff=600``, Adam. See
    :class:`~sklearn_lama.modules.DuoModule` for ``attention_softmax`` and
    ``bias``, whose defaults (softmax kept, biases on) differ from the
    paper's. The embedding tables are fine-tuned by default. The
    documentation's results page has the comparisons behind these defaults.

    Parameters
    ----------
    d_ff : int, default=600
        Width of the fusion layer ``W^O`` (and of the encoder feed-forwards).
    n_layers : int, default=0
        Duo Transformer encoder layers before the head. Their self-attention
        needs memory that grows with the square of the document length:
        batches are cut so that one attention tensor (documents x ``n_heads``
        x T x T float32) stays within ``max_attention_bytes`` (256 MiB), and
        a document too long for that on its own (over 4096 tokens at
        ``n_heads=4``) raises a
        ``ValueError`` in ``fit`` and ``predict`` rather than exhausting
        memory; cut documents with ``Word2VecVectorizer(max_len=...)``. With
        ``n_layers=0`` memory is linear in the length.
    n_heads : int, default=4
        Heads of each encoder layer, whose attention width is the smallest
        multiple of ``n_heads`` at least as wide as the wider embedding. Unused
        when ``n_layers=0``.
    attention_softmax : bool, default=True
        Normalise the Eq. 1-2 scores with a softmax (the paper drops it).
    bias : bool, default=True
        Biases in the fusion and output layers (the paper has none).
    dropout : float, default=0.1
        Dropout on the fused vector and inside the encoder layers.
    positions : {"concat", "add"} or None, default="concat"
        Sinusoidal position encoding given to both embeddings before the
        encoder layers and the Eq. 1-3 head: ``"concat"`` appends a
        ``position_dim``-wide encoding, ``"add"`` adds one of the embedding's
        width as the Transformer does, ``None`` is the paper's order-blind
        classifier. Without positions the model cannot tell the columns of a
        plain 2-D float array apart (see
        :class:`~sklearn_lama.modules.DuoModule`).
    position_dim : int, default=4
        Width of the ``"concat"`` position encoding.
    max_attention_bytes : int, default=268435456
        Budget (256 MiB) of one attention tensor of an encoder layer
        (documents x ``n_heads`` x T x T float32) in a batch, when
        ``n_layers >= 1``: batches hold fewer documents to keep within it, and
        a document too long for it alone is refused. A layer holds several
        such tensors at once (the reliability page gives the peak memory);
        raise it on a GPU with memory to spare.
    embedding_dim : int, default=100
        Embedding size learned from scratch when ``X`` is an integer id array
        (unused otherwise: the tables or vectors of ``X`` set the size).
    freeze_embeddings : bool, default=False
        Keep the embedding tables fixed instead of fine-tuning them.
    embedding_dropout : float, default=0.5
        Dropout on each embedding stream's token vectors while training (the
        paper has none: 0), against fine-tuned vectors fitting a small training
        set; the results page compares values.
    nb_unigram_weight : float, default=3.0
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
    nb_bigram_weight : float, default=1.0
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
    batch_size : int, default=128
        Documents per training batch (batches also keep within a budget of
        padded tokens, so a batch of long documents holds fewer).
    optimizer : {"sgd", "adam"}, default="adam"
        ``"sgd"`` uses ``momentum``; the paper uses Adam.
    lr : float, default=0.002
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
    patience : int, default=2
        Epochs without improvement before stopping (the LAMA paper's is 5).
    tol : float, default=0.0
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
    max_batch_tokens : int, default=32768
        Budget of padded tokens (documents x longest length) of every batch,
        in training and inference; a longer document is a batch of its own.
        Memory grows linearly with it (the reliability page gives each
        model's bytes per token): raise it on a GPU with memory to spare.
    inference_batch_size : int, default=256
        Most documents per batch in ``predict``, ``predict_proba``,
        ``decision_function``, ``attention_weights`` and validation (at
        least ``batch_size``), within ``max_batch_tokens``.
        On the CPU, a batch of the prediction methods (not of validation) also
        holds at most 8,192 padded tokens, whose activations then stay in
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
        ``decision_function`` run, built from ``net_.module_``'s weights at
        the end of ``fit`` and ``partial_fit`` and when the estimator is
        loaded: without encoder layers and with ``positions`` ``"concat"`` or
        ``None``, its head folded into per-token terms
        (:class:`~sklearn_lama.modules.FoldedNetwork`, from
        :meth:`SequenceNetwork.fold <sklearn_lama.modules.SequenceNetwork.fold>`;
        the same logits to float32 rounding, faster), at ``precision="32"``;
        otherwise ``net_.module_`` itself. A folded form is a snapshot:
        weights changed in ``net_.module_`` by hand afterwards reach
        prediction once it is built again,
        ``clf.inference_module_ = clf.net_.module_.fold()``.
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
    .. [1] Li, Q., Jiang, X., Xia, J. and Li, J. "Meta-Embeddings Based on
       Self-Attention."
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
    >>> from sklearn_lama import DuoClassifier, MetaEmbeddingTransformer, Word2VecVectorizer
    >>> docs = ["good great fine nice", "bad awful poor sad"] * 20
    >>> labels = ["pos", "neg"] * 20
    >>> pipe = make_pipeline(
    ...     MetaEmbeddingTransformer([
    ...         ("cbow", Word2VecVectorizer(vector_size=8, sg=0, random_state=0)),
    ...         ("skipgram", Word2VecVectorizer(vector_size=16, sg=1, random_state=0)),
    ...     ], min_count=1),
    ...     DuoClassifier(random_state=0),
    ... ).fit(docs, labels)
    >>> pipe.predict(["great nice", "awful sad"]).tolist()
    ['pos', 'neg']
    """

    #: The paper's settings where the defaults differ (the library's additions
    #: off, see the user guide's "Paper-faithful settings"):
    #: ``clf.set_params(**clf.paper_parameters)``.
    paper_parameters = {
        **ADDITIONS_OFF,
        "attention_softmax": False,
        "bias": False,
        "positions": None,
    }

    # Padded tokens of a prediction batch on the CPU (BaseSequenceClassifier._inference_budget).
    _inference_tokens = 8192

    _parameter_constraints = {
        **BaseSequenceClassifier._parameter_constraints,
        "d_ff": [Interval(Integral, 1, None, closed="left")],
        "n_layers": [Interval(Integral, 0, None, closed="left")],
        "n_heads": [Interval(Integral, 1, None, closed="left")],
        "attention_softmax": ["boolean"],
        "bias": ["boolean"],
        "dropout": [Interval(Real, 0, 1, closed="left")],
        "positions": [StrOptions({"concat", "add"}), None],
        "position_dim": [Interval(Integral, 1, None, closed="left")],
        "max_attention_bytes": [Interval(Integral, 1, None, closed="left")],
    }

    def __init__(
        self,
        d_ff=600,
        *,
        n_layers=0,
        n_heads=4,
        attention_softmax=True,
        bias=True,
        dropout=0.1,
        positions="concat",
        position_dim=4,
        max_attention_bytes=_ATTENTION_BYTES,
        embedding_dim=100,
        freeze_embeddings=False,
        embedding_dropout=0.5,
        nb_unigram_weight=3.0,
        nb_bigram_weight=1.0,
        nb_folds=10,
        max_epochs=20,
        max_time=None,
        batch_size=128,
        optimizer="adam",
        lr=2e-3,
        momentum=0.9,
        weight_decay=0.0,
        early_stopping=True,
        validation_fraction=0.1,
        patience=2,
        tol=0.0,
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
        max_batch_tokens=MAX_BATCH_TOKENS,
        inference_batch_size=INFERENCE_BATCH,
        verbose=0,
        random_state=None,
    ):
        self.d_ff = d_ff
        self.n_layers = n_layers
        self.n_heads = n_heads
        self.attention_softmax = attention_softmax
        self.bias = bias
        self.dropout = dropout
        self.positions = positions
        self.position_dim = position_dim
        self.max_attention_bytes = max_attention_bytes
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

    def _combination(self):
        # The two attention roles read the tables as separate streams.
        return TableStreams()

    def _batch_budget(self):
        # With encoder layers, one attention tensor per layer (n_heads float32
        # scores per token pair) must keep within max_attention_bytes.
        max_pairs = self.max_attention_bytes // (4 * self.n_heads) if self.n_layers else None
        return BatchBudget(self.max_batch_tokens, max_pairs)

    def _check_batches(self, batches, budget):
        if budget.max_pairs is None:
            return
        longest = int(batches.lengths.max(initial=0))
        if longest**2 > budget.max_pairs:
            limit = math.isqrt(budget.max_pairs)
            raise ValueError(
                f"X holds a document of {longest} tokens, too long for DuoClassifier with "
                f"n_layers={self.n_layers}: self-attention needs memory that grows with the "
                "square of the length, and one attention tensor (n_heads x T x T float32, "
                f"{4 * self.n_heads * longest**2 / 2**20:.1f} MiB for this document) is "
                f"limited to max_attention_bytes={self.max_attention_bytes} "
                f"({self.max_attention_bytes / 2**20:g} MiB), i.e. {limit} tokens at "
                f"n_heads={self.n_heads}. Cut documents with "
                f"Word2VecVectorizer(max_len={limit}), raise max_attention_bytes (memory "
                "permitting), or use n_layers=0, whose memory is linear in the length."
            )

    def _attention_row_labels(self):
        # Eq. 1 scores S and pools P into a^P; Eq. 2 the other way round.
        return ["a^P (scores on S)", "a^S (scores on P)"]

    def _build_core(self, input_size, n_classes):
        if len(input_size) > 2:
            raise ValueError(
                f"DuoClassifier uses one or two embedding tables, but X carries "
                f"{len(input_size)}; give MetaEmbeddingTransformer two sources."
            )
        return DuoModule(
            tuple(input_size),
            n_classes,
            d_ff=self.d_ff,
            n_layers=self.n_layers,
            n_heads=self.n_heads,
            attention_softmax=self.attention_softmax,
            dropout=self.dropout,
            bias=self.bias,
            positions=self.positions,
            position_dim=self.position_dim,
        )
