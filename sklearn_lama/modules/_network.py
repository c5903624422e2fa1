"""The network every estimator trains: embedding lookup, mask, then a model core."""

from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import nn

__all__ = [
    "ConcatenateTables",
    "FoldedNetwork",
    "NgramFeatures",
    "PairFeatures",
    "SequenceNetwork",
    "TableStreams",
    "TokenInputs",
    "document_folds",
]


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

    def inference_features(self):
        """The features that inference reads: block 0, as an :class:`NgramFeatures` of its own.

        Its buffers are views of this module's block 0 (nothing is copied)
        and it has no folds, so it gives in either mode what this module
        gives in eval mode (the n-gram features of a :class:`FoldedNetwork`).
        """
        return NgramFeatures(
            self.keys[: self._block], self.values[: self._block], self.vocabulary_size, n=self.n
        )

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
    :meth:`forward` takes one path, in every mode, with gradients or
    without: the lookups, the core, the side term. A core may also define
    ``fold(token_inputs)``, returning a module ``(lengths, ids) -> logits``
    that computes the logits of its eval mode from the parts of the token
    vectors (:class:`TokenInputs`), or ``None`` (:meth:`DuoModule.fold`);
    :meth:`fold` then builds the network's inference form from the current
    weights, a separate :class:`FoldedNetwork`. Nothing here chooses
    between the two: an estimator builds the folded form at the end of
    ``fit``, ``partial_fit`` and loading, and predicts with it
    (``inference_module_``); training, its validation, autocast and the
    inspection (attention, attributions) run this network.
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
        inputs, mask = self.embed(lengths, ids=ids, x=x)
        logits, penalty = self.classify(inputs, mask)
        if self.side is not None:
            logits = logits + self.side_logits(side)
        return logits, penalty

    def fold(self):
        """This network's inference form, built from its current weights, or ``None``.

        Returns
        -------
        FoldedNetwork or None
            The logits of :meth:`forward` in eval mode, computed by the
            core's folded form from token ids (see the Notes); ``None`` for
            a core without one (``fold`` missing or returning ``None``) or
            a network without lookups (it reads vectors). A snapshot: built
            without gradients, in the weights' dtype and on their device,
            it does not follow later changes of the weights; fold again
            after changing them.
        """
        fold = getattr(self.core, "fold", None)
        if fold is None or not self.lookups:
            return None
        with torch.no_grad():
            head = fold(self.token_inputs())
            if head is None:
                return None
            return FoldedNetwork(head, None if self.side is None else self.side.weight)


class FoldedNetwork(nn.Module):
    """A :class:`SequenceNetwork`'s inference form: its core folded, and the side term.

    Built by :meth:`SequenceNetwork.fold` from the network's weights at that
    moment; called as the network is, ``(lengths, ids, side)`` to
    ``(logits, penalty)``, with token ids only. It has no parameters and no
    mode: its tensors are buffers computed from the weights (copies, not
    views, of those that training changes), so training the network does not
    change it; fold the network again once its weights changed.

    Parameters
    ----------
    head : nn.Module
        The core's folded form, ``head(lengths, ids)`` ``(B, n_outputs)``
        logits (:class:`FoldedDuoHead`).
    side : Tensor of shape (n_outputs, side_features), default=None
        The weight of the network's side-features layer, copied; ``None``
        without side features.

    Examples
    --------
    >>> import torch
    >>> from sklearn_lama.modules import DuoModule, SequenceNetwork, TableStreams
    >>> _ = torch.manual_seed(0)
    >>> tables = [torch.randn(9, 4), torch.randn(9, 6)]
    >>> network = SequenceNetwork(DuoModule((4, 6), 3, d_ff=8), tables, combine=TableStreams())
    >>> folded = network.fold()  # from the weights of now
    >>> ids, lengths = torch.tensor([[1, 2, 3], [4, 5, 0]]), torch.tensor([3, 2])
    >>> with torch.no_grad():
    ...     plain = network.eval()(lengths, ids=ids)[0]
    ...     gap = (folded(lengths, ids=ids)[0] - plain).abs().max()
    >>> bool(gap < 1e-5)  # the same logits, summed in another order
    True
    """

    def __init__(self, head, side=None):
        super().__init__()
        self.head = head
        self.register_buffer("side", None if side is None else side.detach().clone())

    def forward(self, lengths, ids=None, x=None, side=None):
        """Return ``(logits, penalty)`` of a padded batch of token ``ids``, as the network's.

        The penalty is 0: it is a term of the training loss. ``x`` (vectors)
        is refused: the folded form reads token ids.
        """
        if ids is None or x is not None:
            raise ValueError("a FoldedNetwork reads token ids (ids=...), not vectors (x=...).")
        logits = self.head(lengths, ids)
        if self.side is not None:
            # The network's side term, computed by the same kernel (nn.Linear's).
            logits = logits + F.linear(side.to(self.side.dtype), self.side)
        return logits, logits.new_zeros(())
