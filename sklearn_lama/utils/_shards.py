"""The training set of a ``torchrun`` group whose ranks each read a part of it.

Under a :mod:`torch.distributed` group that the caller initialised, every
rank calls ``fit``. Either every rank passes the whole training set (each
then trains its share of every batch), or each passes its own part, its
shard: the fit then joins the parts in rank order on every rank, so that
every rank trains, and ends with, the same model, as if the joined set had
been passed to each. Which of the two it is, the ranks find out by comparing
a digest of what they were given.
"""

import hashlib
import pickle

import numpy as np
import scipy.sparse as sp
import torch.distributed as dist

__all__ = ["group_size", "joined_shards"]


def group_size():
    """The size of the :mod:`torch.distributed` group the caller initialised; 0 without one."""
    return dist.get_world_size() if dist.is_available() and dist.is_initialized() else 0


def joined_shards(data, names):
    """Every rank's ``data`` joined in rank order, or ``data`` itself.

    Parameters
    ----------
    data : tuple
        Row-aligned inputs of a fit (e.g. ``(X, y, sample_weight)``); an
        entry may be ``None`` on every rank.
    names : tuple of str
        The parameter name of each entry, for the error messages.

    Returns
    -------
    data : tuple
        ``data`` itself outside a group, in a group of one, or when every
        rank passed the same; otherwise each entry joined over the ranks.
    rows : slice
        This rank's rows in the returned entries.
    """
    size = group_size()
    if size < 2:
        return data, slice(None)
    digest = hashlib.blake2b(pickle.dumps(data, protocol=pickle.HIGHEST_PROTOCOL)).digest()
    digests = [None] * size
    dist.all_gather_object(digests, digest)
    if len(set(digests)) == 1:
        return data, slice(None)
    parts = [None] * size
    dist.all_gather_object(parts, data)
    joined = tuple(_join([p[i] for p in parts], name) for i, name in enumerate(names))
    sizes = [_n_rows(p[0]) for p in parts]
    rank = dist.get_rank()
    start = sum(sizes[:rank])
    return joined, slice(start, start + sizes[rank])


def _n_rows(value):
    return value.shape[0] if hasattr(value, "shape") else len(value)


def _join(parts, name):
    """The ranks' ``parts`` of one input, one after another."""
    if any(p is None for p in parts):
        if not all(p is None for p in parts):
            raise ValueError(
                f"{name} was passed on some ranks of the torch.distributed group and not on "
                "others; pass it on every rank, or on none."
            )
        return None
    first = parts[0]
    if any(type(p) is not type(first) for p in parts):
        raise TypeError(
            f"The ranks of the torch.distributed group passed {name} of different types "
            f"({sorted({type(p).__name__ for p in parts})}); pass the same kind on every rank."
        )
    if sp.issparse(first):
        return sp.vstack(parts, format=first.format)
    if hasattr(first, "iloc"):
        import pandas as pd

        return pd.concat(parts, ignore_index=True)
    if isinstance(first, (list, tuple)):
        return [row for part in parts for row in part]
    # numpy arrays, and the TokenSequences of a vectorizer (np.concatenate joins them).
    return np.concatenate(parts)
