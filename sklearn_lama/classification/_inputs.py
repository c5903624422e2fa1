"""How a classifier reads ``X``: one adapter per input kind, chosen once in ``fit``.

``fit`` looks at ``X`` and picks the adapter of its kind, which learns what
later inputs must match (vocabulary, number of tokens, vector size); the
estimator keeps it as ``input_adapter_``. Every later call validates ``X``
through that same adapter, which also says how the network looks tokens up.
"""

import numpy as np
import torch
from sklearn.utils.validation import validate_data

from ..text._sequences import TokenSequences
from ..training._batching import SequenceBatches

__all__ = ["InputAdapter", "check_input", "restore_adapter"]


def _looks_like_text(X):
    if isinstance(X, (str, bytes)):
        return True
    if isinstance(X, np.ndarray):
        return X.dtype.kind in "USO" and X.size > 0 and isinstance(X.flat[0], (str, bytes))
    if isinstance(X, (list, tuple)) or hasattr(X, "iloc"):
        first = X.iloc[0] if hasattr(X, "iloc") and len(X) else (X[0] if len(X) else None)
        return isinstance(first, (str, bytes))
    return False


class InputAdapter:
    """What ``fit`` learned about its input kind; validates and batches later inputs.

    Attributes
    ----------
    kind : {"sequences", "ids", "features", "dense"}
        :class:`~sklearn_lama.TokenSequences`, a 2-D integer array of token
        ids, a 2-D float array (one scalar per step) or a 3-D float array of
        token vectors.
    vocabulary_id : str or None
        Fingerprint of the vocabulary (``"sequences"`` only).
    vocabulary_size : int or None
        Rows of the embedding tables (``"sequences"``, ``"ids"``).
    embedding_dims : tuple of int or None
        Width of each embedding table or of the token vectors.
    """

    kinds = {
        "sequences": "TokenSequences",
        "ids": "a 2-D integer array of token ids",
        "features": "a 2-D float array",
        "dense": "a 3-D float array",
    }

    def __init__(self, kind, vocabulary_id=None, vocabulary_size=None, embedding_dims=None):
        if kind not in self.kinds:
            raise ValueError(f"unknown input kind {kind!r}")
        self.kind = kind
        self.vocabulary_id = vocabulary_id
        self.vocabulary_size = vocabulary_size
        self.embedding_dims = None if embedding_dims is None else tuple(embedding_dims)

    def __repr__(self):
        fields = ", ".join(
            f"{name}={value!r}" for name, value in self.export().items() if value is not None
        )
        return f"InputAdapter({fields})"

    @property
    def description(self):
        return self.kinds[self.kind]

    def export(self):
        """Plain values that :func:`restore_adapter` turns back into this adapter."""
        return {
            "kind": self.kind,
            "vocabulary_id": self.vocabulary_id,
            "vocabulary_size": self.vocabulary_size,
            "embedding_dims": None if self.embedding_dims is None else list(self.embedding_dims),
        }

    def lookup(self, tables, embedding_dim):
        """``SequenceNetwork`` keyword arguments and the sizes of the core's inputs.

        ``tables`` are the embedding tables of a ``"sequences"`` input (those
        of the training data, or placeholders of their shapes when the
        network is rebuilt to receive trained weights); other kinds ignore
        them.
        """
        if self.kind == "sequences":
            torch_tables = [torch.from_numpy(np.array(t, dtype=np.float32)) for t in tables]
            return {"tables": torch_tables}, tuple(t.shape[1] for t in tables)
        if self.kind == "ids":
            lookup = {"vocabulary_size": self.vocabulary_size, "embedding_dim": embedding_dim}
            return lookup, (embedding_dim,)
        return {}, self.embedding_dims


def restore_adapter(state):
    """The adapter that :meth:`InputAdapter.export` described."""
    return InputAdapter(**state)


def check_input(estimator, X, y=None, reset=False):
    """Validate ``X`` (and ``y``) for ``estimator``; return ``(adapter, batches, y, tables)``.

    With ``reset``, the adapter is learned from ``X``; without, ``X`` must
    match ``estimator.input_adapter_`` (``y``, when given, is validated too).
    ``tables`` are the embedding tables carried by a ``TokenSequences``.
    """
    name = type(estimator).__name__
    fitted = None if reset else estimator.input_adapter_
    if isinstance(X, TokenSequences):
        if reset or y is not None:
            if y is None:
                raise ValueError(
                    f"This {name} estimator requires y to be passed, but the target y is None."
                )
            y = validate_data(estimator, X="no_validation", y=y)
            if len(y) != len(X):
                raise ValueError(f"X holds {len(X)} documents but y holds {len(y)} labels.")
        if reset:
            if hasattr(estimator, "n_features_in_"):
                del estimator.n_features_in_
            adapter = InputAdapter(
                "sequences",
                vocabulary_id=X.vocabulary_id,
                vocabulary_size=X.vocabulary_size,
                embedding_dims=tuple(t.shape[1] for t in X.tables),
            )
        else:
            adapter = fitted
            _check_kind(name, adapter, "sequences")
            if X.vocabulary_id != adapter.vocabulary_id:
                raise ValueError(
                    "X was built over a different vocabulary than the one seen in fit "
                    f"(vocabulary fingerprint {X.vocabulary_id!r} != "
                    f"{adapter.vocabulary_id!r}); transform it with the vectorizer "
                    "fitted together with this classifier."
                )
        return adapter, SequenceBatches(ids=X.ids, offsets=X.offsets), y, X.tables

    if _looks_like_text(X):
        raise TypeError(
            f"{name} takes token sequences, not raw text: put a Word2VecVectorizer "
            f"before it, e.g. Pipeline([('emb', Word2VecVectorizer()), ('clf', {name}())])."
        )
    if reset or y is not None:
        X, y = validate_data(estimator, X, y, dtype="numeric", allow_nd=True, reset=reset)
    else:
        X = validate_data(estimator, X, dtype="numeric", allow_nd=True, reset=False)
    if X.ndim > 3:
        raise ValueError(
            "X must be 2-D (n_documents, n_tokens) or 3-D (n_documents, n_tokens, "
            f"n_dims); got {X.ndim} dimensions."
        )
    kind = ("ids" if X.dtype.kind in "iu" else "features") if X.ndim == 2 else "dense"
    if kind == "ids":
        adapter, batches = _id_batches(name, X, fitted)
        return adapter, batches, y, None
    dense = X.astype(np.float32, copy=False)
    if dense.ndim == 2:
        dense = dense[:, :, None]
    if reset:
        adapter = InputAdapter(kind, embedding_dims=(dense.shape[2],))
    else:
        adapter = fitted
        _check_kind(name, adapter, kind)
        if dense.shape[2] != adapter.embedding_dims[0]:
            raise ValueError(
                f"X has {dense.shape[2]} values per token, but {name} was fitted with "
                f"{adapter.embedding_dims[0]}."
            )
    return adapter, SequenceBatches(dense=dense), y, None


def _check_kind(name, adapter, kind):
    if adapter.kind != kind:
        raise ValueError(
            f"This {name} was fitted on {adapter.description}, but X is "
            f"{InputAdapter.kinds[kind]}."
        )


def _id_batches(name, X, fitted):
    if X.size and X.min() < 0:
        raise ValueError("X holds negative token ids; ids must be >= 0 (0 is padding).")
    top = int(X.max(initial=0))
    if fitted is None:
        adapter = InputAdapter("ids", vocabulary_size=max(top + 1, 2))
    else:
        adapter = fitted
        _check_kind(name, adapter, "ids")
        if top >= adapter.vocabulary_size:
            raise ValueError(
                f"X holds token id {top}, but the ids seen in fit were below "
                f"{adapter.vocabulary_size}."
            )
    real = X != 0
    offsets = np.zeros(len(X) + 1, dtype=np.int64)
    np.cumsum(real.sum(1), out=offsets[1:])
    return adapter, SequenceBatches(ids=X[real].astype(np.int32), offsets=offsets)
