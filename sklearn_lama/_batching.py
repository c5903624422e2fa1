"""Per-batch padding and length-bucketed batching for the skorch nets.

skorch's default loading indexes one sample at a time and collates in Python;
here a whole batch is gathered and padded in one vectorised step instead
(``__getitems__``), and training batches group documents of similar length so
that little compute goes to padding.
"""

import zlib

import numpy as np
import torch
from torch.utils.data import BatchSampler, DataLoader, Dataset, SequentialSampler, Subset

from ._sequences import pad_ragged


class SequenceBatches(Dataset):
    """Documents as ragged token ids or as a dense float array, with labels.

    Exactly one of ``(ids, offsets)`` and ``dense`` is given.
    """

    def __init__(self, ids=None, offsets=None, dense=None, y=None):
        self.ids = ids
        self.offsets = offsets
        self.dense = dense
        self.y = y
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
            (zlib.crc32(ids[offsets[i] : offsets[i + 1]].tobytes()) for i in range(len(offsets) - 1)),
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


def _whole_batch(batch):
    return batch


def _lengths(dataset):
    if isinstance(dataset, Subset):
        return _lengths(dataset.dataset)[np.asarray(dataset.indices)]
    return dataset.lengths


class BucketBatchSampler:
    """Shuffled batches of documents of similar length.

    Documents are shuffled, cut into pools of ``pool_batches`` batches, each
    pool is sorted by length and split into batches, and the batch order is
    shuffled. Randomness comes from torch's generator, so seeding torch makes
    the batches reproducible.
    """

    def __init__(self, lengths, batch_size, pool_batches=50):
        self.lengths = np.asarray(lengths)
        self.batch_size = batch_size
        self.pool_batches = pool_batches

    def __len__(self):
        return -(-len(self.lengths) // self.batch_size)

    def __iter__(self):
        seed = int(torch.randint(2**31 - 1, (1,)).item())
        rng = np.random.default_rng(seed)
        order = rng.permutation(len(self.lengths))
        pool = self.batch_size * self.pool_batches
        batches = []
        for start in range(0, len(order), pool):
            chunk = order[start : start + pool]
            chunk = chunk[np.argsort(self.lengths[chunk], kind="stable")]
            batches.extend(
                chunk[i : i + self.batch_size] for i in range(0, len(chunk), self.batch_size)
            )
        for b in rng.permutation(len(batches)):
            yield batches[b].tolist()


def make_loader(dataset, batch_size, shuffle=False):
    """DataLoader for skorch's ``iterator_train``/``iterator_valid``.

    Training (``shuffle=True``) uses length buckets; inference keeps the order.
    """
    if shuffle:
        sampler = BucketBatchSampler(_lengths(dataset), batch_size)
    else:
        sampler = BatchSampler(SequentialSampler(dataset), batch_size, drop_last=False)
    return DataLoader(dataset, batch_sampler=sampler, collate_fn=_whole_batch)
