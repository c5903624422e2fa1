"""Per-batch padding and length-bucketed batching for the skorch nets.

skorch's default loading indexes one sample at a time and collates in Python;
here a whole batch is gathered and padded in one vectorised step instead
(``__getitems__``), and training batches group documents of similar length so
that little compute goes to padding.

Every batch also keeps to a :class:`BatchBudget` of padded tokens (documents
x longest length), so that memory depends on the longest document, never on
how many documents share its batch: a 100,000-token document is predicted
alone instead of padding 255 neighbours to its length.
"""

import zlib
from typing import NamedTuple

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset, Subset

from ..text._sequences import pad_ragged

# Padded tokens a batch may hold. Activations grow linearly with it (the
# reliability page gives each model's bytes per token), and it is large enough
# to leave the batches of the shipped corpora whole.
MAX_BATCH_TOKENS = 2**15


class SequenceBatches(Dataset):
    """Documents as ragged token ids or as a dense float array.

    Exactly one of ``(ids, offsets)`` and ``dense`` is given; ``tables`` are
    the embedding tables the ids index, when the documents came with them;
    ``side`` (``(n, n_side)`` float32), the documents' side features, when
    they came with some. Indexing with a list of positions gives the
    network's inputs for those documents, padded to the longest: ``{"ids"
    or "x", "lengths"}``, and ``"side"`` with side features.
    """

    def __init__(self, ids=None, offsets=None, dense=None, tables=None, side=None):
        self.ids = ids
        self.offsets = offsets
        self.dense = dense
        self.tables = tables
        self.side = side
        if dense is not None:
            self.lengths = np.full(len(dense), dense.shape[1], dtype=np.int64)
        else:
            self.lengths = np.diff(offsets)

    def __len__(self):
        return len(self.lengths)

    def content_keys(self):
        """A checksum of each document's content (side features included), to order documents.

        Documents are put in a canonical order by it.
        """
        if self.dense is not None:
            rows = np.ascontiguousarray(self.dense).reshape(len(self.dense), -1)
            keys = (zlib.crc32(row.tobytes()) for row in rows)
        else:
            ids, offsets = self.ids, self.offsets
            keys = (
                zlib.crc32(ids[offsets[i] : offsets[i + 1]].tobytes())
                for i in range(len(offsets) - 1)
            )
        if self.side is not None:
            side = np.ascontiguousarray(self.side)
            keys = (zlib.crc32(row.tobytes(), key) for key, row in zip(keys, side))
        return np.fromiter(keys, np.int64, len(self))

    def __getitem__(self, i):
        return self.__getitems__([i])

    def __getitems__(self, index):
        index = np.asarray(index, dtype=np.int64)
        if self.dense is not None:
            inputs = {
                "x": torch.from_numpy(np.ascontiguousarray(self.dense[index])),
                "lengths": torch.from_numpy(self.lengths[index]),
            }
        else:
            ids, lengths = pad_ragged(self.ids, self.offsets, index)
            # An empty document keeps one padding token as its only position, so
            # every reduction over time has something to reduce (no 0/0, no NaN).
            inputs = {
                "ids": torch.from_numpy(ids),
                "lengths": torch.from_numpy(np.maximum(lengths, 1)),
            }
        if self.side is not None:
            inputs["side"] = torch.from_numpy(self.side[index])
        return inputs


class WeightedBatch(NamedTuple):
    """The ``X`` of a training batch: the network's inputs and each document's loss weight.

    Attributes
    ----------
    inputs : dict of str to Tensor
        Keyword arguments of the network: ``"ids"`` of shape (B, T) or
        ``"x"`` of shape (B, T, d), and ``"lengths"`` of shape (B,).
    weights : Tensor of shape (B,) or (B, n_columns)
        The factor of each document's loss, or of each of its labels' or
        tasks' losses (shaped as the batch's targets).
    """

    inputs: dict
    weights: torch.Tensor


def _flat(sequences):
    """One flat ``int64`` array of the id arrays ``sequences``, and its ``len + 1`` offsets."""
    offsets = np.zeros(len(sequences) + 1, dtype=np.int64)
    np.cumsum([len(s) for s in sequences], out=offsets[1:])
    ids = np.concatenate(sequences) if len(sequences) else np.zeros(0)
    return ids.astype(np.int64), offsets


class PairBatches(Dataset):
    """Source and target token ids of sentence pairs, batched for teacher forcing.

    Each target is framed by its start and end ids (``[BOS, ..., EOS]``). A
    batch is ``({"src_ids": (B, Ts), "tgt_ids": (B, Tt)}, next_ids)``,
    padded with 0 per batch: ``tgt_ids`` are the framed targets without
    their last id and ``next_ids`` (``(B, Tt)``) the same without their
    first, so that target position ``t`` is trained to predict
    ``next_ids[:, t]``. ``lengths`` are the padded widths of each pair (the
    longer of source and ``tgt_ids``), which the token budget counts.

    Parameters
    ----------
    sources : list of int arrays
        Source ids of each pair.
    targets : list of int arrays
        Framed target ids of each pair (at least 2 ids).
    """

    def __init__(self, sources, targets):
        self.src_ids, self.src_offsets = _flat(sources)
        self.tgt_ids, self.tgt_offsets = _flat(targets)
        self.lengths = np.maximum(np.diff(self.src_offsets), np.diff(self.tgt_offsets) - 1)

    def __len__(self):
        return len(self.lengths)

    def __getitem__(self, i):
        return self.__getitems__([i])

    def __getitems__(self, index):
        index = np.asarray(index, dtype=np.int64)
        src, _ = pad_ragged(self.src_ids, self.src_offsets, index)
        tgt, _ = pad_ragged(self.tgt_ids, self.tgt_offsets, index)
        inputs = {
            "src_ids": torch.from_numpy(src),
            "tgt_ids": torch.from_numpy(np.ascontiguousarray(tgt[:, :-1])),
        }
        return inputs, torch.from_numpy(np.ascontiguousarray(tgt[:, 1:]))


class TrainingView(Dataset):
    """Documents of a :class:`SequenceBatches` in a given order, possibly repeated.

    Row ``i`` is document ``index[i]`` with target ``y[i]`` (a label, or a
    row of labels) and loss weight ``weights[i]`` (of ``y[i]``'s shape); a
    batch of rows is ``(WeightedBatch, targets)``. ``groups``, when given,
    is an int per row: training batches never mix rows of different groups
    (see :class:`BucketBatchSampler`).
    """

    def __init__(self, batches, index, y, weights, groups=None):
        self.batches = batches
        self.index = np.asarray(index, dtype=np.int64)
        self.y = np.asarray(y)
        self.weights = np.asarray(weights, dtype=np.float32)
        self.groups = None if groups is None else np.asarray(groups, dtype=np.int64)
        self.lengths = batches.lengths[self.index]

    def __len__(self):
        return len(self.index)

    def subset(self, rows):
        """The view of rows ``rows`` of this one (a hold-out side, the rows counted)."""
        groups = None if self.groups is None else self.groups[rows]
        return TrainingView(
            self.batches, self.index[rows], self.y[rows], self.weights[rows], groups
        )

    def __getitem__(self, i):
        return self.__getitems__([i])

    def __getitems__(self, rows):
        rows = np.asarray(rows, dtype=np.int64)
        inputs = self.batches.__getitems__(self.index[rows])
        weights = torch.from_numpy(self.weights[rows])
        return WeightedBatch(inputs, weights), torch.from_numpy(self.y[rows].astype(np.int64))


def _whole_batch(batch):
    return batch


def _per_document(dataset, name):
    """The array ``name`` of ``dataset`` (seen through Subsets), or None where it has none."""
    if isinstance(dataset, Subset):
        values = _per_document(dataset.dataset, name)
        return None if values is None else values[np.asarray(dataset.indices)]
    return getattr(dataset, name, None)


class BatchBudget:
    """How much one batch may hold, in padded tokens and, optionally, token pairs.

    A batch holds at most ``max_tokens`` padded tokens (documents x longest
    length) and, with ``max_pairs``, at most ``max_pairs`` padded token pairs
    (documents x longest length², what self-attention over the batch scores
    per head), so that memory depends on the longest document, never on how
    many documents share its batch.

    Parameters
    ----------
    max_tokens : int
        Budget of padded tokens per batch.
    max_pairs : int, default=None
        Budget of padded token pairs per batch; ``None`` for models linear in
        the length.
    """

    def __init__(self, max_tokens, max_pairs=None):
        self.max_tokens = max_tokens
        self.max_pairs = max_pairs

    def __repr__(self):
        return f"BatchBudget(max_tokens={self.max_tokens!r}, max_pairs={self.max_pairs!r})"

    def scaled(self, factor):
        """This budget ``factor`` times over: what ``factor`` workers' batches hold together."""
        if factor == 1:
            return self
        pairs = None if self.max_pairs is None else self.max_pairs * factor
        return BatchBudget(self.max_tokens * factor, pairs)

    def ends(self, lengths, batch_size):
        """Cut documents, in their given order, into consecutive batches within budget.

        A batch takes documents while it holds at most ``batch_size`` of
        them and stays within the budget. A document over budget on its own
        gets a batch to itself.

        Parameters
        ----------
        lengths : array-like of int
            Token counts of the documents, in batch order.
        batch_size : int
            Most documents per batch.

        Returns
        -------
        ends : list of int
            Position after the last document of each batch.
        """
        # Padding keeps one position even for an empty document.
        widths = np.maximum(np.asarray(lengths, dtype=np.int64), 1)
        ends, start = [], 0
        while start < len(widths):
            longest = np.maximum.accumulate(widths[start : start + batch_size])
            size = np.arange(1, len(longest) + 1)
            fits = size * longest <= self.max_tokens
            if self.max_pairs is not None:
                fits &= size * longest**2 <= self.max_pairs
            # The budget only tightens as documents are added: the first document
            # that breaks it ends the batch.
            start += len(fits) if fits.all() else max(int(np.argmin(fits)), 1)
            ends.append(start)
        return ends


def _split(indices, ends):
    return np.split(indices, ends[:-1])


def _at_least(batches, size):
    """``batches`` with each batch of fewer than ``size`` documents joined to the one before it."""
    if size == 1:
        return batches
    joined = []
    for batch in batches:
        if joined and (len(batch) < size or len(joined[-1]) < size):
            joined[-1] = np.concatenate([joined[-1], batch])
        else:
            joined.append(batch)
    return joined


class BudgetBatchSampler:
    """Batches of consecutive documents, in dataset order, within the budget.

    See :meth:`BatchBudget.ends`; inference sorts documents by length first,
    so that each batch holds documents of similar length. ``ends`` are the
    positions after each batch.
    """

    def __init__(self, lengths, batch_size, budget):
        self.ends = budget.ends(lengths, batch_size)

    def _bounds(self):
        return zip([0, *self.ends[:-1]], self.ends)

    def __len__(self):
        return len(self.ends)

    def __iter__(self):
        for start, end in self._bounds():
            yield list(range(start, end))


class BucketBatchSampler:
    """Shuffled batches of documents of similar length.

    Documents are shuffled, cut into pools of ``pool_batches`` batches, each
    pool is sorted by length and cut into batches of ``batch_size`` documents
    within ``budget`` (a :class:`BatchBudget`), and the batch order is
    shuffled. Randomness comes from torch's generator, so seeding torch makes
    the batches reproducible.

    With ``groups`` (an int per document), pools are cut within each group,
    so that no batch mixes groups: the documents of two corpora of different
    lengths, trained as two tasks of one model, are bucketed as tightly as
    each corpus alone (mixed pools pad more: a pool holds fewer documents of
    each length).

    With ``workers`` (a :class:`~._distributed.Workers` of ``k`` workers),
    the batches are cut as for ``k`` times ``batch_size`` documents within
    ``k`` times the budget, from rank 0's random draw; a batch of fewer than
    ``k`` documents joins the one before it; and this worker takes every
    ``k``-th document of each, from its rank on.
    """

    def __init__(self, lengths, batch_size, budget, pool_batches=50, groups=None, workers=None):
        self.lengths = np.asarray(lengths)
        self.batch_size = batch_size
        self.budget = budget
        self.pool_batches = pool_batches
        self.groups = None if groups is None else np.asarray(groups)
        self.workers = workers
        self._next = None

    def __len__(self):
        # How many batches the budget makes depends on the shuffle: draw the
        # next iteration's batches now so that the count is exact.
        if self._next is None:
            self._next = self._draw()
        return len(self._next[1])

    def __iter__(self):
        rng, batches = self._draw() if self._next is None else self._next
        self._next = None
        rank, size = (0, 1) if self.workers is None else (self.workers.rank, self.workers.size)
        for b in rng.permutation(len(batches)):
            yield batches[b][rank::size].tolist()

    def _draw(self):
        seed = int(torch.randint(2**31 - 1, (1,)).item())
        size = 1
        if self.workers is not None:
            seed, size = self.workers.shared(seed), self.workers.size
        budget = self.budget.scaled(size)
        rng = np.random.default_rng(seed)
        order = rng.permutation(len(self.lengths))
        pool = self.batch_size * size * self.pool_batches
        batches = []
        for members in self._by_group(order):
            for start in range(0, len(members), pool):
                chunk = members[start : start + pool]
                chunk = chunk[np.argsort(self.lengths[chunk], kind="stable")]
                ends = budget.ends(self.lengths[chunk], self.batch_size * size)
                batches.extend(_split(chunk, ends))
        return rng, _at_least(batches, size)

    def _by_group(self, order):
        """``order`` split by group, each part in its shuffled order (one part without groups)."""
        if self.groups is None:
            return [order]
        order = order[np.argsort(self.groups[order], kind="stable")]
        return np.split(order, np.flatnonzero(np.diff(self.groups[order])) + 1)


def make_loader(
    dataset, batch_size, budget, shuffle=False, pin_memory=False, pool_batches=50, workers=None
):
    """DataLoader for skorch's ``iterator_train``/``iterator_valid`` and for inference.

    Training (``shuffle=True``) uses length buckets of ``pool_batches``
    batches, this worker's share of each with ``workers`` (see
    :class:`BucketBatchSampler`); inference keeps the order
    (see :class:`BudgetBatchSampler`).
    Both keep every batch within ``budget``, a :class:`BatchBudget`.
    ``pin_memory`` puts batches in page-locked memory, from which copies to a
    GPU can run while the GPU computes.
    """
    lengths = _per_document(dataset, "lengths")
    if shuffle:
        sampler = BucketBatchSampler(
            lengths,
            batch_size,
            budget,
            pool_batches,
            groups=_per_document(dataset, "groups"),
            workers=workers,
        )
    else:
        sampler = BudgetBatchSampler(lengths, batch_size, budget)
    return DataLoader(
        dataset, batch_sampler=sampler, collate_fn=_whole_batch, pin_memory=pin_memory
    )


def training_view(batches, y, sample_weight, label_weight, groups=None):
    """The documents one training epoch visits, in a canonical order, with loss weights.

    ``sample_weight`` follows scikit-learn's semantics exactly: a weight
    ``w`` counts the document ``floor(w)`` times, plus once more with its loss
    scaled by ``w - floor(w)``, so an integer weight is the same as repeating
    the document and a weight of 0 the same as leaving it out. Documents are
    put in a canonical order (length, content, label) first, so that the
    training data, and hence the fitted model, do not depend on the order of
    ``X``. ``y`` holds the encoded targets, ``(n,)`` or ``(n, n_columns)``;
    ``label_weight``, of ``y``'s shape, scales the loss of each document (and
    column) on top of ``sample_weight``: ``class_weight``, as in
    :class:`~sklearn.linear_model.LogisticRegression`, and 0 at missing labels.
    ``groups`` (an int per document, or ``None``) keeps documents of
    different groups out of each other's training batches.
    """
    y = np.asarray(y)
    keys = y[:, ::-1].T if y.ndim == 2 else (y,)
    order = np.lexsort((*keys, batches.content_keys(), batches.lengths))
    if sample_weight is None:
        index, weights = order, np.ones(len(order))
    else:
        w = sample_weight[order]
        whole = np.floor(w).astype(np.int64)
        part = w - whole
        copies = whole + (part > 0)
        index = np.repeat(order, copies)
        weights = np.ones(len(index))
        # The fractional copy of a document is its last one.
        last = np.cumsum(copies) - 1
        weights[last[part > 0]] = part[part > 0]
    weights = weights.reshape((-1,) + (1,) * (y.ndim - 1)) * label_weight[index]
    groups = None if groups is None else np.asarray(groups)[index]
    return TrainingView(batches, index, y[index], weights.astype(np.float32), groups)
