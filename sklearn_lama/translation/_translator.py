"""DuoTranslator: the Duo Transformer sequence-to-sequence model as a scikit-learn estimator."""

import time
import warnings
from functools import partial
from numbers import Integral, Real

import numpy as np
import torch
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted
from skorch.callbacks import Callback

from ..base._trained import TrainedMixin
from ..modules import DuoTranslationModule
from ..text._sequences import TokenSequences
from ..training._batching import PairBatches
from ..training._callbacks import checkpoint_file
from ..training._driver import continues, fitting
from ..training._net import training_state
from ..training._parameters import TRAINING_CONSTRAINTS
from ..training._seq2seq import make_translation_net, schedule_callback
from ..training._splits import RowSplit, hold_out
from ..utils._persistence import register
from ..utils._shards import joined_shards
from ..utils._sklearn_compat import Interval, StrOptions, _fit_context
from ..utils._state import PortableState, proto_array
from ..utils._threads import resolve_threads, torch_threads
from ._decoding import beam_search, greedy_search
from ._subword_vectors import start_from_word2vec
from ._subwords import (
    BOS_ID,
    EOS_ID,
    SubwordModel,
    normalize_spaces,
    optional_import,
    protect_placeholders,
    restore_placeholders,
)

__all__ = ["DuoTranslator"]

#: Most target subwords of a translation with ``max_length=None``: a model that never ends a
#: translation then decodes 512 steps at most, whatever the source.
MAX_OUTPUT_LENGTH = 512


@register
class DuoTranslator(TrainedMixin, PortableState, BaseEstimator):
    """Duo Transformer translator (meta-embedding encoder-decoder) for lists of sentences.

    An encoder-decoder Transformer whose tokens are read through two embedding
    streams on both sides: Duo attention (Eq. 4-5) in the encoder, a Duo
    decoder whose cross-attention takes keys and values from different
    streams (§3.3), the Duo layer norm (Eq. 6) between the decoder's masked
    attention and its feed-forward (§3.4), and an output layer tied to the
    target duo embeddings through a learned projection (fusion, §3.3). Each
    change is a flag; with all four off the model is the vanilla Transformer
    of the same width, the paper's baseline. See
    :class:`~sklearn_lama.modules.DuoTranslationModule`.

    ``X`` is a list of source sentences, or the output of a
    :class:`~sklearn_lama.MetaEmbeddingTransformer` (the source streams then
    start from its first two tables, each followed by a learned projection to
    ``d_model``, as the paper maps GloVe 300d to 512). ``y`` is a list of
    target sentences. Source strings and targets are segmented into
    byte-pair-encoded subwords learned in ``fit`` (SentencePiece, offline;
    unseen characters fall back to bytes, so the vocabulary is open); white
    space is normalised to single spaces. Format placeholders (``%s``,
    ``%(name)s``, ``%1$d``, ``{name}``, ``%1``) of a source string become
    atomic tokens that the translation carries back unchanged (only with
    string input: a :class:`TokenSequences` no longer holds them). A lone
    surrogate (which UTF-8 cannot encode) reads as U+FFFD. Every
    training pair needs text on both sides: an empty (or white-space only)
    source or target in ``fit`` raises ``ValueError`` naming it; an empty
    source in ``predict`` translates to an empty string.

    Training goes through the same skorch machinery as the classifiers
    (device, precision, threads, callbacks, progress, checkpoints, early
    stopping, ``warm_start``): teacher forcing, cross-entropy with label
    smoothing, Adam (β = 0.9, 0.98, ε = 1e-9) with the Transformer schedule
    (linear warm-up, then inverse square root of the update count, stepped
    after every batch), batches of similar-length pairs within
    ``max_batch_tokens`` padded tokens, early stopping on the validation loss
    (the best epoch's weights are kept). Decoding: greedy (``beam_size=1``)
    or beam search with the GNMT length penalty; sentences are decoded in
    groups of equal source length, so no sentence is ever padded and a
    translation does not depend on the other sentences given.

    Parameters
    ----------
    d_model : int, default=256
        Width of each embedding stream and of every layer.
    n_heads : int, default=4
        Attention heads; must divide ``d_model``.
    d_ff : int, default=1024
        Feed-forward width.
    n_layers : int, default=3
        Encoder layers and decoder layers (each).
    dropout : float, default=0.1
        Dropout rate of the embeddings and of every attention and feed-forward
        sub-layer, as in the Transformer.
    meta_embeddings : bool, default=True
        Two embedding streams instead of one, on both sides: every encoder
        self-attention and decoder cross-attention is Duo attention (Eq. 4-5).
        The first step of the paper's ablation (Table 6).
    weight_sharing : bool, default=True
        In every attention, one stream's key and value projections are one
        matrix (§3.2.1). The second step of Table 6.
    duo_norm : bool, default=True
        In the decoder, the Duo layer norm (Eq. 6) between the masked
        attention and the feed-forward (§3.4); needs ``meta_embeddings``.
        The third step of Table 6.
    fusion : bool, default=True
        The output layer is tied to the target embeddings through a learned
        projection of their concatenation (§3.3); off, to the embeddings
        themselves. The last step of Table 6.
    embedding_init : {"auto", "word2vec", "random"}, default="auto"
        How the subword embedding tables start. ``"word2vec"``: from word2vec
        vectors (gensim) learned in ``fit`` on the training pairs' subwords,
        one model per stream and side: CBOW for the first stream, skip-gram
        for the second. The two streams are then two separately trained
        embeddings of the same tokens, as the paper's meta-embeddings are
        (it pairs pretrained GloVe tables); from two random tables they
        differ only by their random start. ``"random"``: normal, as in the
        vanilla Transformer. ``"auto"``: ``"word2vec"`` with
        ``meta_embeddings``, else ``"random"``, so that all flags off is the
        vanilla Transformer. The vectors are rescaled to a quarter of the
        spread of the random start; their training time counts in
        ``max_time``. A source read from a
        :class:`~sklearn_lama.MetaEmbeddingTransformer` keeps its tables.
    vocab_size : int, default=8000
        Subwords per side (a soft limit: fewer on a small corpus).
    label_smoothing : float, default=0.1
        Label smoothing of the training loss (the validation loss has none).
    lr : float, default=0.001
        Peak learning rate, reached at the end of the warm-up.
    warmup_steps : int, default=1000
        Updates of the linear warm-up.
    max_batch_tokens : int, default=4096
        Padded tokens (sentences x longest of source and target) per batch,
        in training and validation; also bounds the sentences x beams x
        length decoded at once in ``predict``.
    max_epochs : int, default=30
        Maximum passes over the training pairs.
    max_time : float or None, default=None
        Training budget of a ``fit`` in seconds, checked after every training
        batch: the epoch then ends there (it is still validated and
        recorded) and training stops. The word2vec starting vectors and
        validation count; what callbacks do at the end of an epoch (e.g. a
        BLEU measurement) does not. ``history_`` records the time so far
        as ``seconds``.
    early_stopping : bool, default=True
        Hold out ``validation_fraction`` of the pairs (at random) and keep
        the weights of the epoch with the lowest validation loss, stopping
        after ``patience`` epochs without improvement. Skipped, by the rule
        of every estimator of the package, when fewer than 10 pairs would be
        held out or fewer than 2 left to train on. The subwords and word2vec
        vectors are learned on the other pairs only.
    validation_fraction : float, default=0.1
        Share of the pairs held out for early stopping.
    patience : int, default=3
        Epochs without a lower validation loss before stopping.
    tol : float, default=0.0
        Least decrease of the validation loss that counts as an improvement
        for early stopping: an epoch whose loss is not below the lowest so
        far by more than ``tol`` counts towards ``patience`` (scikit-learn's
        ``tol`` of its ``early_stopping`` estimators, on the loss). The weights
        kept are those of the lowest validation loss whatever ``tol``; ``0``
        counts every decrease.
    beam_size : int, default=4
        1 for greedy decoding.
    length_penalty : float, default=0.6
        Exponent of the GNMT length penalty in beam search.
    max_length : int or None, default=None
        Most target subwords per translation; ``None``: twice the source
        length plus 10, at most 512. Decoding stops there whatever the model
        does (a model that never ends a translation costs the most).
    max_source_length : int, default=512
        Most subwords (or tokens of a ``TokenSequences``) of a source that
        ``predict`` reads: a longer source is cut to its first
        ``max_source_length``, with a warning. A source string is cut to its
        first ``max_source_length + 1`` words before it is segmented (a
        subword never spans white space), so what lies beyond is never read.
        With ``max_length`` this bounds the time and memory of every
        translation: a step of decoding costs the same products whatever the
        length of the translation so far (the decoder's keys and values of
        earlier positions are kept), plus one attention weight per earlier
        position, and a sentence leaves its batch when it ends.
    callbacks : list or None, default=None
        skorch callbacks added to the net, as instances or ``(name,
        callback)`` pairs, e.g. one whose ``on_epoch_end`` measures BLEU per
        epoch (it may call ``predict`` on the translator in training). They
        are code, so :func:`~sklearn_lama.save_weights` does not store them:
        a loaded estimator has ``callbacks=None``.
    warm_start : bool, default=False
        When the translator is already fitted, ``fit`` continues training the
        current network, weights, optimizer state and learning-rate schedule,
        for ``max_epochs`` more epochs instead of starting over. The subword
        vocabularies of the first fit are kept (``vocab_size`` and
        ``embedding_init`` no longer matter), ``X`` must be of the kind seen
        then, and architecture parameters must not change. Early stopping
        and the time budget start afresh on each call.
    checkpoint : str or path-like, default=None
        File name for checkpoints in the format of
        :func:`~sklearn_lama.save_weights`, written after each epoch that
        lowers the validation loss (after every epoch without validation),
        as the classifiers write theirs: ``{fit}`` in the name (inserted
        before the suffix when absent) becomes 12 hex digits identifying the
        parameters and the training pairs, ``checkpoint_path_`` names the
        file, and ``load_weights(path).set_params(warm_start=True).fit(X,
        y)`` resumes. A path that cannot be written raises ``ValueError``
        before training.
    device : str or torch.device, default="cpu"
        Where the network trains and translates: ``"cpu"``, ``"cuda"``,
        ``"cuda:N"`` or ``"mps"``, where available.
    precision : {"32", "bf16", "16-mixed"}, default="32"
        Arithmetic of the forward pass, in training and decoding. ``"32"``:
        float32 throughout. ``"bf16"``: :func:`torch.autocast` to bfloat16
        (on the CPU, and on GPUs that support it); ``"16-mixed"``: autocast
        to float16 with gradient scaling, CUDA only (elsewhere it raises
        ``ValueError`` before training). Weights, optimizer state, loss and
        decoding scores stay float32.
    torch_threads : int or None, default=None
        torch's intra-op threads during ``fit``, ``predict`` and ``score``;
        the caller's setting is restored afterwards. ``None`` means every
        CPU the process was given, divided among fits that overlap in
        threads of one process; a positive int asks for that many (1 pins
        one core); a negative one counts from the given CPUs: -1 is all of
        them.
    n_workers : int, default=1
        Processes that ``fit`` trains on (data parallelism over
        :mod:`torch.distributed`): each of ``k`` workers trains on its share
        of every batch, within ``max_batch_tokens`` padded tokens, and
        their gradients are averaged at every step, so that one step
        sees ``k`` times one worker's batch. ``fit`` starts them by forking
        this process (Linux), the torch threads divided among them; a
        negative value counts from the given CPUs (-1: one per CPU). In a
        script started by a launcher (``torchrun``) that initialised a
        process group, ``fit`` trains over the group's processes instead
        (each passing the whole training set or its own part) and
        ``n_workers`` must be 1. See the user guide's "Scaling out" page.
    verbose : int, default=0
        Above 0, print a progress bar and a per-epoch table of training
        loss, validation loss and perplexity, and time.
    random_state : int, RandomState instance or None, default=None
        Seeds the validation split, the word2vec vectors, the
        initialisation, dropout and batch order.

    Attributes
    ----------
    net_ : TranslationNet
        The trained skorch net (:class:`~sklearn_lama.training._seq2seq.TranslationNet`).
    module_ : DuoTranslationModule
        The network, ``net_.module_``.
    history_ : skorch.history.History
        ``net_.history``: one record per epoch (over every ``fit`` that
        continued training) with ``epoch``, ``train_loss`` (label-smoothed),
        ``valid_loss`` and ``valid_perplexity`` (unsmoothed, per target
        token), ``train_batch_count`` (updates), ``seconds`` (training time
        of the ``fit`` so far, see ``max_time``) and skorch's ``dur``.
    source_subwords_, target_subwords_ : SubwordModel
        ``source_subwords_`` is ``None`` when ``X`` was a :class:`TokenSequences`.
    vocabulary_id_ : str or None
        The vocabulary of a :class:`TokenSequences` source (else ``None``).
    best_epoch_ : int
        The epoch whose weights the translator holds.
    n_parameters_ : int
        Parameters of the network.
    checkpoint_path_ : str or None
        The file the last fit wrote its checkpoints to (``checkpoint``).

    References
    ----------
    .. [1] Li, Q., Jiang, X., Xia, J., Li, J. "Meta-embeddings based on
       self-attention", 2022.
    .. [2] Vaswani, A. et al. "Attention is all you need", NeurIPS 2017.

    Examples
    --------
    >>> from sklearn_lama import DuoTranslator
    >>> en = ["open the file", "close the file", "open the window", "close the window"] * 8
    >>> fr = ["ouvrir le fichier", "fermer le fichier", "ouvrir la fenêtre",
    ...       "fermer la fenêtre"] * 8
    >>> mt = DuoTranslator(d_model=32, n_heads=2, d_ff=64, n_layers=1, vocab_size=400,
    ...                    max_epochs=3, early_stopping=False, random_state=0).fit(en, fr)
    >>> mt.predict(["open the file"]).shape
    (1,)
    """

    _parameter_constraints = {
        **TRAINING_CONSTRAINTS,
        "d_model": [Interval(Integral, 1, None, closed="left")],
        "n_heads": [Interval(Integral, 1, None, closed="left")],
        "d_ff": [Interval(Integral, 1, None, closed="left")],
        "n_layers": [Interval(Integral, 0, None, closed="left")],
        "dropout": [Interval(Real, 0, 1, closed="left")],
        "meta_embeddings": ["boolean"],
        "weight_sharing": ["boolean"],
        "duo_norm": ["boolean"],
        "fusion": ["boolean"],
        "embedding_init": [StrOptions({"auto", "word2vec", "random"})],
        # SentencePiece needs room for the 256 byte pieces, the reserved ids and the placeholders.
        "vocab_size": [Interval(Integral, 300, None, closed="left")],
        "label_smoothing": [Interval(Real, 0, 1, closed="left")],
        "warmup_steps": [Interval(Integral, 1, None, closed="left")],
        "beam_size": [Interval(Integral, 1, None, closed="left")],
        "length_penalty": [Interval(Real, 0, None, closed="left")],
        "max_length": [Interval(Integral, 1, None, closed="left"), None],
        "max_source_length": [Interval(Integral, 1, None, closed="left")],
    }

    def __init__(
        self,
        *,
        d_model=256,
        n_heads=4,
        d_ff=1024,
        n_layers=3,
        dropout=0.1,
        meta_embeddings=True,
        weight_sharing=True,
        duo_norm=True,
        fusion=True,
        embedding_init="auto",
        vocab_size=8000,
        label_smoothing=0.1,
        lr=1e-3,
        warmup_steps=1000,
        max_batch_tokens=4096,
        max_epochs=30,
        max_time=None,
        early_stopping=True,
        validation_fraction=0.1,
        patience=3,
        tol=0.0,
        beam_size=4,
        length_penalty=0.6,
        max_length=None,
        max_source_length=512,
        callbacks=None,
        warm_start=False,
        checkpoint=None,
        device="cpu",
        precision="32",
        torch_threads=None,
        n_workers=1,
        verbose=0,
        random_state=None,
    ):
        self.d_model = d_model
        self.n_heads = n_heads
        self.d_ff = d_ff
        self.n_layers = n_layers
        self.dropout = dropout
        self.meta_embeddings = meta_embeddings
        self.weight_sharing = weight_sharing
        self.duo_norm = duo_norm
        self.fusion = fusion
        self.embedding_init = embedding_init
        self.vocab_size = vocab_size
        self.label_smoothing = label_smoothing
        self.lr = lr
        self.warmup_steps = warmup_steps
        self.max_batch_tokens = max_batch_tokens
        self.max_epochs = max_epochs
        self.max_time = max_time
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.patience = patience
        self.tol = tol
        self.beam_size = beam_size
        self.length_penalty = length_penalty
        self.max_length = max_length
        self.max_source_length = max_source_length
        self.callbacks = callbacks
        self.warm_start = warm_start
        self.checkpoint = checkpoint
        self.device = device
        self.precision = precision
        self.torch_threads = torch_threads
        self.n_workers = n_workers
        self.verbose = verbose
        self.random_state = random_state

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False
        tags.input_tags.string = True
        tags.target_tags.required = True
        tags.non_deterministic = str(self.device) != "cpu"
        return tags

    @property
    def module_(self):
        return self.net_.module_

    @property
    def history_(self):
        return self.net_.history

    # ----------------------------------------------------------------------- input checks
    @staticmethod
    def _check_strings(values, name):
        if isinstance(values, str) or not hasattr(values, "__len__"):
            raise TypeError(f"{name} must be a list of strings, got {type(values).__name__}.")
        values = list(values)
        for i, value in enumerate(values):
            if not isinstance(value, str):
                raise TypeError(
                    f"{name}[{i}] is {value!r} ({type(value).__name__}); {name} must "
                    "hold strings only."
                )
        return values

    def _check_X(self, X, fitted):
        """``X`` as strings or a :class:`TokenSequences`; when ``fitted``, of the kind seen."""
        if isinstance(X, TokenSequences):
            if fitted:
                if self.source_subwords_ is not None:
                    raise TypeError(
                        "X is a TokenSequences but this translator was fitted on "
                        "strings; pass strings."
                    )
                if X.vocabulary_id != self.vocabulary_id_:
                    raise ValueError(
                        "X was built over another vocabulary than the one seen in "
                        "fit; use the same MetaEmbeddingTransformer."
                    )
            return X
        X = self._check_strings(X, "X")
        if fitted and self.source_subwords_ is None:
            raise TypeError(
                "this translator was fitted on TokenSequences (e.g. from a "
                "MetaEmbeddingTransformer); pass the same kind of input."
            )
        return X

    def _check_pairs(self, X, y):
        """``X`` and ``y`` as training pairs, or an error naming what is wrong."""
        y = self._check_strings(y, "y")
        if len(X) != len(y):
            raise ValueError(f"X and y must have the same length, got {len(X)} and {len(y)}.")
        if not len(y):
            raise ValueError("X and y are empty: fit needs at least one sentence pair.")
        if isinstance(X, TokenSequences):
            empty = np.flatnonzero(X.lengths == 0)
            if len(empty):
                raise ValueError(
                    f"X[{empty[0]}] has no tokens: every training pair needs a source sentence."
                )
        sides = [("y", y)] if isinstance(X, TokenSequences) else [("X", X), ("y", y)]
        for name, texts in sides:
            for i, text in enumerate(texts):
                if not text.strip():
                    raise ValueError(
                        f"{name}[{i}] is {text!r}: every training pair needs a source and a "
                        "target sentence; leave out the pairs with an empty side."
                    )
        return y

    def _sources(self, X, max_words=None):
        """Source subword ids (placeholders protected) and, for strings, their placeholders.

        Strings are returned as text to segment; with ``max_words``, only their first
        ``max_words`` words (after the placeholders became tokens). Subwords never span white
        space and every word has at least one, so the first ``max_words`` subwords of the cut
        text are those of the whole text: what lies beyond is never segmented.
        """
        if isinstance(X, TokenSequences):
            return [X.document(i).astype(np.int64) for i in range(len(X))], None
        masked, slots = (
            zip(*(protect_placeholders(normalize_spaces(x)) for x in X)) if X else ((), ())
        )
        if max_words is not None:
            masked = [" ".join(text.split(" ", max_words)[:max_words]) for text in masked]
        return masked, list(slots)

    # ----------------------------------------------------------------------- fit
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Learn subwords, then train the model on the pairs ``(X[i], y[i])``.

        With ``warm_start=True`` and a fitted translator, training continues
        from the current weights, optimizer state and schedule instead.

        Parameters
        ----------
        X : list of str, or TokenSequences
            Source sentences.
        y : list of str
            Their translations.

        Returns
        -------
        self : DuoTranslator
        """
        return self._fit(X, y)

    def _fit(self, X, y):
        if self.d_model % self.n_heads:
            raise ValueError(f"n_heads={self.n_heads} must divide d_model={self.d_model}.")
        config = self._training_config()
        resume = continues(config, hasattr(self, "net_"))
        # Under torchrun, ranks that pass different parts of the pairs train on them all.
        (X, y), _ = joined_shards((X, y), ("X", "y"))
        with fitting(config) as seed:
            X = self._check_X(X, fitted=resume)
            y = self._check_pairs(X, y)
            split = hold_out(config, len(y), seed)
            train_rows = np.arange(len(y)) if split is None else np.sort(split.train_rows)
            sources, slots = self._sources(X)
            targets = [normalize_spaces(t) for t in y]
            if slots is not None:
                targets = [protect_placeholders(t, s)[0] for t, s in zip(targets, slots)]
            if not resume:
                self._learn_subwords(
                    X, [sources[i] for i in train_rows], [targets[i] for i in train_rows]
                )
            src_ids = sources if slots is None else self.source_subwords_.encode(sources)
            tgt_ids = self.target_subwords_.encode(targets)
            pairs = PairBatches(
                src_ids, [np.concatenate([[BOS_ID], t, [EOS_ID]]) for t in tgt_ids]
            )
            if split is not None:
                split = RowSplit(train_rows, split.valid_rows).by_length(pairs.lengths)
            tables = X.tables if isinstance(X, TokenSequences) else None
            if resume:
                # Only the shapes matter: the trained weights are restored.
                src_vocab = self.module_.src_embeddings[0].num_embeddings
            else:
                src_vocab = len(self.source_subwords_) if tables is None else X.vocabulary_size

            def build_module():
                module = self._build_module(src_vocab, tables)
                if resume:
                    return module, 0.0
                return module, self._start_embeddings(module, src_ids, tgt_ids, train_rows, seed)

            checkpoint = checkpoint_file(config, *_data_arrays(X), *_data_arrays(y))
            steps = _updates(self.net_.history) if resume else 0
            result = self._train_net(
                pairs,
                None,
                config=config,
                seed=seed,
                resume=resume,
                checkpoint=checkpoint,
                build_module=build_module,
                split=split,
                callbacks=[
                    schedule_callback(self.warmup_steps, steps),
                    _OnTrainBegin(self._translate_with),
                ],
            )
        self.net_ = result.net
        self.checkpoint_path_ = checkpoint
        self.best_epoch_ = result.best_epoch
        self.n_parameters_ = sum(p.numel() for p in self.net_.module_.parameters())
        self._warn_if_interrupted(result, "fit", f"the weights of epoch {self.best_epoch_}")
        return self

    def _translate_with(self, net):
        """Translate with ``net``: the net in training, so that callbacks may translate."""
        self.net_ = net

    def _make_net(self, module, config, split, callbacks, device):
        """The skorch net that trains (or runs) ``module`` with the current parameters."""
        return make_translation_net(
            module, config, split, callbacks, device, label_smoothing=self.label_smoothing
        )

    def _learn_subwords(self, X, train_sources, train_targets):
        if isinstance(X, TokenSequences):
            self.source_subwords_ = None
            self.vocabulary_id_ = X.vocabulary_id
        else:
            self.source_subwords_ = SubwordModel(train_sources, self.vocab_size)
            self.vocabulary_id_ = None
        self.target_subwords_ = SubwordModel(train_targets, self.vocab_size)

    def _start_embeddings(self, module, src_ids, tgt_ids, train, seed):
        """Start the subword tables from word2vec vectors (``embedding_init``); seconds spent."""
        auto = self.embedding_init == "auto"
        if not (self.meta_embeddings if auto else self.embedding_init == "word2vec"):
            return 0.0
        start = time.perf_counter()
        sides = [(module.tgt_embeddings, tgt_ids)]
        if self.source_subwords_ is not None:
            sides.append((module.src_embeddings, src_ids))
        for embeddings, ids in sides:
            # A quarter of the random start's spread (chosen on validation
            # perplexity; see the Translation page).
            start_from_word2vec(
                embeddings, [ids[i] for i in train], 0.25 * self.d_model**-0.5, seed
            )
        return time.perf_counter() - start

    # ----------------------------------------------------------------------- predict
    def predict(self, X):
        """Translate.

        Parameters
        ----------
        X : list of str, or TokenSequences
            Source sentences, of the kind seen in ``fit``.

        Returns
        -------
        ndarray of str (dtype object), shape (n_sentences,)
        """
        check_is_fitted(self, "net_")
        X = self._check_X(X, fitted=True)
        # One word more than max_source_length: enough to tell a source that is too long.
        sources, slots = self._sources(X, max_words=self.max_source_length + 1)
        src_ids = sources if slots is None else self.source_subwords_.encode(sources)
        with torch_threads(resolve_threads(self.torch_threads)):
            out = self._decode(self._cut(src_ids))
        texts = self.target_subwords_.decode(out) if out else []
        if slots is not None:
            texts = [restore_placeholders(t, s) for t, s in zip(texts, slots)]
        else:
            texts = [normalize_spaces(t) for t in texts]
        return np.array(texts, dtype=object)

    def _cut(self, src_ids):
        """The sources, each cut to ``max_source_length`` ids (with a warning)."""
        long = [i for i, ids in enumerate(src_ids) if len(ids) > self.max_source_length]
        if long:
            warnings.warn(
                f"{len(long)} source(s) (the first: X[{long[0]}]) are longer than "
                f"max_source_length={self.max_source_length} subwords; only their first "
                "max_source_length subwords are translated.",
                UserWarning,
                stacklevel=3,
            )
        return [ids[: self.max_source_length] for ids in src_ids]

    def _decode(self, src_ids):
        """Target ids of each source; an empty source gets none."""
        net = self.net_
        module = net.module_.eval()
        lengths = np.array([len(s) for s in src_ids], dtype=np.int64)
        out = [[] for _ in src_ids]
        for length in np.unique(lengths[lengths > 0]):
            group = np.flatnonzero(lengths == length)
            limit = self.max_length or min(2 * int(length) + 10, MAX_OUTPUT_LENGTH)
            width = max(int(length), limit)
            # Memory grows with sentences x beams x (source + target length).
            per_batch = max(1, self.max_batch_tokens // (self.beam_size * width))
            for start in range(0, len(group), per_batch):
                index = group[start : start + per_batch]
                # Sentences of equal length: no padding.
                src = torch.from_numpy(np.stack([src_ids[i] for i in index])).to(net.device)
                with net.autocast():
                    if self.beam_size == 1:
                        ids = greedy_search(module, src, limit)
                    else:
                        ids = beam_search(module, src, limit, self.beam_size, self.length_penalty)
                for i, row in zip(index, ids):
                    out[i] = row
        return out

    def score(self, X, y):
        """Corpus BLEU (sacrebleu, default 13a tokenisation) of ``predict(X)`` against ``y``.

        Parameters
        ----------
        X : list of str, or TokenSequences
        y : list of str
            One reference translation per sentence.

        Returns
        -------
        float
            BLEU in [0, 100]; higher is better.
        """
        y = self._check_strings(y, "y")
        hypotheses = list(self.predict(X))
        if len(hypotheses) != len(y):
            raise ValueError(
                f"X and y must have the same length, got {len(hypotheses)} and {len(y)}."
            )
        return float(optional_import("sacrebleu").corpus_bleu(hypotheses, [y]).score)

    # ----------------------------------------------------------------------- persistence
    def _build_module(self, src_vocab, tables):
        """The network of the current parameters, for ``src_vocab`` source ids."""
        return DuoTranslationModule(
            src_vocab,
            len(self.target_subwords_),
            d_model=self.d_model,
            n_heads=self.n_heads,
            d_ff=self.d_ff,
            n_layers=self.n_layers,
            dropout=self.dropout,
            meta_embeddings=self.meta_embeddings,
            weight_sharing=self.weight_sharing,
            duo_norm=self.duo_norm,
            fusion=self.fusion,
            src_tables=tables,
        )

    def _export_state(self):
        """The fitted state for :func:`~sklearn_lama.save_weights`: plain values and arrays."""
        return self._fitted_state(self.net_, self.best_epoch_, self.checkpoint_path_)

    def _fitted_state(self, net, best_epoch, checkpoint_path):
        """The state of :meth:`_export_state`, of ``net``, ``best_epoch`` and ``checkpoint_path``.

        A checkpoint written in training (``best_epoch=None``) holds the
        weights of the epoch just ended.
        """
        return {
            "target_subwords": proto_array(self.target_subwords_),
            "source_subwords": proto_array(self.source_subwords_),
            "vocabulary_id": self.vocabulary_id_,
            "best_epoch": best_epoch or len(net.history),
            "checkpoint_path": checkpoint_path,
            **training_state(net),
        }

    def _import_state(self, state):
        """Become the fitted translator that :meth:`_export_state` described."""

        def model(value):
            return SubwordModel.from_proto(bytes(np.asarray(value, dtype=np.uint8).tobytes()))

        self.target_subwords_ = model(state["target_subwords"])
        self.source_subwords_ = (
            None if state["source_subwords"] is None else model(state["source_subwords"])
        )
        self.vocabulary_id_ = state["vocabulary_id"]
        self.checkpoint_path_ = state["checkpoint_path"]
        weights = state["network"]
        tables = None
        if self.source_subwords_ is None:
            # Only the shapes matter: the trained weights are restored below.
            tables = [
                weights[f"src_embeddings.{i}.weight"]
                for i in range(2 if self.meta_embeddings else 1)
            ]
        source_rows = weights["src_embeddings.0.weight"].shape[0]
        self.net_ = self._restore_net(partial(self._build_module, source_rows, tables), state)
        self.best_epoch_ = int(state["best_epoch"])
        self.n_parameters_ = sum(p.numel() for p in self.net_.module_.parameters())


class _OnTrainBegin(Callback):
    """A skorch callback that hands the net to ``begin(net)`` when training begins."""

    def __init__(self, begin):
        self.begin = begin

    def on_train_begin(self, net, **kwargs):
        self.begin(net)


def _data_arrays(data):
    """Arrays holding ``data`` (a list of strings or a TokenSequences), for the fit's key."""
    if isinstance(data, TokenSequences):
        return data.ids, data.offsets
    lengths = np.array([len(text) for text in data], dtype=np.int64)
    text = "".join(data).encode("utf-8", "surrogatepass")
    return lengths, np.frombuffer(text, dtype=np.uint8)


def _updates(history):
    """Training batches (updates) recorded in a net's history."""
    return sum(1 for epoch in history for batch in epoch["batches"] if "train_loss" in batch)
