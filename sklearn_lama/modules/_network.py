"""The network every estimator trains: embedding lookup, mask, then a model core."""

from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import nn

__all__ = [
    "ConcatenateTables",
    "NgramFeatures",
    "PairFeatures",
    "SequenceNetwork",
    "TableStreams",
    "TokenInputs",
    "document_folds",
]

# The folded core not built yet (``None`` is a core that does not fold).
_NOT_FOLDED = object()


def document_folds(ids, lengths, folds):
    """The cross-fitting fold of each document: ``sum_t (t + 1) * id_t mod folds``.

    The one definition of the fold, for the ratios counted without a fold
    (``ngram_log_count_ratios``) and for the rows that read them while
    training (:class:`NgramFeatures`). Computed from the ids alone, so a
    padded batch gives every document its fold (padding is id 0, after the
    real tokens), and duplicate documents share their fold.

    Parameters
    ----------
    ids : Tensor of shape (n_tokens,)
        The documents' token ids, one document after another. A padded
        ``(B, T)`` batch, flattened, with every length ``T``, gives the same
        folds as its documents unpadded.
    lengths : Tensor of shape (n_documents,), int64
        Tokens of each document.
    folds : int
        Number of folds.

    Returns
    -------
    fold : Tensor of shape (n_documents,), int64
        Values in ``[0, folds)``.

    Examples
    --------
    >>> import torch
    >>> from sklearn_lama.modules import document_folds
    >>> ids = torch.tensor([2, 3, 4, 5, 6])  # the documents [2, 3] and [4, 5, 6]
    >>> document_folds(ids, torch.tensor([2, 3]), 5)  # 1*2 + 2*3 = 8, 1*4 + 2*5 + 3*6 = 32
    tensor([3, 2])
    >>> padded = torch.tensor([[2, 3, 0], [4, 5, 6]])
    >>> document_folds(padded.reshape(-1), torch.tensor([3, 3]), 5)
    tensor([3, 2])
    """
    documents = torch.arange(len(lengths), device=ids.device)
    # The output's size given: on a GPU, torch would otherwise wait for the device to sum it.
    owner = torch.repeat_interleave(documents, lengths, output_size=len(ids))
    starts = torch.cumsum(lengths, 0) - lengths
    positions = torch.arange(len(ids), device=ids.device) - starts[owner] + 1
    hashes = torch.zeros(len(lengths), dtype=torch.int64, device=ids.device)
    hashes.index_add_(0, owner, ids.long() * positions)
    return hashes % folds


class NgramFeatures(nn.Module):
    """Fixed features of the n-gram of tokens that ends at each position.

    Parameters
    ----------
    keys : Tensor of shape (n_ngrams,), int64
        The known n-grams, sorted, each as ``block * vocabulary_size ** n +
        sum_j id_j * vocabulary_size ** (n - 1 - j)`` (for ``n=2``, ``block *
        vocabulary_size ** 2 + first * vocabulary_size + second``).
    values : Tensor of shape (n_ngrams, k)
        The features of each known n-gram; an unknown one, and the first
        ``n - 1`` positions, get zeros.
    vocabulary_size : int
        Number of token ids.
    n : int, default=2
        Tokens per n-gram: 1 for the token itself, 2 for the pair it ends.
    folds : int, default=0
        Blocks of cross-fitted features after block 0. While training, a row
        reads block ``1 + fold``, its fold given by :func:`document_folds`;
        otherwise, and with ``folds=0``, block 0.

    A module rebuilt to receive saved weights can start from zero n-grams:
    its buffers take the saved shapes when the state dict is loaded.

    Examples
    --------
    >>> import torch
    >>> from sklearn_lama.modules import NgramFeatures
    >>> known = torch.tensor([3])  # the token 3
    >>> tokens = NgramFeatures(known, torch.tensor([[1.5]]), vocabulary_size=5, n=1)
    >>> tokens(torch.tensor([[2, 3, 4]]))[..., 0]
    tensor([[0.0000, 1.5000, 0.0000]])
    """

    def __init__(self, keys, values, vocabulary_size, n=2, folds=0):
        super().__init__()
        self.register_buffer("keys", keys)
        self.register_buffer("values", values)
        # Saved with the weights; read as a Python int, a device sync otherwise.
        self.register_buffer("folds", torch.tensor(folds))
        self._folds = folds
        self.vocabulary_size = vocabulary_size
        self.n = n
        self._block = self._block_size()

    def forward(self, ids):
        """The features of ``ids`` (B, T): a (B, T, k) tensor."""
        n, width = self.n, ids.shape[1]
        grams = ids[:, : width - n + 1]
        for j in range(1, n):
            grams = grams * self.vocabulary_size + ids[:, j : width - n + 1 + j]
        folds = self._folds
        keys, values = self.keys, self.values
        if self.training and folds:
            widths = torch.full((ids.shape[0],), width, device=ids.device)
            block = document_folds(ids.reshape(-1), widths, folds) + 1
            grams = grams + (block * self.vocabulary_size**n).unsqueeze(1)
        elif not torch.jit.is_tracing():
            # Block 0 alone is read: a token reads its row of a dense table
            # when the batch has enough tokens to pay for building it (a sorted
            # search per token costs more than a row's copy), a pair searches
            # block 0's keys only.
            if n == 1 and 8 * ids.numel() >= self.vocabulary_size:
                return self.block_table()[ids]
            keys, values = keys[: self._block], values[: self._block]
        if len(keys):
            at = self.search(keys, grams).clamp_(max=len(keys) - 1)
            found = (keys[at] == grams).unsqueeze(-1)
            features = values[at] * found
        else:
            features = values.new_zeros(grams.shape + values.shape[1:])
        return F.pad(features, (0, 0, n - 1, 0))

    def _block_size(self):
        """Number of the keys of block 0, which come first.

        Kept as a Python int when the keys are set: reading it from the
        keys at every batch would synchronise a GPU.
        """
        return int(torch.searchsorted(self.keys, self.vocabulary_size**self.n))

    def block_table(self):
        """Block 0 of token features (``n=1``) as a dense ``(vocabulary_size, k)`` table.

        Row ``i`` holds the features of token ``i``, zeros where it has none:
        the same features as the sorted search, in one gather.
        """
        table = self.values.new_zeros((self.vocabulary_size, self.values.shape[1]))
        table[self.keys[: self._block]] = self.values[: self._block]
        return table

    def search(self, keys, grams):
        """Index of the first of the sorted ``keys`` not below each code, or ``len(keys)``."""
        return torch.searchsorted(keys, grams)

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        # The number of n-grams is the trained model's: take it from the saved buffers.
        for name in ("keys", "values"):
            saved = state_dict.get(prefix + name)
            if saved is not None:
                current = getattr(self, name)
                setattr(self, name, current.new_empty(saved.shape))
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)
        self._folds = int(self.folds)
        self._block = self._block_size()

    def __setstate__(self, state):
        # Modules pickled before the block size was kept have none.
        super().__setstate__(state)
        if "_block" not in state:
            self._block = self._block_size()


class PairFeatures(NgramFeatures):
    """Fixed features of the token pair that ends at each position.

    :class:`NgramFeatures` with ``n=2``.

    Parameters
    ----------
    keys : Tensor of shape (n_pairs,), int64
        The known pairs, sorted, each as ``block * vocabulary_size ** 2 +
        first * vocabulary_size + second``.
    values : Tensor of shape (n_pairs, k)
        The features of each known pair; an unknown pair, and the first
        position, get zeros.
    vocabulary_size : int
        Number of token ids.
    folds : int, default=0
        Blocks of cross-fitted features after block 0 (see :class:`NgramFeatures`).

    Examples
    --------
    >>> import torch
    >>> from sklearn_lama.modules import PairFeatures
    >>> known = torch.tensor([2 * 5 + 3])  # the pair (2, 3) in a vocabulary of 5 ids
    >>> pairs = PairFeatures(known, torch.tensor([[1.5]]), vocabulary_size=5)
    >>> pairs(torch.tensor([[2, 3, 4]]))[..., 0]
    tensor([[0.0000, 1.5000, 0.0000]])
    """

    def __init__(self, keys, values, vocabulary_size, folds=0):
        super().__init__(keys, values, vocabulary_size, n=2, folds=folds)


class ConcatenateTables(nn.Module):
    """Hands the core one tensor: each token's vectors of all tables, joined.

    The core of a model over one embedding (LAMA, FCSR) takes a ``(B, T,
    sum(d_i))`` tensor; with one table it is that table's vectors.
    """

    def input_size(self, sizes):
        """The core's input width for tables of widths ``sizes``: their sum."""
        return sum(sizes)

    def forward(self, vectors):
        """The ``(B, T, d_i)`` tensors of ``vectors`` as one ``(B, T, sum(d_i))`` tensor."""
        return vectors[0] if len(vectors) == 1 else torch.cat(vectors, dim=-1)


class TableStreams(nn.Module):
    """Hands the core one tensor per table (meta-embedding models such as Duo)."""

    def input_size(self, sizes):
        """The core's input widths for tables of widths ``sizes``: a tuple of them."""
        return tuple(sizes)

    def forward(self, vectors):
        """``vectors``, one ``(B, T, d_i)`` tensor per table, as a tuple."""
        return tuple(vectors)


class TokenInputs(NamedTuple):
    """How a :class:`SequenceNetwork` builds each table's token vectors from token ids.

    Table ``i``'s vector of the token at a position is ``tables[i][id]``,
    followed, for each ``(features, scales)`` of ``features`` in order, by
    ``features(ids)`` at that position times ``scales[i]``. A core that can
    compute its inference from these parts, rather than from the vectors,
    reads them here (:meth:`DuoModule.fold`).

    Attributes
    ----------
    tables : tuple of Tensor of shape (V, d_i)
        The weights of the lookups, one per table (row 0 is padding).
    features : tuple of (NgramFeatures, Tensor of shape (n_tables,))
        The fixed features appended to every table's vectors (token, then
        pair features), each with its scale per table.
    """

    tables: tuple
    features: tuple


class SequenceNetwork(nn.Module):
    """Embed a padded batch, build its mask and apply a classifier core.

    Parameters
    ----------
    core : nn.Module
        Called as ``core(inputs, mask)``; returns logits, or ``(logits, penalty)``
        when it adds a term to the loss.
    tables : sequence of Tensor of shape (V, d_i), default=None
        Embedding tables that initialise one lookup each (row 0 is padding).
    vocabulary_size, embedding_dim : int, default=None
        Without ``tables``: one randomly initialised lookup of this shape. With
        neither, the batches carry vectors already (``x``) and nothing is looked up.
    freeze : bool, default=False
        Keep the tables fixed instead of fine-tuning them.
    combine : nn.Module, default=None
        How the tables' vectors reach the core: :class:`ConcatenateTables`
        (``None``) joins them into one tensor, :class:`TableStreams` hands the
        core one tensor per table (meta-embedding models).
    embedding_dropout : float, default=0.0
        Dropout on the embedded token vectors while training
        (:class:`torch.nn.Dropout`: each element, each table's separately,
        zeroed with this probability, the rest scaled by ``1 / (1 - p)``).
        Vectors fine-tuned on a
        few thousand documents otherwise memorise the training set within two
        or three epochs.
    token_features : NgramFeatures, default=None
        Fixed features of each position's token (``n=1``), appended to every
        table's vectors, times ``token_scales[i]`` for table ``i``.
    token_scales : Tensor of shape (n_tables,), default=None
    pair_features : PairFeatures, default=None
        Fixed features of each position's token pair, appended after those
        of ``token_features``, times ``pair_scales[i]`` for table ``i``.
    pair_scales : Tensor of shape (n_tables,), default=None
    side_features : int, default=0
        Number of side features of each document (numeric columns beside the
        text). They join the document representation before the core's
        output layer; as that layer is linear, this adds ``side @ W`` to the
        logits, ``W`` a bias-free :class:`~torch.nn.Linear` (``side``, of
        shape ``(side_features, n_outputs)``, zero at first: training starts
        from the text alone). With 0 there is no such layer, no parameter is
        added and the cores' equations are unchanged.
    n_outputs : int, default=None
        Number of logits of the core; needed with ``side_features``.

    Notes
    -----
    A core may define ``fold(token_inputs)``, returning a callable
    ``(lengths, ids) -> logits`` that computes its logits from the parts of
    the token vectors (:class:`TokenInputs`), or ``None``
    (:meth:`DuoModule.fold`). The network then uses it for every inference
    over token ids: in eval mode, without gradients (or while traced, as
    ONNX export does), in float32 and outside autocast. It is the same
    function of the weights, computed from fewer numbers per token. The
    folded computation is built at the first such call and kept until the
    weights can change: entering train mode, loading a state dict, or moving
    the network to another device or dtype. Weights changed in place in
    eval mode are not seen; call ``train()`` or ``load_state_dict`` to change
    them.
    """

    def __init__(
        self,
        core,
        tables=None,
        vocabulary_size=None,
        embedding_dim=None,
        freeze=False,
        combine=None,
        embedding_dropout=0.0,
        token_features=None,
        token_scales=None,
        pair_features=None,
        pair_scales=None,
        side_features=0,
        n_outputs=None,
    ):
        super().__init__()
        if tables is not None:
            lookups = [
                nn.Embedding.from_pretrained(t, freeze=freeze, padding_idx=0) for t in tables
            ]
        elif vocabulary_size is not None:
            lookup = nn.Embedding(vocabulary_size, embedding_dim, padding_idx=0)
            lookup.weight.requires_grad_(not freeze)
            lookups = [lookup]
        else:
            lookups = []
        self.lookups = nn.ModuleList(lookups)
        self.core = core
        self.combine = ConcatenateTables() if combine is None else combine
        self.embedding_dropout = nn.Dropout(embedding_dropout)
        self._folded = _NOT_FOLDED
        self.token_features = token_features
        self.pair_features = pair_features
        for name, features, scales in (
            ("token_scales", token_features, token_scales),
            ("pair_scales", pair_features, pair_scales),
        ):
            if features is not None:
                self.register_buffer(name, scales)
        self.side = None
        if side_features:
            self.side = nn.Linear(side_features, n_outputs, bias=False)
            nn.init.zeros_(self.side.weight)

    def embed(self, lengths, ids=None, x=None, side=None):
        """Return the core's inputs and the (B, T) mask, True on real tokens.

        ``side`` is accepted, and left out, so that a batch's inputs can be
        passed whole.
        """
        if ids is not None:
            vectors = [lookup(ids) for lookup in self.lookups]
            fixed = [(features(ids), scales) for features, scales in self.token_inputs().features]
            if fixed:
                # One concatenation per table: appending each feature in turn
                # would copy the table's vectors once per feature.
                vectors = [
                    torch.cat([v, *(f * scales[i].to(v.dtype) for f, scales in fixed)], dim=-1)
                    for i, v in enumerate(vectors)
                ]
            length = ids.shape[1]
        else:
            vectors = [x]
            length = x.shape[1]
        vectors = [self.embedding_dropout(v) for v in vectors]
        mask = torch.arange(length, device=lengths.device) < lengths.unsqueeze(1)
        return self.combine(vectors), mask

    def token_inputs(self):
        """The parts of each table's token vectors, a :class:`TokenInputs`."""
        features = []
        if self.token_features is not None:
            features.append((self.token_features, self.token_scales))
        if self.pair_features is not None:
            features.append((self.pair_features, self.pair_scales))
        return TokenInputs(tuple(lookup.weight for lookup in self.lookups), tuple(features))

    def classify(self, inputs, mask):
        """Return ``(logits, penalty)`` of the core on embedded ``inputs`` and ``mask``.

        ``inputs`` and ``mask`` are what :meth:`embed` returns, or vectors put
        in their place (attribution methods differentiate the logits with
        respect to them); ``penalty`` is 0 for a core that adds nothing to the
        loss.
        """
        out = self.core(inputs, mask)
        if isinstance(out, tuple):
            return out
        return out, out.new_zeros(())

    def side_logits(self, side):
        """The side features' term of the logits, ``(B, n_outputs)``, of ``side`` (B, n_side)."""
        return self.side(side.to(self.side.weight.dtype))

    def forward(self, lengths, ids=None, x=None, side=None):
        """Return ``(logits, penalty)`` of a padded batch of token ``ids`` or vectors ``x``.

        ``lengths`` (B,) are the documents' numbers of tokens; ``ids`` (B, T)
        or ``x`` (B, T, d) the batch, padded at the end of each row; ``side``
        (B, side_features) the documents' side features, if the network
        has them.
        """
        folded = self._folded_core(ids)
        if folded is not None:
            logits = folded(lengths, ids)
            penalty = logits.new_zeros(())
        else:
            inputs, mask = self.embed(lengths, ids=ids, x=x)
            logits, penalty = self.classify(inputs, mask)
        if self.side is not None:
            logits = logits + self.side_logits(side)
        return logits, penalty

    def _folded_core(self, ids):
        """The core's folded inference for this call, or ``None`` (see the Notes)."""
        fold = getattr(self.core, "fold", None)
        tracing = torch.jit.is_tracing()
        if (
            fold is None
            or ids is None
            or not self.lookups
            or self.training
            or (torch.is_grad_enabled() and not tracing)
            or torch.is_autocast_enabled(ids.device.type)
            or self.lookups[0].weight.dtype != torch.float32
        ):
            return None
        if self._folded is _NOT_FOLDED:
            self._folded = fold(self.token_inputs())
        return self._folded

    def train(self, mode=True):
        if mode:
            self._folded = _NOT_FOLDED
        return super().train(mode)

    def _apply(self, fn, recurse=True):
        self._folded = _NOT_FOLDED
        return super()._apply(fn, recurse)

    def _load_from_state_dict(self, *args, **kwargs):
        self._folded = _NOT_FOLDED
        super()._load_from_state_dict(*args, **kwargs)

    def __getstate__(self):
        # The folded core is derived from the weights: a copy builds its own.
        state = self.__dict__.copy()
        del state["_folded"]
        return state

    def __setstate__(self, state):
        super().__setstate__(state)
        self._folded = _NOT_FOLDED
