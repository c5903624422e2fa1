"""Per-batch padding and length-bucketed batching for the skorch nets.

skorch's default loading indexes one sample at a time and collates in Python;
here a whole batch is gathered and padded in one vectorised step instead
(``__getitems__``), and training batches group documents of similar length so
that little compute goes to padding.

Every batch also keeps to a budget of padded tokens (documents x longest
length), so that memory depends on the longest document, never on how many
documents share its batch: a 100,000-token document is predicted alone instead
of padding 255 neighbours to its length.
"""

import zlib

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset, Subset

from ..text._sequences import pad_ragged

# Padded tokens a batch may hold. Activations grow linearly with it (the
# reliability page gives each model's bytes per token), and it is large enough
# to leave the batches of the shipped corpora whole.
MAX_BATCH_TOKENS = 2**15


class SequenceBatches(Dataset):
    """Documents as ragged token ids or as a dense float array, with labels.

    Exactly one of ``(ids, offsets)`` and ``dense`` is given. ``max_pairs``,
    for a model whose memory grows with the square of the length, bounds the
    token pairs of each batch (see :func:`batch_ends`).
    """

    def __init__(self, ids=None, offsets=None, dense=None, y=None, max_pairs=None):
        self.ids = ids
        self.offsets = offsets
        self.dense = dense
        self.y = y
        self.max_pairs = max_pairs
        if dense is not None:
            self.lengths = np.full(len(dense), dense.shape[1], dtype=np.int64)
        else:
            self.lengths = np.diff(offsets)

    def __len__(self):
        return len(self.lengths)

    def content_keys(self):
        """A checksum of each document's content, to order documents canonically."""
        if self.dense is not None:
            rows = np.ascontiguousarray(self.dense).reshape(len(self.dense), -1)
            return np.fromiter((zlib.crc32(row.tobytes()) for row in rows), np.int64, len(rows))
        ids, offsets = self.ids, self.offsets
        return np.fromiter(
            (
                zlib.crc32(ids[offsets[i] : offsets[i + 1]].tobytes())
                for i in range(len(offsets) - 1)
            ),
            np.int64,
            len(offsets) - 1,
        )

    def __getitem__(self, i):
        return self.__getitems__([i])

    def __getitems__(self, index):
        index = np.asarray(index, dtype=np.int64)
        if self.dense is not None:
            batch = {
                "x": torch.from_numpy(np.ascontiguousarray(self.dense[index])),
                "lengths": torch.from_numpy(self.lengths[index]),
            }
        else:
            ids, lengths = pad_ragged(self.ids, self.offsets, index)
            # An empty document keeps one padding token as its only position, so
            # every reduction over time has something to reduce (no 0/0, no NaN).
            batch = {
                "ids": torch.from_numpy(ids),
                "lengths": torch.from_numpy(np.maximum(lengths, 1)),
            }
        if self.y is None:
            target = torch.zeros(len(index), dtype=torch.int64)
        else:
            target = torch.from_numpy(np.asarray(self.y[index], dtype=np.int64))
        return batch, target


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

    max_pairs = None

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

    Row ``i`` is document ``index[i]`` with label ``y[i]`` and loss weight
    ``weights[i]``, which the batch carries as ``"weight"``.
    """

    def __init__(self, batches, index, y, weights):
        self.batches = batches
        self.index = np.asarray(index, dtype=np.int64)
        self.y = np.asarray(y)
        self.weights = np.asarray(weights, dtype=np.float32)
        self.lengths = batches.lengths[self.index]
        self.max_pairs = batches.max_pairs

    def __len__(self):
        return len(self.index)

    def __getitem__(self, i):
        return self.__getitems__([i])

    def __getitems__(self, rows):
        rows = np.asarray(rows, dtype=np.int64)
        batch, _ = self.batches.__getitems__(self.index[rows])
        batch["weight"] = torch.from_numpy(self.weights[rows])
        return batch, torch.from_numpy(self.y[rows].astype(np.int64))


def _whole_batch(batch):
    return batch


def _lengths(dataset):
    if isinstance(dataset, Subset):
        return _lengths(dataset.dataset)[np.asarray(dataset.indices)]
    return dataset.lengths


def _root(dataset):
    return _root(dataset.dataset) if isinstance(dataset, Subset) else dataset


def batch_ends(lengths, batch_size, max_tokens=MAX_BATCH_TOKENS, max_pairs=None):
    """Cut documents, in their given order, into consecutive batches within budget.

    A batch takes documents while it holds at most ``batch_size`` of them, its
    padded size (documents x longest length) stays within ``max_tokens`` and,
    when ``max_pairs`` is given, documents x longest length² stays within it
    (what self-attention over the batch scores per head). A document over
    budget on its own gets a batch to itself.

    Parameters
    ----------
    lengths : array-like of int
        Token counts of the documents, in batch order.
    batch_size : int
        Most documents per batch.
    max_tokens : int, default=MAX_BATCH_TOKENS
        Budget of padded tokens per batch.
    max_pairs : int, default=None
        Budget of padded token pairs per batch; ``None`` for models linear in
        the length.

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
        fits = size * longest <= max_tokens
        if max_pairs is not None:
            fits &= size * longest**2 <= max_pairs
        # The budget only tightens as documents are added: the first document
        # that breaks it ends the batch.
        start += len(fits) if fits.all() else max(int(np.argmin(fits)), 1)
        ends.append(start)
    return ends


def _split(indices, ends):
    return np.split(indices, ends[:-1])


class BudgetBatchSampler:
    """Batches of consecutive documents, in dataset order, within the budget.

    See :func:`batch_ends`; inference sorts documents by length first, so that
    each batch holds documents of similar length.
    """

    def __init__(self, lengths, batch_size, max_tokens=MAX_BATCH_TOKENS, max_pairs=None):
        self.ends = batch_ends(lengths, batch_size, max_tokens, max_pairs)

    def __len__(self):
        return len(self.ends)

    def __iter__(self):
        start = 0
        for end in self.ends:
            yield list(range(start, end))
            start = end


class BucketBatchSampler:
    """Shuffled batches of documents of similar length.

    Documents are shuffled, cut into pools of ``pool_batches`` batches, each
    pool is sorted by length and cut into batches of ``batch_size`` documents
    within the budget of :func:`batch_ends`, and the batch order is shuffled.
    Randomness comes from torch's generator, so seeding torch makes the
    batches reproducible.
    """

    def __init__(
        self, lengths, batch_size, pool_batches=50, max_tokens=MAX_BATCH_TOKENS, max_pairs=None
    ):
        self.lengths = np.asarray(lengths)
        self.batch_size = batch_size
        self.pool_batches = pool_batches
        self.max_tokens = max_tokens
        self.max_pairs = max_pairs
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
        for b in rng.permutation(len(batches)):
            yield batches[b].tolist()

    def _draw(self):
        seed = int(torch.randint(2**31 - 1, (1,)).item())
        rng = np.random.default_rng(seed)
        order = rng.permutation(len(self.lengths))
        pool = self.batch_size * self.pool_batches
        batches = []
        for start in range(0, len(order), pool):
            chunk = order[start : start + pool]
            chunk = chunk[np.argsort(self.lengths[chunk], kind="stable")]
            ends = batch_ends(
                self.lengths[chunk], self.batch_size, self.max_tokens, self.max_pairs
            )
            batches.extend(_split(chunk, ends))
        return rng, batches


def make_loader(
    dataset,
    batch_size,
    shuffle=False,
    max_tokens=MAX_BATCH_TOKENS,
    pin_memory=False,
    pool_batches=50,
):
    """DataLoader for skorch's ``iterator_train``/``iterator_valid``.

    Training (``shuffle=True``) uses length buckets of ``pool_batches``
    batches (see :class:`BucketBatchSampler`); inference keeps the order.
    Both keep every batch within ``max_tokens`` padded tokens and the
    dataset's ``max_pairs`` token pairs; see :func:`batch_ends`.
    ``pin_memory`` puts batches in page-locked memory, from which copies to a
    GPU can run while the GPU computes.
    """
    lengths = _lengths(dataset)
    max_pairs = _root(dataset).max_pairs
    if shuffle:
        sampler = BucketBatchSampler(
            lengths, batch_size, pool_batches, max_tokens=max_tokens, max_pairs=max_pairs
        )
    else:
        sampler = BudgetBatchSampler(lengths, batch_size, max_tokens, max_pairs)
    return DataLoader(
        dataset, batch_sampler=sampler, collate_fn=_whole_batch, pin_memory=pin_memory
    )
