"""The translator's parameters, each declared once (see ``utils._parameters.Param``).

The training parameters are the training stack's declarations
(:data:`~sklearn_lama.training._parameters.TRAINING_PARAMETERS`) with the
translator's defaults and wording; the others are its own.
"""

from numbers import Integral, Real

from ..training._parameters import TRAINING_PARAMETERS
from ..utils._parameters import Param
from ..utils._sklearn_compat import Interval, StrOptions

__all__ = ["TRANSLATOR_PARAMETERS"]


def _shared(name, **changes):
    return TRAINING_PARAMETERS[name].but(**changes)


TRANSLATOR_PARAMETERS = {
    "d_model": Param(
        "int",
        [Interval(Integral, 1, None, closed="left")],
        """Width of each embedding stream and of every layer.""",
    ),
    "n_heads": Param(
        "int",
        [Interval(Integral, 1, None, closed="left")],
        """Attention heads; must divide ``d_model``.""",
    ),
    "d_ff": Param(
        "int",
        [Interval(Integral, 1, None, closed="left")],
        """Feed-forward width.""",
    ),
    "n_layers": Param(
        "int",
        [Interval(Integral, 0, None, closed="left")],
        """Encoder layers and decoder layers (each).""",
    ),
    "dropout": Param(
        "float",
        [Interval(Real, 0, 1, closed="left")],
        """Dropout rate of the embeddings and of every attention and feed-forward
        sub-layer, as in the Transformer.""",
    ),
    "meta_embeddings": Param(
        "bool",
        ["boolean"],
        """Two embedding streams instead of one, on both sides: every encoder
        self-attention and decoder cross-attention is Duo attention (Eq. 4-5).
        The first step of the paper's ablation (Table 6).""",
    ),
    "weight_sharing": Param(
        "bool",
        ["boolean"],
        """In every attention, one stream's key and value projections are one
        matrix (§3.2.1). The second step of Table 6.""",
    ),
    "duo_norm": Param(
        "bool",
        ["boolean"],
        """In the decoder, the Duo layer norm (Eq. 6) between the masked
        attention and the feed-forward (§3.4); needs ``meta_embeddings``.
        The third step of Table 6.""",
    ),
    "fusion": Param(
        "bool",
        ["boolean"],
        """The output layer is tied to the target embeddings through a learned
        projection of their concatenation (§3.3); off, to the embeddings
        themselves. The last step of Table 6.""",
    ),
    "embedding_init": Param(
        '{"auto", "word2vec", "random"}',
        [StrOptions({"auto", "word2vec", "random"})],
        """How the subword embedding tables start. ``"word2vec"``: from word2vec
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
        :class:`~sklearn_lama.MetaEmbeddingTransformer` keeps its tables.""",
    ),
    # SentencePiece needs room for the 256 byte pieces, the reserved ids and the placeholders.
    "vocab_size": Param(
        "int",
        [Interval(Integral, 300, None, closed="left")],
        """Subwords per side (a soft limit: fewer on a small corpus).""",
    ),
    "label_smoothing": Param(
        "float",
        [Interval(Real, 0, 1, closed="left")],
        """Label smoothing of the training loss (the validation loss has none).""",
    ),
    "lr": _shared("lr", description="""Peak learning rate, reached at the end of the warm-up."""),
    "warmup_steps": Param(
        "int",
        [Interval(Integral, 1, None, closed="left")],
        """Updates of the linear warm-up.""",
    ),
    "max_batch_tokens": _shared(
        "max_batch_tokens",
        description="""Padded tokens (sentences x longest of source and target) per batch,
        in training and validation; also bounds the sentences x beams x
        length decoded at once in ``predict``.""",
    ),
    "max_epochs": _shared("max_epochs", description="""Maximum passes over the training pairs."""),
    "max_time": _shared(
        "max_time",
        description="""Training budget of a ``fit`` in seconds, checked after every training
        batch: the epoch then ends there (it is still validated and
        recorded) and training stops. The word2vec starting vectors and
        validation count; what callbacks do at the end of an epoch (e.g. a
        BLEU measurement) does not. ``history_`` records the time so far
        as ``seconds``.""",
    ),
    "early_stopping": _shared(
        "early_stopping",
        description="""Hold out ``validation_fraction`` of the pairs (at random) and keep
        the weights of the epoch with the lowest validation loss, stopping
        after ``patience`` epochs without improvement. Skipped, by the rule
        of every estimator of the package, when fewer than 10 pairs would be
        held out or fewer than 2 left to train on. The subwords and word2vec
        vectors are learned on the other pairs only.""",
    ),
    "validation_fraction": _shared(
        "validation_fraction", description="""Share of the pairs held out for early stopping."""
    ),
    "patience": _shared(
        "patience",
        description="""Epochs without a lower validation loss before stopping.""",
    ),
    "beam_size": Param(
        "int",
        [Interval(Integral, 1, None, closed="left")],
        """1 for greedy decoding.""",
    ),
    "length_penalty": Param(
        "float",
        [Interval(Real, 0, None, closed="left")],
        """Exponent of the GNMT length penalty in beam search.""",
    ),
    "max_length": Param(
        "int or None",
        [Interval(Integral, 1, None, closed="left"), None],
        """Most target subwords per translation; ``None``: twice the source
        length plus 10.""",
    ),
    "max_source_length": Param(
        "int",
        [Interval(Integral, 1, None, closed="left")],
        """Most subwords (or tokens of a ``TokenSequences``) of a source that
        ``predict`` reads: a longer source is cut to its first
        ``max_source_length``, with a warning. With ``max_length`` this
        bounds the time and memory of every translation.""",
    ),
    "callbacks": _shared(
        "callbacks",
        description="""skorch callbacks added to the net, as instances or ``(name,
        callback)`` pairs, e.g. one whose ``on_epoch_end`` measures BLEU per
        epoch (it may call ``predict`` on the translator in training). They
        are code, so :func:`~sklearn_lama.save_weights` does not store them:
        a loaded estimator has ``callbacks=None``.""",
    ),
    "warm_start": _shared(
        "warm_start",
        description="""When the translator is already fitted, ``fit`` continues training the
        current network, weights, optimizer state and learning-rate schedule,
        for ``max_epochs`` more epochs instead of starting over. The subword
        vocabularies of the first fit are kept (``vocab_size`` and
        ``embedding_init`` no longer matter), ``X`` must be of the kind seen
        then, and architecture parameters must not change. Early stopping
        and the time budget start afresh on each call.""",
    ),
    "checkpoint": _shared(
        "checkpoint",
        description="""File name for checkpoints in the format of
        :func:`~sklearn_lama.save_weights`, written after each epoch that
        lowers the validation loss (after every epoch without validation),
        as the classifiers write theirs: ``{fit}`` in the name (inserted
        before the suffix when absent) becomes 12 hex digits identifying the
        parameters and the training pairs, ``checkpoint_path_`` names the
        file, and ``load_weights(path).set_params(warm_start=True).fit(X,
        y)`` resumes. A path that cannot be written raises ``ValueError``
        before training.""",
    ),
    "device": _shared(
        "device",
        description="""Where the network trains and translates: ``"cpu"``, ``"cuda"``,
        ``"cuda:N"`` or ``"mps"``, where available.""",
    ),
    "precision": _shared(
        "precision",
        description="""Arithmetic of the forward pass, in training and decoding. ``"32"``:
        float32 throughout. ``"bf16"``: :func:`torch.autocast` to bfloat16
        (on the CPU, and on GPUs that support it); ``"16-mixed"``: autocast
        to float16 with gradient scaling, CUDA only (elsewhere it raises
        ``ValueError`` before training). Weights, optimizer state, loss and
        decoding scores stay float32.""",
    ),
    "torch_threads": _shared(
        "torch_threads",
        description="""torch's intra-op threads during ``fit``, ``predict`` and ``score``;
        the caller's setting is restored afterwards. ``None`` means 1, as
        ``n_jobs=None`` does in scikit-learn; a positive int asks for that
        many; a negative one counts from the CPUs the process was given: -1
        is all of them.""",
    ),
    "verbose": _shared(
        "verbose",
        description="""Above 0, print a progress bar and a per-epoch table of training
        loss, validation loss and perplexity, and time.""",
    ),
    "random_state": _shared(
        "random_state",
        description="""Seeds the validation split, the word2vec vectors, the
        initialisation, dropout and batch order.""",
    ),
}
