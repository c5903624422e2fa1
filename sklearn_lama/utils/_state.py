"""Pickled estimators that any serializer can carry: numpy arrays and plain values.

A fitted estimator of the package pickles (``pickle``, ``joblib``,
``copy.deepcopy``, skops) as its parameters and, in place of its fitted
attributes, what its ``_export_state()`` returns (the state that
:func:`~sklearn_lama.save_weights` stores) with every tensor as a numpy
array on the CPU: no torch tensor, module, optimizer or skorch net. The
net is rebuilt from it when the pickle is loaded, on the estimator's
``device`` (the CPU, with a warning, where that device is absent), with
the weights, optimizer moments and history it had, so ``warm_start``
continues training. The state names the release that wrote it, and is
upgraded to the loading release as a weights file is
(:mod:`._compatibility`); the pickles of 0.9.0, whose fitted attributes
were the objects themselves (a skorch net), are read too.
"""

import numpy as np
import torch

from .._version import __version__
from ._compatibility import OLDEST_READABLE, check_readable, defaults, upgrade
from ._persistence import REGISTERED_ESTIMATORS, SCALAR_TYPES

__all__ = ["PortableState", "plain_state", "proto_array", "skops_trusted_types", "tensor_state"]

# The keys of the pickled state that hold the release and the fitted state.
VERSION_KEY = "_sklearn_lama_version"
STATE_KEY = "_sklearn_lama_state"


class PortableState:
    """Mixin: pickle a fitted estimator as numpy arrays and plain values.

    The estimator implements ``_export_state()`` (its fitted state as plain
    values, numpy arrays and tensors) and ``_import_state(state)``, which
    takes that state with each numeric array as a tensor and sets every
    fitted attribute (those ending in ``_``).
    """

    def __getstate__(self):
        state = super().__getstate__()
        kept = {k: v for k, v in state.items() if not _fitted(k)}
        kept[VERSION_KEY] = __version__
        if any(_fitted(k) for k in state):
            kept[STATE_KEY] = plain_state(self._export_state(), f"{type(self).__name__} state")
        return kept

    def __setstate__(self, state):
        state = dict(state)
        # The pickles of 0.9.0 name no release.
        saved = state.pop(VERSION_KEY, OLDEST_READABLE)
        name = f"the pickled {type(self).__name__}"
        check_readable(saved, name)
        if STATE_KEY in state:
            fitted = tensor_state(state.pop(STATE_KEY))
        elif any(_fitted(k) for k in state):
            fitted = tensor_state(plain_state(_exported_by_0_9(state), name))
        else:
            fitted = None
        params = {k: state.pop(k) for k in list(state) if not k.startswith("_") and not _fitted(k)}
        for k in [k for k in state if _fitted(k)]:
            del state[k]
        node = {"class": type(self).__name__, "params": params}
        if fitted is not None:
            node["state"] = fitted
        node = upgrade(node, saved, type(self), name)
        super().__setstate__({**state, **defaults(type(self)), **node["params"]})
        if fitted is not None:
            # The net is rebuilt without touching the caller's random numbers.
            self._import_state(node["state"])


def skops_trusted_types():
    """The names of this package's estimator types, for skops' and MLflow's ``trusted`` lists.

    A skops file names the type of every object in it, and ``skops.io.load``
    builds only the types it trusts: numpy arrays, Python's built-in values
    and scikit-learn's estimators (such as ``Pipeline``) by default, and the
    types listed in its ``trusted`` argument. A fitted estimator of this
    package holds only such values, so these names are the whole list to
    pass for a pipeline of them: :class:`LAMAClassifier`,
    :class:`FCSRClassifier`, :class:`DuoClassifier`,
    :class:`Word2VecVectorizer`, :class:`MetaEmbeddingTransformer` and
    :class:`DuoTranslator`. A parameter that holds code (``callbacks``, a
    callable ``tokenizer``) adds its own types, which ``skops.io.dump``
    writes only where it can and ``skops.io.get_untrusted_types`` lists, as
    it lists scikit-learn's own types that skops does not know (scikit-learn
    1.6's ``ColumnTransformer`` holds a ``_RemainderColsList``).

    Returns
    -------
    names : list of str
        The types' full names (``"sklearn_lama.classification._lama.LAMAClassifier"``,
        ...), sorted.

    See Also
    --------
    save_weights : This package's own file that loads without running code.

    Notes
    -----
    MLflow 3 saves scikit-learn models with skops by default;
    ``mlflow.sklearn.save_model(pipe, path, skops_trusted_types=skops_trusted_types())``
    (or ``log_model``) records the list with the model, which
    ``mlflow.sklearn.load_model`` and ``mlflow.pyfunc.load_model`` then
    read (MLflow asks for ``MLFLOW_ALLOW_PICKLE_DESERIALIZATION=true`` to
    load a model it has not just written).

    .. versionadded:: 0.10.0

    Examples
    --------
    >>> import numpy as np
    >>> import skops.io
    >>> from sklearn_lama import LAMAClassifier, skops_trusted_types
    >>> X = np.random.RandomState(0).randint(1, 10, size=(20, 5))
    >>> y = X[:, 0] > 5
    >>> clf = LAMAClassifier(n_heads=2, hidden_size=4, mlp_hidden=8, max_epochs=2,
    ...                      random_state=0).fit(X, y)
    >>> data = skops.io.dumps(clf)
    >>> skops.io.get_untrusted_types(data=data)
    ['sklearn_lama.classification._lama.LAMAClassifier']
    >>> loaded = skops.io.loads(data, trusted=skops_trusted_types())
    >>> bool(np.array_equal(loaded.predict_proba(X), clf.predict_proba(X)))
    True
    """
    return sorted(f"{cls.__module__}.{cls.__qualname__}" for cls in REGISTERED_ESTIMATORS.values())


def _fitted(key):
    # scikit-learn's convention: fitted attributes end in "_" (dunder names aside).
    return key.endswith("_") and not key.startswith("__")


def plain_state(value, where):
    """``value`` with every tensor as a numpy array (on the CPU) and numpy scalars as Python's.

    Dicts (``OrderedDict`` too), lists and tuples are copied with their
    items converted; anything but plain values and numeric or string numpy
    arrays raises a TypeError naming its place ``where``.
    """
    if isinstance(value, torch.Tensor):
        return value.detach().cpu().numpy()
    if isinstance(value, np.ndarray) and value.dtype.kind in "biufU":
        return value
    if isinstance(value, np.generic) and value.dtype.kind in "biufU":
        return value.item()
    if type(value) in SCALAR_TYPES:
        return value
    if isinstance(value, dict):
        return {k: plain_state(v, f"{where}[{k!r}]") for k, v in value.items()}
    if type(value) in (list, tuple):
        return type(value)(plain_state(v, f"{where}[{i}]") for i, v in enumerate(value))
    raise TypeError(f"{where} holds a {type(value).__name__}, which a pickled state cannot hold.")


def proto_array(model):
    """The serialised SentencePiece model ``model.proto`` as a uint8 array (``None``: ``None``)."""
    return None if model is None else np.frombuffer(model.proto, dtype=np.uint8).copy()


def tensor_state(value):
    """``value`` of :func:`plain_state` with every numeric numpy array as a tensor.

    The state an estimator's ``_import_state`` receives, as from a weights
    file. A read-only array (joblib's memory map) is copied.
    """
    if isinstance(value, np.ndarray) and value.dtype.kind in "biuf":
        return torch.from_numpy(value if value.flags.writeable else value.copy())
    if isinstance(value, dict):
        return {k: tensor_state(v) for k, v in value.items()}
    if type(value) in (list, tuple):
        return type(value)(tensor_state(v) for v in value)
    return value


# ------------------------------------------------------------- release 0.9.0
# The fitted attributes of 0.9.0's estimators, as its _export_state exported them.
# Written against 0.9.0's attributes, not the current code: the migrations
# then upgrade the result as they upgrade a file of 0.9.0.
_OPTIMIZER_NAMES_0_9 = {"SGD": "sgd", "Adam": "adam"}


def _exported_by_0_9(attributes):
    """The state that 0.9.0's ``_export_state`` returned, from a 0.9.0 pickle's attributes."""
    if "target_encoder_" in attributes:
        return _classifier_0_9(attributes)
    if "target_subwords_" in attributes:
        return _translator_0_9(attributes)
    if "embeddings_" in attributes:
        return {
            "words": list(attributes["vocabulary_"]),
            "embeddings": list(attributes["embeddings_"]),
            "coverage": dict(attributes["coverage_"]),
        }
    return {
        "words": list(attributes["vocabulary_"]),
        "embedding": attributes["embedding_"],
        "coverage": attributes["coverage_"],
    }


def _training_0_9(net):
    return {
        "network": net.module_.state_dict(),
        "optimizer": _OPTIMIZER_NAMES_0_9[type(net.optimizer_).__name__],
        "optimizer_state": net.optimizer_.state_dict()["state"],
        "history": net.history.to_list(),
    }


def _classifier_0_9(attributes):
    temperature = attributes["temperature_"]
    state = {
        "input": attributes["input_adapter_"].export(),
        "target": attributes["target_encoder_"].export(),
        "temperature": None if temperature is None else temperature.tolist(),
        "checkpoint_path": attributes["checkpoint_path_"],
        **_training_0_9(attributes["net_"]),
    }
    if "n_features_in_" in attributes:
        state["n_features_in"] = attributes["n_features_in_"]
    return state


def _translator_0_9(attributes):
    net = attributes["net_"]
    return {
        "target_subwords": proto_array(attributes["target_subwords_"]),
        "source_subwords": proto_array(attributes["source_subwords_"]),
        "vocabulary_id": attributes["vocabulary_id_"],
        "best_epoch": attributes["best_epoch_"] or len(net.history),
        "checkpoint_path": attributes["checkpoint_path_"],
        **_training_0_9(net),
    }
