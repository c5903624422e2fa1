"""The sequence container: token ids of many documents plus the tables they index."""

import numbers

import numpy as np

__all__ = ["TokenSequences"]

PAD_ID = 0
OOV_ID = 1
N_RESERVED = 2  # rows 0 (padding) and 1 (out-of-vocabulary) of every table


class TokenSequences:
    """Ragged token ids for ``n`` documents together with their embedding tables.

    This is what :class:`~sklearn_lama.Word2VecVectorizer` and
    :class:`~sklearn_lama.MetaEmbeddingTransformer` emit and what the classifiers
    consume. The ids of all documents are stored in one flat ``int32`` array with
    ``n + 1`` offsets, so memory is linear in the total number of tokens; the
    embedding tables are shared, never copied, when the container is indexed.

    Parameters
    ----------
    ids : array-like of int, shape (n_tokens,)
        Token ids of all documents, concatenated. Id ``0`` is reserved for
        padding and id ``1`` for out-of-vocabulary words.
    offsets : array-like of int, shape (n_documents + 1,)
        Document ``i`` holds ``ids[offsets[i]:offsets[i + 1]]``.
    tables : tuple of ndarray of shape (vocabulary_size, d_i)
        One or more ``float32`` embedding tables over the same vocabulary.
    vocabulary_id : str
        Fingerprint of the vocabulary the ids refer to. Estimators remember it in
        ``fit`` and refuse containers built over another vocabulary.
    pretrained : sequence of bool, default=None
        For each table, whether its vectors were pretrained on other text
        (read from a file or a published table, e.g. GloVe) rather than
        trained on the corpus; the classifiers choose some defaults by it.
        ``None``: none is.

    Attributes
    ----------
    lengths : ndarray of shape (n_documents,)
        Number of tokens of each document.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_lama import TokenSequences
    >>> table = np.zeros((4, 2), dtype=np.float32)
    >>> seqs = TokenSequences([2, 3, 3, 2, 1], [0, 2, 5], (table,), "toy")
    >>> len(seqs), seqs.lengths.tolist()
    (2, [2, 3])
    >>> seqs[[1]].document(0).tolist()
    [3, 2, 1]
    """

    def __init__(self, ids, offsets, tables, vocabulary_id, pretrained=None):
        self.ids = np.asarray(ids, dtype=np.int32).reshape(-1)
        self.offsets = np.asarray(offsets, dtype=np.int64).reshape(-1)
        self.tables = tuple(tables)
        self.vocabulary_id = str(vocabulary_id)
        self.pretrained = (
            (False,) * len(self.tables) if pretrained is None else tuple(map(bool, pretrained))
        )
        self._check()

    def _check(self):
        if self.offsets.size == 0 or self.offsets[0] != 0:
            raise ValueError("offsets must start with 0.")
        if np.any(np.diff(self.offsets) < 0) or self.offsets[-1] != self.ids.size:
            raise ValueError(
                "offsets must be non-decreasing and end at the number of ids "
                f"({self.ids.size}), got last offset {self.offsets[-1]}."
            )
        if not self.tables:
            raise ValueError("tables must hold at least one embedding table.")
        if len(self.pretrained) != len(self.tables):
            raise ValueError(
                f"pretrained must say it of each of the {len(self.tables)} tables, got "
                f"{len(self.pretrained)} values."
            )
        sizes = {t.shape[0] for t in self.tables}
        if any(t.ndim != 2 for t in self.tables) or len(sizes) != 1:
            raise ValueError(
                "All embedding tables must be 2-D and share one vocabulary; got "
                f"shapes {[t.shape for t in self.tables]}."
            )
        if self.ids.size and (self.ids.min() < 0 or self.ids.max() >= self.vocabulary_size):
            raise ValueError(
                f"Token ids must lie in [0, {self.vocabulary_size}) for a vocabulary "
                f"of {self.vocabulary_size} rows; got ids in "
                f"[{self.ids.min()}, {self.ids.max()}]."
            )

    @property
    def vocabulary_size(self):
        """Number of rows of every embedding table (padding and OOV rows included)."""
        return self.tables[0].shape[0]

    @property
    def lengths(self):
        return np.diff(self.offsets)

    @property
    def shape(self):
        """``(n_documents,)``, so that scikit-learn counts samples correctly."""
        return (len(self.offsets) - 1,)

    def __len__(self):
        return len(self.offsets) - 1

    def __repr__(self):
        dims = ", ".join(str(t.shape[1]) for t in self.tables)
        return (
            f"TokenSequences(n_documents={len(self)}, n_tokens={self.ids.size}, "
            f"vocabulary_size={self.vocabulary_size}, embedding_dims=({dims}))"
        )

    def document(self, i):
        """Token ids of document ``i`` (a view, not a copy)."""
        return self.ids[self.offsets[i] : self.offsets[i + 1]]

    def __getitem__(self, key):
        # scikit-learn indexes with ``X[key, ...]``; the ellipsis adds nothing here.
        if isinstance(key, tuple):
            if len(key) == 2 and key[1] is Ellipsis:
                key = key[0]
            else:
                raise IndexError("TokenSequences supports indexing along documents only.")
        n = len(self)
        if isinstance(key, numbers.Integral):
            key = [key]
        if isinstance(key, slice):
            index = np.arange(n)[key]
        else:
            index = np.asarray(key)
            if index.dtype == bool:
                if index.shape != (n,):
                    raise IndexError(
                        f"Boolean index of shape {index.shape} does not match {n} documents."
                    )
                index = np.flatnonzero(index)
            elif index.size == 0:
                index = index.astype(np.intp)
            elif index.dtype.kind not in "iu":
                raise IndexError(f"Cannot index TokenSequences with dtype {index.dtype}.")
            index = np.where(index < 0, index + n, index)
            if index.size and (index.min() < 0 or index.max() >= n):
                raise IndexError(f"Document index out of range for {n} documents.")
        return self._take(index)

    def _take(self, index):
        lengths = self.lengths[index]
        offsets = np.zeros(len(index) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        starts = self.offsets[:-1][index]
        # Gather every token of the chosen documents in one vectorised pass:
        # position p of the output comes from starts[doc(p)] + (p - offsets[doc(p)]).
        doc_of_token = np.repeat(np.arange(len(index)), lengths)
        source = starts[doc_of_token] + (np.arange(offsets[-1]) - offsets[:-1][doc_of_token])
        new = object.__new__(TokenSequences)
        new.ids = self.ids[source]
        new.offsets = offsets
        new.tables = self.tables
        new.vocabulary_id = self.vocabulary_id
        new.pretrained = self.pretrained
        return new


def pad_ragged(ids, offsets, index, min_len=1):
    """Pad the documents ``index`` of a ragged id array into a dense ``(B, T)`` array.

    ``T`` is the longest of the chosen documents (at least ``min_len``), so
    padding is per batch; returns the padded ids and the true lengths.
    """
    index = np.asarray(index)
    starts = offsets[index]
    lengths = offsets[index + 1] - starts
    width = max(int(lengths.max(initial=0)), min_len)
    out = np.zeros((len(index), width), dtype=np.int64)
    rows = np.repeat(np.arange(len(index)), lengths)
    cols = np.arange(lengths.sum()) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    out[rows, cols] = ids[starts[rows] + cols]
    return out, lengths
