"""How a classifier reads ``X``: one adapter class per input kind, chosen once in ``fit``.

:func:`read_input` validates ``X`` and finds its kind; ``fit`` learns the
adapter of that kind from it (vocabulary, number of tokens, vector size) and
the estimator keeps it as ``input_adapter_``. Every later call reads ``X``
through that same adapter, which refuses input of another kind or shape,
turns ``X`` into :class:`~sklearn_lama.training._batching.SequenceBatches` and builds
the network's lookup: the embedding tables with their Naive Bayes columns, a
learned embedding, or nothing for inputs that are vectors already.
"""

import numpy as np
import torch
from sklearn.utils.validation import validate_data

from ..text._sequences import TokenSequences
from ..training._batching import SequenceBatches
from ..utils._compatibility import migration

__all__ = [
    "InputAdapter",
    "ScalarFeatureInput",
    "TokenIdInput",
    "TokenSequencesInput",
    "VectorInput",
    "read_input",
    "restore_adapter",
]


class InputAdapter:
    """What ``fit`` learned about its input; reads later inputs and builds the lookup.

    The base class of the four input kinds, one subclass each:

    - ``TokenSequencesInput``: :class:`~sklearn_lama.TokenSequences`, whose
      embedding tables initialise the lookups (with the Naive Bayes columns
      of ``nb_unigram_weight`` and ``nb_bigram_weight``);
    - ``TokenIdInput``: a 2-D integer array of token ids, 0 being padding,
      looked up in an embedding learned from scratch;
    - ``ScalarFeatureInput``: a 2-D float array, one scalar per step;
    - ``VectorInput``: a 3-D float array of token vectors.

    Attributes
    ----------
    description : str
        The input kind, in words.
    kind : str
        The name under which :meth:`export` saves the adapter.
    pretrained : bool
        Whether the input's embedding tables hold pretrained vectors (only
        :class:`~sklearn_lama.TokenSequences` carry tables); parameters set
        to ``"auto"`` resolve by it.
    n_side : int
        Number of side features of each document (only
        :class:`~sklearn_lama.TokenSequences` carry them).
    """

    description = None
    kind = None
    pretrained = False
    n_side = 0
    # Constructor arguments, saved by export() and restored by restore_adapter().
    _fields = ()

    def __repr__(self):
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._fields)
        return f"{type(self).__name__}({fields})"

    def export(self):
        """Plain values that :func:`restore_adapter` turns back into this adapter."""
        state = {"kind": self.kind}
        for name in self._fields:
            value = getattr(self, name)
            state[name] = list(value) if isinstance(value, tuple) else value
        return state

    @classmethod
    def learn(cls, X):
        """The adapter of this kind for ``X``, validated, as ``fit`` sees it."""
        raise NotImplementedError

    def read(self, X, name):
        """``X`` as :class:`~sklearn_lama.training._batching.SequenceBatches`, or a ValueError.

        ``X`` is of this adapter's kind and must match what ``fit`` learned;
        ``name`` is the estimator's, for the messages.
        """
        raise NotImplementedError

    def lookup(self, embedding_dim, naive_bayes, counted=None):
        """:class:`~sklearn_lama.modules.SequenceNetwork` keyword arguments and input widths.

        Parameters
        ----------
        embedding_dim : int
            Width of an embedding learned from scratch.
        naive_bayes : NaiveBayesColumns
            The Naive Bayes columns to append to the vectors of embedding tables.
        counted : TrainingView, default=None
            The training rows, whose batches carry the embedding tables and
            which the Naive Bayes ratios count; ``None`` when the network is
            rebuilt to receive trained weights (only shapes matter then).

        Returns
        -------
        lookup : dict
            Keyword arguments of ``SequenceNetwork``.
        sizes : tuple of int
            Width of the vectors of each table that reach the core.
        """
        raise NotImplementedError


class TokenSequencesInput(InputAdapter):
    """:class:`~sklearn_lama.TokenSequences` over one vocabulary.

    Parameters
    ----------
    vocabulary_id : str
        Fingerprint of the vocabulary.
    vocabulary_size : int
        Rows of the embedding tables.
    embedding_dims : tuple of int
        Width of each embedding table.
    pretrained : bool, default=False
        Whether any table holds pretrained vectors.
    n_side : int, default=0
        Number of side features of each document (``TokenSequences.side``).
    """

    description = "TokenSequences"
    kind = "sequences"
    _fields = ("vocabulary_id", "vocabulary_size", "embedding_dims", "pretrained", "n_side")

    def __init__(self, vocabulary_id, vocabulary_size, embedding_dims, pretrained=False, n_side=0):
        self.vocabulary_id = vocabulary_id
        self.vocabulary_size = vocabulary_size
        self.embedding_dims = tuple(embedding_dims)
        self.pretrained = bool(pretrained)
        self.n_side = int(n_side)

    @classmethod
    def learn(cls, X):
        return cls(
            X.vocabulary_id,
            X.vocabulary_size,
            tuple(t.shape[1] for t in X.tables),
            any(X.pretrained),
            X.n_side,
        )

    def read(self, X, name):
        if X.vocabulary_id != self.vocabulary_id:
            raise ValueError(
                "X was built over a different vocabulary than the one seen in fit "
                f"(vocabulary fingerprint {X.vocabulary_id!r} != "
                f"{self.vocabulary_id!r}); transform it with the vectorizer "
                "fitted together with this classifier."
            )
        if X.n_side != self.n_side:
            raise ValueError(
                f"X has {X.n_side} side features beside its text, but {name} was fitted "
                f"with {self.n_side}: transform it with the column transformer fitted "
                "together with this classifier, on the same columns."
            )
        if X.side is not None:
            _check_finite(X)
        return SequenceBatches(ids=X.ids, offsets=X.offsets, tables=X.tables, side=X.side)

    def lookup(self, embedding_dim, naive_bayes, counted=None):
        if counted is None:
            tables = [np.zeros((self.vocabulary_size, d), np.float32) for d in self.embedding_dims]
        else:
            tables = counted.batches.tables
        features, width = naive_bayes.features(tables, self.vocabulary_size, counted)
        torch_tables = [torch.from_numpy(np.array(t, dtype=np.float32)) for t in tables]
        sizes = tuple(t.shape[1] + width for t in tables)
        return {"tables": torch_tables, **features}, sizes


def _check_finite(X):
    """Refuse side features with missing (NaN) or infinite values, naming the first one."""
    finite = np.isfinite(X.side)
    if finite.all():
        return
    row, column = np.argwhere(~finite)[0]
    what = "missing values (NaN)" if np.isnan(X.side[row, column]) else "infinite values"
    raise ValueError(
        f"Side feature {X.side_name(column)} holds {what} (document {row} first). "
        "The classifiers need every side feature of every document: fill missing "
        "values before scaling, e.g. make_pipeline(SimpleImputer(), StandardScaler()) "
        "on the numeric columns of the ColumnTransformer."
    )


class TokenIdInput(InputAdapter):
    """A 2-D integer array of token ids, 0 being padding (dropped wherever it appears).

    Parameters
    ----------
    vocabulary_size : int
        Rows of the learned embedding: above every id seen in ``fit``.
    """

    description = "a 2-D integer array of token ids"
    kind = "ids"
    _fields = ("vocabulary_size",)

    def __init__(self, vocabulary_size):
        self.vocabulary_size = vocabulary_size

    @classmethod
    def learn(cls, X):
        return cls(max(int(_checked_ids(X).max(initial=0)) + 1, 2))

    def read(self, X, name):
        top = int(_checked_ids(X).max(initial=0))
        if top >= self.vocabulary_size:
            raise ValueError(
                f"X holds token id {top}, but the ids seen in fit were below "
                f"{self.vocabulary_size}."
            )
        real = X != 0
        offsets = np.zeros(len(X) + 1, dtype=np.int64)
        np.cumsum(real.sum(1), out=offsets[1:])
        return SequenceBatches(ids=X[real].astype(np.int32), offsets=offsets)

    def lookup(self, embedding_dim, naive_bayes, counted=None):
        lookup = {"vocabulary_size": self.vocabulary_size, "embedding_dim": embedding_dim}
        return lookup, (embedding_dim,)


def _checked_ids(X):
    if X.size and X.min() < 0:
        raise ValueError("X holds negative token ids; ids must be >= 0 (0 is padding).")
    return X


class VectorInput(InputAdapter):
    """A 3-D float array ``(n, T, d)`` of token vectors.

    Parameters
    ----------
    embedding_dims : tuple of int
        ``(d,)``: the width of the vectors.
    """

    description = "a 3-D float array"
    kind = "dense"
    _fields = ("embedding_dims",)

    def __init__(self, embedding_dims):
        self.embedding_dims = tuple(embedding_dims)

    @classmethod
    def _vectors(cls, X):
        return X.astype(np.float32, copy=False)

    @classmethod
    def learn(cls, X):
        return cls((cls._vectors(X).shape[2],))

    def read(self, X, name):
        dense = self._vectors(X)
        if dense.shape[2] != self.embedding_dims[0]:
            raise ValueError(
                f"X has {dense.shape[2]} values per token, but {name} was fitted with "
                f"{self.embedding_dims[0]}."
            )
        return SequenceBatches(dense=dense)

    def lookup(self, embedding_dim, naive_bayes, counted=None):
        return {}, self.embedding_dims


class ScalarFeatureInput(VectorInput):
    """A 2-D float array ``(n, T)``: a sequence of ``T`` scalar features, vectors of width 1."""

    description = "a 2-D float array"
    kind = "features"
    _fields = ()

    def __init__(self):
        super().__init__((1,))

    @classmethod
    def _vectors(cls, X):
        return super()._vectors(X)[:, :, None]

    @classmethod
    def learn(cls, X):
        return cls()


_KINDS = {
    kind.kind: kind
    for kind in (TokenSequencesInput, TokenIdInput, ScalarFeatureInput, VectorInput)
}


def restore_adapter(state):
    """The adapter that :meth:`InputAdapter.export` described."""
    kind = _KINDS[state["kind"]]
    # A field added since the file was written (TokenSequences' n_side) takes its default.
    return kind(**{name: state[name] for name in kind._fields if name in state})


@migration("0.9.0")
def _sequences_record_pretrained_tables(node):
    """0.9.0 → 0.10.0: a TokenSequences input records whether its tables are pretrained.

    0.9.0 did not tell: its files read as not pretrained, so a parameter set
    to ``"auto"`` keeps the value it had for them.
    """
    state = node.get("state")
    adapter = state.get("input") if isinstance(state, dict) else None
    if isinstance(adapter, dict) and adapter.get("kind") == "sequences":
        adapter.setdefault("pretrained", False)
    return node


def _looks_like_text(X):
    if isinstance(X, (str, bytes)):
        return True
    if isinstance(X, np.ndarray):
        return X.dtype.kind in "USO" and X.size > 0 and isinstance(X.flat[0], (str, bytes))
    if isinstance(X, (list, tuple)) or hasattr(X, "iloc"):
        first = X.iloc[0] if hasattr(X, "iloc") and len(X) else (X[0] if len(X) else None)
        return isinstance(first, (str, bytes))
    return False


def read_input(estimator, X, y=None, reset=False):
    """Validate ``X`` (and ``y``) for ``estimator``; return ``(adapter, batches, y)``.

    With ``reset``, the adapter is learned from ``X``; without, ``X`` must be
    of the kind of ``estimator.input_adapter_`` and match it (``y``, when
    given, is validated too). ``batches`` are ``X`` as
    :class:`~sklearn_lama.training._batching.SequenceBatches`.
    """
    name = type(estimator).__name__
    if isinstance(X, TokenSequences):
        kind = TokenSequencesInput
        if reset or y is not None:
            if y is None:
                raise ValueError(
                    f"This {name} estimator requires y to be passed, but the target y is None."
                )
            y = validate_data(estimator, X="no_validation", y=y, multi_output=True)
            if len(y) != len(X):
                raise ValueError(f"X holds {len(X)} documents but y holds {len(y)} labels.")
        if reset and hasattr(estimator, "n_features_in_"):
            del estimator.n_features_in_
    else:
        if _looks_like_text(X):
            raise TypeError(
                f"{name} takes token sequences, not raw text: put a Word2VecVectorizer "
                f"before it, e.g. Pipeline([('emb', Word2VecVectorizer()), ('clf', {name}())])."
            )
        if reset or y is not None:
            X, y = validate_data(
                estimator, X, y, dtype="numeric", allow_nd=True, multi_output=True, reset=reset
            )
        else:
            X = validate_data(estimator, X, dtype="numeric", allow_nd=True, reset=False)
        if X.ndim > 3:
            raise ValueError(
                "X must be 2-D (n_documents, n_tokens) or 3-D (n_documents, n_tokens, "
                f"n_dims); got {X.ndim} dimensions."
            )
        if X.ndim == 3:
            kind = VectorInput
        else:
            kind = TokenIdInput if X.dtype.kind in "iu" else ScalarFeatureInput
    if reset:
        adapter = kind.learn(X)
    else:
        adapter = estimator.input_adapter_
        if type(adapter) is not kind:
            raise ValueError(
                f"This {name} was fitted on {adapter.description}, but X is {kind.description}."
            )
    return adapter, adapter.read(X, name), y
