"""DuoClassifier: the estimator around :class:`~sklearn_lama.modules.DuoModule`."""

import math
from numbers import Integral, Real

from ..modules import DuoModule, TableStreams
from ..training._batching import MAX_BATCH_TOKENS, BatchBudget
from ..training._parameters import INFERENCE_BATCH
from ..utils._parameters import Param
from ..utils._persistence import register
from ..utils._sklearn_compat import Interval, StrOptions
from ._base import BaseSequenceClassifier
from ._parameters import ADDITIONS_OFF, inference_batch_description, shared_parameters

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
    %(parameters)s

    Attributes
    ----------
    %(fitted_attributes)s

    References
    ----------
    .. [1] Li, Q., Jiang, X., Xia, J. and Li, J. "Meta-Embeddings Based on
       Self-Attention."
    %(shared_references)s

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

    _parameters = {
        "d_ff": Param(
            "int",
            [Interval(Integral, 1, None, closed="left")],
            "Width of the fusion layer ``W^O`` (and of the encoder feed-forwards).",
        ),
        "n_layers": Param(
            "int",
            [Interval(Integral, 0, None, closed="left")],
            """Duo Transformer encoder layers before the head. Their self-attention
            needs memory that grows with the square of the document length:
            batches are cut so that one attention tensor (documents x ``n_heads``
            x T x T float32) stays within ``max_attention_bytes`` (256 MiB), and
            a document too long for that on its own (over 4096 tokens at
            ``n_heads=4``) raises a
            ``ValueError`` in ``fit`` and ``predict`` rather than exhausting
            memory; cut documents with ``Word2VecVectorizer(max_len=...)``. With
            ``n_layers=0`` memory is linear in the length.""",
        ),
        "n_heads": Param(
            "int",
            [Interval(Integral, 1, None, closed="left")],
            """Heads of each encoder layer, whose attention width is the smallest
            multiple of ``n_heads`` at least as wide as the wider embedding. Unused
            when ``n_layers=0``.""",
        ),
        "attention_softmax": Param(
            "bool",
            ["boolean"],
            "Normalise the Eq. 1-2 scores with a softmax (the paper drops it).",
        ),
        "bias": Param(
            "bool",
            ["boolean"],
            "Biases in the fusion and output layers (the paper has none).",
        ),
        "dropout": Param(
            "float",
            [Interval(Real, 0, 1, closed="left")],
            "Dropout on the fused vector and inside the encoder layers.",
        ),
        "positions": Param(
            '{"concat", "add"} or None',
            [StrOptions({"concat", "add"}), None],
            """Sinusoidal position encoding given to both embeddings before the
            encoder layers and the Eq. 1-3 head: ``"concat"`` appends a
            ``position_dim``-wide encoding, ``"add"`` adds one of the embedding's
            width as the Transformer does, ``None`` is the paper's order-blind
            classifier. Without positions the model cannot tell the columns of a
            plain 2-D float array apart (see
            :class:`~sklearn_lama.modules.DuoModule`).""",
        ),
        "position_dim": Param(
            "int",
            [Interval(Integral, 1, None, closed="left")],
            'Width of the ``"concat"`` position encoding.',
        ),
        "max_attention_bytes": Param(
            "int",
            [Interval(Integral, 1, None, closed="left")],
            """Budget (256 MiB) of one attention tensor of an encoder layer
            (documents x ``n_heads`` x T x T float32) in a batch, when
            ``n_layers >= 1``: batches hold fewer documents to keep within it, and
            a document too long for it alone is refused. A layer holds several
            such tensors at once (the reliability page gives the peak memory);
            raise it on a GPU with memory to spare.""",
        ),
        **shared_parameters(
            inference_batch_size={"description": inference_batch_description(_inference_tokens)},
            optimizer={"description": '``"sgd"`` uses ``momentum``; the paper uses Adam.'},
            embedding_dropout={
                "description": """Dropout on each embedding stream's token vectors
                while training (the paper has none: 0), against fine-tuned vectors
                fitting a small training set; the results page compares values."""
            },
        ),
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
        ema_horizon=0.5,
        class_weight=None,
        calibration=None,
        callbacks=None,
        warm_start=False,
        checkpoint=None,
        device="cpu",
        precision="32",
        torch_threads=None,
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
        self.ema_horizon = ema_horizon
        self.class_weight = class_weight
        self.calibration = calibration
        self.callbacks = callbacks
        self.warm_start = warm_start
        self.checkpoint = checkpoint
        self.device = device
        self.precision = precision
        self.torch_threads = torch_threads
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
