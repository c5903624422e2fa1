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
    side : array-like of shape (n_documents, n_side), default=None
        Side features of each document (numeric columns beside the text,
        e.g. scaled or one-hot encoded), stored as ``float32``; ``None``:
        none. The classifiers add them to the document representation.
    side_names : sequence of str, default=None
        A name for each side feature (the error messages use them);
        ``None`` numbers them.

    Attributes
    ----------
    lengths : ndarray of shape (n_documents,)
        Number of tokens of each document.
    n_side : int
        Number of side features (0 without).

    Notes
    -----
    The container is a table of ``n_documents`` rows: its first column holds
    the documents, the ``n_side`` others the side features, so ``shape`` is
    ``(n_documents, 1 + n_side)``. That makes it one more output that
    :class:`~sklearn.compose.ColumnTransformer` can join: ``numpy.hstack``
    of a container and 2-D arrays (what the column transformer calls on its
    transformers' dense outputs) returns the container with the arrays
    appended to its side features, its ids and tables shared, not copied.
    ``numpy.concatenate`` of containers over one vocabulary (with the same
    side features) returns one container of their documents in turn.
    Converting a container to a numpy array is refused: a document is not a
    number.

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

    def __init__(
        self, ids, offsets, tables, vocabulary_id, pretrained=None, side=None, side_names=None
    ):
        self.ids = np.asarray(ids, dtype=np.int32).reshape(-1)
        self.offsets = np.asarray(offsets, dtype=np.int64).reshape(-1)
        self.tables = tuple(tables)
        self.vocabulary_id = str(vocabulary_id)
        self.pretrained = (
            (False,) * len(self.tables) if pretrained is None else tuple(map(bool, pretrained))
        )
        self.side = None if side is None else np.asarray(side, dtype=np.float32)
        self.side_names = None if side_names is None else tuple(map(str, side_names))
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
        if self.side is not None and (self.side.ndim != 2 or len(self.side) != len(self)):
            raise ValueError(
                f"side must be a 2-D array with one row per document ({len(self)}); got "
                f"shape {self.side.shape}."
            )
        if self.side_names is not None and len(self.side_names) != self.n_side:
            raise ValueError(
                f"side_names must name each of the {self.n_side} side features, got "
                f"{len(self.side_names)} names."
            )

    @property
    def vocabulary_size(self):
        """Number of rows of every embedding table (padding and OOV rows included)."""
        return self.tables[0].shape[0]

    @property
    def lengths(self):
        return np.diff(self.offsets)

    @property
    def n_side(self):
        return 0 if self.side is None else self.side.shape[1]

    @property
    def shape(self):
        """``(n_documents, 1 + n_side)``: the documents' column, then the side features."""
        return (len(self.offsets) - 1, 1 + self.n_side)

    @property
    def size(self):
        """``n_documents * (1 + n_side)``: the number of cells, as numpy counts them.

        scikit-learn's :class:`~sklearn.compose.ColumnTransformer` reads it of
        every dense output to decide whether to stack sparsely (releases 1.6
        and 1.7 before any ``sparse_threshold`` test).
        """
        return self.shape[0] * self.shape[1]

    ndim = 2

    def __len__(self):
        return len(self.offsets) - 1

    def __repr__(self):
        dims = ", ".join(str(t.shape[1]) for t in self.tables)
        side = f", n_side={self.n_side}" if self.n_side else ""
        return (
            f"TokenSequences(n_documents={len(self)}, n_tokens={self.ids.size}, "
            f"vocabulary_size={self.vocabulary_size}, embedding_dims=({dims}){side})"
        )

    def side_name(self, j):
        """The name of side feature ``j``: its given name, else its position among them."""
        if self.side_names is not None:
            return repr(self.side_names[j])
        return f"{j} (of {self.n_side})"

    def with_side(self, side, side_names=None):
        """These documents with ``side`` appended to their side features.

        Parameters
        ----------
        side : array-like of shape (n_documents, k)
            Numeric features of each document.
        side_names : sequence of str, default=None
            Their names; ``None`` leaves the side features unnamed.

        Returns
        -------
        sequences : TokenSequences
            The same ids and tables (shared) with ``n_side + k`` side features.
        """
        side = _numeric_columns(side, len(self))
        names = None
        if side_names is not None and (self.n_side == 0 or self.side_names is not None):
            names = (*(self.side_names or ()), *side_names)
        joined = side if self.side is None else np.hstack([self.side, side])
        return TokenSequences(
            self.ids,
            self.offsets,
            self.tables,
            self.vocabulary_id,
            self.pretrained,
            joined,
            names,
        )

    def __array__(self, dtype=None, copy=None):
        raise TypeError(
            "TokenSequences cannot become a numpy array: its first column holds "
            "documents. A ColumnTransformer joins it to the other columns when their "
            "outputs are dense; one that stacks a sparse output (OneHotEncoder's "
            "default, when the joined columns are mostly zeros) needs "
            "sparse_threshold=0 or OneHotEncoder(sparse_output=False)."
        )

    def __array_function__(self, func, types, args, kwargs):
        # ColumnTransformer joins its transformers' dense outputs with np.hstack.
        if func is np.hstack:
            return _join_columns(*args, **kwargs)
        if func is np.concatenate:
            return _join_rows(*args, **kwargs)
        raise TypeError(f"numpy.{func.__name__} does not apply to TokenSequences.")

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
        new.side = None if self.side is None else self.side[index]
        new.side_names = self.side_names
        return new

    def __setstate__(self, state):
        # Containers pickled before side features existed have none.
        state.setdefault("side", None)
        state.setdefault("side_names", None)
        self.__dict__.update(state)


def _numeric_columns(values, n):
    """``values`` as a ``float32`` array of ``n`` rows (sparse matrices made dense)."""
    if hasattr(values, "toarray"):
        values = values.toarray()
    values = np.asarray(values)
    if values.ndim == 1:
        values = values[:, None]
    if values.ndim != 2 or len(values) != n:
        raise ValueError(
            f"side features must be a 2-D array of {n} rows, got shape {values.shape}."
        )
    if values.dtype.kind not in "biuf":
        raise TypeError(
            f"side features must be numeric, got dtype {values.dtype}: encode "
            "categorical columns first, e.g. with OneHotEncoder."
        )
    return values.astype(np.float32)


def _join_columns(arrays, dtype=None, casting="same_kind"):
    """``np.hstack`` of one :class:`TokenSequences` and 2-D arrays: the container, extended.

    The arrays become side features in their order; a frame's column names
    become their names.
    """
    arrays = list(arrays)
    documents = [a for a in arrays if isinstance(a, TokenSequences)]
    if len(documents) != 1:
        raise ValueError(
            f"Only one text column can be joined to side features, got {len(documents)} "
            "TokenSequences; join several text fields into one column."
        )
    joined = documents[0]
    for values in arrays:
        if values is joined:
            continue
        columns = getattr(values, "columns", None)
        names = None if columns is None else [str(c) for c in columns]
        joined = joined.with_side(values, names)
    return joined


def _join_rows(parts, axis=0):
    """``np.concatenate`` of :class:`TokenSequences` over one vocabulary: all their documents."""
    parts = list(parts)
    if axis != 0 or not all(isinstance(p, TokenSequences) for p in parts):
        raise TypeError(
            "numpy.concatenate joins TokenSequences only with other TokenSequences, "
            "along the documents (axis=0)."
        )
    first = parts[0]
    if len({p.vocabulary_id for p in parts}) != 1:
        raise ValueError(
            "TokenSequences over different vocabularies cannot be joined: their ids "
            "refer to different words. Fit one vectorizer and transform every part with it."
        )
    if len({p.n_side for p in parts}) != 1 or len({p.side_names for p in parts}) != 1:
        raise ValueError(
            "TokenSequences with different side features cannot be joined; got "
            f"{sorted({p.n_side for p in parts})} side features."
        )
    starts = np.cumsum([0] + [p.ids.size for p in parts[:-1]], dtype=np.int64)
    offsets = [first.offsets[:1]] + [p.offsets[1:] + s for p, s in zip(parts, starts)]
    return TokenSequences(
        np.concatenate([p.ids for p in parts]),
        np.concatenate(offsets),
        first.tables,
        first.vocabulary_id,
        first.pretrained,
        None if first.side is None else np.concatenate([p.side for p in parts]),
        first.side_names,
    )


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
