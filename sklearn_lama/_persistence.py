"""Weights-only files: fitted estimators saved so that loading them runs no code.

A pickle (``pickle``, ``joblib``) rebuilds objects by calling whatever the
file names, so loading one from untrusted storage runs untrusted code. The
files written here hold only tensors and plain values (dict, list, tuple, str,
int, float, bool, None); they are read with ``torch.load(weights_only=True)``,
which refuses anything else, and estimator classes are looked up by name in
the fixed registry below, never imported from a name in the file.

Layout (``torch.save`` of one dict)::

    {"format": "sklearn_lama.weights", "format_version": 1,
     "library_version": "0.1.0", "estimator": NODE}
    NODE = {"class": "LAMAClassifier", "params": {...}, "state": {...}}
         | {"class": "Pipeline", "params": {...}, "steps": [[name, NODE], ...]}

``params`` are ``get_params(deep=False)``; a value that is a tuple, a path or
an estimator (a ``MetaEmbeddingTransformer`` source) is stored as a one-key
dict ``{"tuple": [...]}``, ``{"path": "..."}`` or ``{"estimator": {"class":
..., "params": ...}}``. ``state`` is what the estimator's ``_export_state``
returns; numeric numpy arrays in it are stored as tensors and come back as
tensors to its ``_import_state`` (``np.asarray`` reads them without a copy).
"""

import os
import pickle
import uuid
import warnings
from pathlib import Path

import numpy as np
import torch
from sklearn.pipeline import Pipeline
from sklearn.utils.validation import check_is_fitted
from skorch.callbacks import Callback

from ._duo import DuoClassifier
from ._fcsr import FCSRClassifier
from ._lama import LAMAClassifier
from ._meta_embedding import MetaEmbeddingTransformer
from ._vectorizer import Word2VecVectorizer

__all__ = ["load_weights", "save_weights"]

FORMAT = "sklearn_lama.weights"
FORMAT_VERSION = 1

_ESTIMATORS = {
    cls.__name__: cls
    for cls in (
        LAMAClassifier,
        FCSRClassifier,
        DuoClassifier,
        Word2VecVectorizer,
        MetaEmbeddingTransformer,
    )
}
_SCALARS = (type(None), bool, int, float, str)


def save_weights(estimator, path):
    """Save a fitted estimator or pipeline in a file that loads without running code.

    Use this instead of ``joblib``/``pickle`` when the file may come back from
    storage you do not fully trust: loading a pickle runs code, loading this
    file with :func:`load_weights` does not. The file holds the format name
    and version, the library version, and for each estimator its class name,
    its ``get_params(deep=False)`` and its fitted state (vocabulary, embedding
    tables, ``classes_``, the network's weights, optimizer state and training
    history), as tensors and plain values on the CPU, so a model trained on a
    GPU loads on a machine without one.

    The file is written next to ``path`` under a temporary name and then
    renamed over ``path``, so an existing file is replaced whole or not at
    all, even if the process dies while writing.

    Parameters
    ----------
    estimator : estimator or Pipeline
        A fitted :class:`LAMAClassifier`, :class:`FCSRClassifier`,
        :class:`DuoClassifier`, :class:`Word2VecVectorizer` or
        :class:`MetaEmbeddingTransformer`, or a fitted
        :class:`~sklearn.pipeline.Pipeline` of them.
    path : str or path-like
        The file to write (conventionally ``*.pt``).

    Raises
    ------
    TypeError
        If a pipeline step is not one of the estimators above, or a parameter
        holds a value that cannot be stored without code (e.g. a callable
        ``tokenizer``); the message names it.
    sklearn.exceptions.NotFittedError
        If the estimator (or a pipeline step) is not fitted.

    See Also
    --------
    load_weights : Read the file back.

    Examples
    --------
    >>> import os, tempfile
    >>> import numpy as np
    >>> from sklearn_lama import LAMAClassifier, load_weights, save_weights
    >>> X = np.random.RandomState(0).randint(1, 10, size=(20, 5))
    >>> y = X[:, 0] > 5
    >>> clf = LAMAClassifier(n_heads=2, hidden_size=4, mlp_hidden=8, max_epochs=2,
    ...                      random_state=0).fit(X, y)
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     save_weights(clf, os.path.join(folder, "model.pt"))
    ...     loaded = load_weights(os.path.join(folder, "model.pt"))
    >>> bool(np.array_equal(loaded.predict_proba(X), clf.predict_proba(X)))
    True
    >>> loaded.classes_
    array([False,  True])
    """
    from . import __version__  # the package, not this module, defines it

    payload = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "library_version": __version__,
        "estimator": _encode_fitted(estimator, "estimator"),
    }
    _write_atomically(_portable(payload, "the file"), path)


def load_weights(path):
    """Load an estimator saved by :func:`save_weights`, without running code from the file.

    The file is read with ``torch.load(path, weights_only=True,
    map_location="cpu")``, which accepts only tensors and plain values, and
    only this package's estimator classes can be named in it. The result
    predicts and transforms exactly (bitwise) as the saved estimator did. A
    classifier saved with ``device="cuda"`` is loaded on the CPU, with a
    warning, where CUDA is not available; it keeps its optimizer state, so
    ``warm_start=True`` continues its training.

    Parameters
    ----------
    path : str or path-like
        A file written by :func:`save_weights` (or by a classifier's
        ``checkpoint``).

    Returns
    -------
    estimator : estimator or Pipeline
        The fitted estimator or pipeline, of the saved class and parameters.

    Raises
    ------
    ValueError
        If the file is missing, truncated or damaged, is not in this format
        (e.g. a pickle), or is in a format version this library does not
        read; the message names the file. No half-built estimator is returned.

    See Also
    --------
    save_weights : Write such a file.

    Examples
    --------
    See :func:`save_weights`.
    """
    payload = _read(path)
    try:
        return _decode_fitted(payload["estimator"])
    # The file is untrusted input: whatever fails while rebuilding from it
    # means the file is invalid, and the caller gets one error type.
    except Exception as exc:
        raise ValueError(
            f"{os.fspath(path)!r} is not a valid sklearn_lama weights file: cannot "
            f"rebuild the estimator ({type(exc).__name__}: {exc})"
        ) from None


class WeightsCheckpoint(Callback):
    """skorch callback: :func:`save_weights` of ``estimator`` when an epoch improves.

    An epoch improves when it lowers the validation loss; without a validation
    split every epoch does. ``estimator.net_`` must be the net in training.
    Creating the callback checks that ``path`` can be written.
    """

    def __init__(self, estimator, path):
        _check_checkpoint_path(path)
        self.estimator = estimator
        self.path = path

    def on_epoch_end(self, net, **kwargs):
        if net.history[-1].get("valid_loss_best", True):
            save_weights(self.estimator, self.path)


# ------------------------------------------------------------------ encoding
def _encode_fitted(estimator, where):
    if type(estimator) is Pipeline:
        params = estimator.get_params(deep=False)
        steps = params.pop("steps")
        return {
            "class": "Pipeline",
            "params": {k: _encode_value(v, f"Pipeline.{k}") for k, v in params.items()},
            "steps": [[name, _encode_fitted(step, f"step {name!r}")] for name, step in steps],
        }
    if _ESTIMATORS.get(type(estimator).__name__) is not type(estimator):
        raise TypeError(
            f"save_weights cannot store {where}, a {type(estimator).__name__}: it stores "
            f"{', '.join(_ESTIMATORS)} and Pipelines of them. Save other objects "
            "with joblib (trusted storage only)."
        )
    check_is_fitted(estimator)
    return {**_encode_config(estimator), "state": estimator._export_state()}


def _encode_config(estimator):
    name = type(estimator).__name__
    params = estimator.get_params(deep=False)
    return {
        "class": name,
        "params": {k: _encode_value(v, f"{name}.{k}") for k, v in params.items()},
    }


def _encode_value(value, name):
    if type(value) in _SCALARS:
        return value
    if isinstance(value, np.generic) and value.dtype.kind in "biuf":
        return value.item()
    if isinstance(value, os.PathLike) and isinstance(os.fspath(value), str):
        return {"path": os.fspath(value)}
    if isinstance(value, list):
        return [_encode_value(v, name) for v in value]
    if isinstance(value, tuple):
        return {"tuple": [_encode_value(v, name) for v in value]}
    if type(value) in _ESTIMATORS.values():
        return {"estimator": _encode_config(value)}
    raise TypeError(
        f"Cannot store the parameter {name}={value!r} without code: save_weights "
        "stores None, bool, int, float, str, paths, lists and tuples of them, and "
        "this package's estimators. Replace it (e.g. a callable tokenizer by a "
        "token_pattern), or save with joblib (trusted storage only)."
    )


def _portable(obj, where):
    """``obj`` with CPU tensors and plain values only, or a TypeError naming the spot."""
    if isinstance(obj, torch.Tensor):
        return obj.detach().cpu()
    if isinstance(obj, np.ndarray) and obj.dtype.kind in "biuf":
        return torch.from_numpy(np.ascontiguousarray(obj))
    if isinstance(obj, np.generic) and obj.dtype.kind in "biufU":
        return obj.item()
    if type(obj) in _SCALARS:
        return obj
    if isinstance(obj, dict):
        return {_portable(k, where): _portable(v, f"{where}[{k!r}]") for k, v in obj.items()}
    if type(obj) in (list, tuple):
        return type(obj)(_portable(v, f"{where}[{i}]") for i, v in enumerate(obj))
    raise TypeError(
        f"{where} holds a {type(obj).__name__} ({obj!r:.80}), which cannot be stored "
        "without code."
    )


def _write_atomically(payload, path):
    path = os.fspath(path)
    temporary = _temporary_name(path)
    try:
        with open(temporary, "xb") as file:
            torch.save(payload, file)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise


def _temporary_name(path):
    # In the target's directory, so that os.replace is an atomic rename; unique,
    # so that concurrent writers (GridSearchCV workers) never share one.
    directory, name = os.path.split(os.path.abspath(path))
    return os.path.join(directory, f".{name}.{uuid.uuid4().hex[:12]}.tmp")


def _check_checkpoint_path(path):
    """Refuse, with a ValueError, a checkpoint path that cannot be written."""
    target = os.path.abspath(os.fspath(path))
    if os.path.isdir(target):
        raise ValueError(
            f"checkpoint={os.fspath(path)!r} is a directory; give a file path, e.g. "
            f"{os.path.join(os.fspath(path), 'model.pt')!r}."
        )
    if not os.path.isdir(os.path.dirname(target)):
        raise ValueError(
            f"checkpoint={os.fspath(path)!r} cannot be written: "
            f"{os.path.dirname(target)!r} is not an existing directory."
        )
    probe = _temporary_name(target)
    try:
        open(probe, "xb").close()
        os.unlink(probe)
    except OSError as exc:
        raise ValueError(
            f"checkpoint={os.fspath(path)!r} cannot be written: {exc.strerror}."
        ) from None


# ------------------------------------------------------------------ decoding
def _read(path):
    name = os.fspath(path)
    try:
        # torch notes unusual pickle protocols of foreign files; they are refused anyway.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            payload = torch.load(name, weights_only=True, map_location="cpu")
    except FileNotFoundError:
        raise ValueError(f"No weights file at {name!r}.") from None
    except pickle.UnpicklingError:
        raise ValueError(
            f"{name!r} is not a sklearn_lama weights file: it holds objects that "
            "only running code can rebuild (a pickle or joblib file?), which "
            "load_weights refuses."
        ) from None
    # torch reports damaged files with several exception types (RuntimeError
    # from its zip reader, EOFError, ...); all mean the same to the caller.
    except Exception as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ValueError(
            f"{name!r} cannot be read as a weights file (truncated or damaged?): {reason}"
        ) from None
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise ValueError(f"{name!r} is not a sklearn_lama weights file.")
    version = payload.get("format_version")
    if version != FORMAT_VERSION:
        raise ValueError(
            f"{name!r} is in sklearn_lama weights format version {version!r}; this "
            f"version of sklearn_lama reads version {FORMAT_VERSION} only."
        )
    return payload


def _decode_fitted(node):
    if node["class"] == "Pipeline":
        steps = [(name, _decode_fitted(step)) for name, step in node["steps"]]
        params = {k: _decode_value(v) for k, v in node["params"].items()}
        return Pipeline(steps, **params)
    estimator = _decode_config(node)
    estimator._import_state(node["state"])
    return estimator


def _decode_config(node):
    name = node["class"]
    if name not in _ESTIMATORS:
        raise ValueError(f"unknown estimator class {name!r}")
    estimator = _ESTIMATORS[name](**{k: _decode_value(v) for k, v in node["params"].items()})
    estimator._validate_params()
    return estimator


def _decode_value(value):
    if isinstance(value, list):
        return [_decode_value(v) for v in value]
    if not isinstance(value, dict):
        return value
    ((tag, content),) = value.items()
    if tag == "tuple":
        return tuple(_decode_value(v) for v in content)
    if tag == "path":
        return Path(content)
    if tag == "estimator":
        return _decode_config(content)
    raise ValueError(f"unknown parameter value {value!r}")
