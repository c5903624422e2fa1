"""Weights-only files: fitted estimators saved so that loading them runs no code.

A pickle (``pickle``, ``joblib``) rebuilds objects by calling whatever the
file names, so loading one from untrusted storage runs untrusted code. The
files written here hold only tensors and plain values (dict, list, tuple, str,
int, float, bool, None); they are read with ``torch.load(weights_only=True)``,
which refuses anything else, and estimator classes are looked up by name in a
registry that the package's estimator modules fill with :func:`register`
(this module imports none of them), never imported from a name in the file.

Layout: one header line, then one ``torch.save`` of a dict::

    b"sklearn_lama weights 2 sha256=<64 hex digits of what follows>\n"
    {"format": "sklearn_lama.weights", "format_version": 2,
     "library_version": "0.2.0", "estimator": NODE}
    NODE = {"class": "LAMAClassifier", "params": {...}, "state": {...}}
         | {"class": "Pipeline", "params": {...}, "steps": [[name, NODE], ...]}
         | {"class": "FrozenEstimator", "estimator": NODE}

The digest makes any change to the stored bytes (a flipped bit, a partial
overwrite) a clear error instead of a model that predicts differently. Until
version 1.0 parameters and fitted state change between releases, so a file
loads only in the ``library_version`` that wrote it; any other version refuses
it with a message naming both.
``params`` are ``get_params(deep=False)``; a value that is a tuple, a path or
an estimator (a ``MetaEmbeddingTransformer`` source) is stored as a one-key
dict ``{"tuple": [...]}``, ``{"path": "..."}`` or ``{"estimator": {"class":
..., "params": ...}}``; ``callbacks`` (code) are stored as ``None``. ``state``
is what the estimator's ``_export_state`` returns; numeric numpy arrays in it
are stored as tensors and come back as tensors to its ``_import_state``
(``np.asarray`` reads them without a copy).
"""

import hashlib
import io
import os
import pickle
import uuid
import warnings
import zipfile
from pathlib import Path

import numpy as np
import torch
from sklearn.frozen import FrozenEstimator
from sklearn.pipeline import Pipeline
from sklearn.utils.validation import check_is_fitted

from .._version import __version__

__all__ = ["check_writable", "load_weights", "register", "save_weights"]

FORMAT = "sklearn_lama.weights"
FORMAT_VERSION = 2
_HEADER = b"sklearn_lama weights 2 sha256="
_ZIP_MAGIC = b"PK\x03\x04"

_ESTIMATORS = {}
_SCALARS = (type(None), bool, int, float, str)
# Parameters that hold code: stored as None (documented with the parameter).
_NOT_STORED = {"callbacks"}


def register(cls):
    """Class decorator: let :func:`save_weights`/:func:`load_weights` store ``cls``.

    ``cls`` must implement ``_export_state()`` (plain values, numpy arrays and
    tensors) and ``_import_state(state)``.
    """
    _ESTIMATORS[cls.__name__] = cls
    return cls


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
        A fitted estimator of this package (:class:`LAMAClassifier`,
        :class:`FCSRClassifier`, :class:`DuoClassifier`,
        :class:`Word2VecVectorizer`, :class:`MetaEmbeddingTransformer`, ...),
        a :class:`~sklearn.frozen.FrozenEstimator` of one, or a fitted
        :class:`~sklearn.pipeline.Pipeline` of them.
    path : str or path-like
        The file to write (conventionally ``*.pt``).

    Raises
    ------
    ValueError
        If ``path`` is a directory, or its directory does not exist or cannot
        be written; raised before any work.
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
    check_writable(path, "path")
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
        If the file is missing, truncated, altered in storage (its content no
        longer matches the digest it carries), not in this format (e.g. a
        pickle), or saved by another version of sklearn_lama (until 1.0, a
        file loads only in the version that wrote it; the message names both
        versions); the message names the file. No half-built estimator is
        returned.

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


# ------------------------------------------------------------------ encoding
def _encode_fitted(estimator, where):
    if type(estimator) is FrozenEstimator:
        return {
            "class": "FrozenEstimator",
            "estimator": _encode_fitted(estimator.estimator, where),
        }
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
            f"{', '.join(_ESTIMATORS)}, FrozenEstimators and Pipelines of them. Save "
            "other objects "
            "with joblib (trusted storage only)."
        )
    check_is_fitted(estimator)
    return {**_encode_config(estimator), "state": estimator._export_state()}


def _encode_config(estimator):
    name = type(estimator).__name__
    params = estimator.get_params(deep=False)
    return {
        "class": name,
        "params": {
            k: None if k in _NOT_STORED else _encode_value(v, f"{name}.{k}")
            for k, v in params.items()
        },
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
        f"{where} holds a {type(obj).__name__} ({obj!r:.80}), which cannot be stored without code."
    )


def _write_atomically(payload, path):
    path = os.fspath(path)
    body = io.BytesIO()
    torch.save(payload, body)
    body = body.getvalue()
    temporary = _temporary_name(path)
    try:
        with open(temporary, "xb") as file:
            file.write(_HEADER + hashlib.sha256(body).hexdigest().encode() + b"\n")
            file.write(body)
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


def check_writable(path, param):
    """Refuse, with a ValueError naming ``param``, a file path that cannot be written."""
    target = os.path.abspath(os.fspath(path))
    if os.path.isdir(target):
        raise ValueError(
            f"{param}={os.fspath(path)!r} is a directory; give a file path, e.g. "
            f"{os.path.join(os.fspath(path), 'model.pt')!r}."
        )
    if not os.path.isdir(os.path.dirname(target)):
        raise ValueError(
            f"{param}={os.fspath(path)!r} cannot be written: "
            f"{os.path.dirname(target)!r} is not an existing directory."
        )
    probe = _temporary_name(target)
    try:
        open(probe, "xb").close()
        os.unlink(probe)
    except OSError as exc:
        raise ValueError(
            f"{param}={os.fspath(path)!r} cannot be written: {exc.strerror}."
        ) from None


# ------------------------------------------------------------------ decoding
def _read(path):
    name = os.fspath(path)
    if os.path.exists(name) and not os.path.isfile(name):
        # A FIFO would block the read, a device such as /dev/zero never end it.
        raise ValueError(f"{name!r} is not a regular file.")
    try:
        with open(name, "rb") as file:
            data = file.read()
    except FileNotFoundError:
        raise ValueError(f"No weights file at {name!r}.") from None
    except OSError as exc:
        raise ValueError(f"{name!r} cannot be read: {exc.strerror}.") from None
    if data.startswith(_ZIP_MAGIC):
        raise ValueError(_old_format_message(name, data))
    header, _, body = data.partition(b"\n")
    if not header.startswith(_HEADER):
        raise ValueError(
            f"{name!r} is not a sklearn_lama weights file (it does not start with the "
            "format's header; a pickle or joblib file?)."
        )
    if hashlib.sha256(body).hexdigest().encode() != header[len(_HEADER) :]:
        raise ValueError(
            f"{name!r} was altered after it was written (truncated, or bytes changed in "
            "storage): its content no longer matches the digest it carries. It cannot "
            "be loaded; use another copy, or refit."
        )
    payload = _torch_load(name, body)
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise ValueError(f"{name!r} is not a sklearn_lama weights file.")
    saved = payload.get("library_version")
    if not isinstance(saved, str):
        raise ValueError(f"{name!r} is not a sklearn_lama weights file (no library version).")
    if saved != __version__:
        raise ValueError(_other_version_message(name, saved))
    version = payload.get("format_version")
    if version != FORMAT_VERSION:
        raise ValueError(
            f"{name!r} is in sklearn_lama weights format version {version!r} (saved by "
            f"sklearn_lama {payload.get('library_version')}); sklearn_lama {__version__} "
            f"reads version {FORMAT_VERSION} only."
        )
    return payload


def _torch_load(name, body):
    _check_records(name, body)
    try:
        # torch notes unusual pickle protocols of foreign files; they are refused anyway.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            payload = torch.load(io.BytesIO(body), weights_only=True, map_location="cpu")
    except pickle.UnpicklingError:
        raise ValueError(
            f"{name!r} is not a sklearn_lama weights file: it holds objects that only "
            "running code can rebuild, which load_weights refuses."
        ) from None
    # torch reports damaged data with several exception types (RuntimeError
    # from its zip reader, EOFError, ...); all mean the same to the caller.
    except Exception as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ValueError(
            f"{name!r} cannot be read as a weights file (damaged?): {reason}"
        ) from None
    _check_tensors(name, payload)
    return payload


def _check_records(name, body):
    """Refuse records that torch would inflate beyond the file's own bytes.

    ``torch.save`` stores its zip records uncompressed; torch's reader also
    inflates compressed ones, to whatever size they declare.
    """
    try:
        records = zipfile.ZipFile(io.BytesIO(body)).infolist()
    # zipfile reports foreign or damaged data with several exception types.
    except Exception as exc:
        raise ValueError(
            f"{name!r} cannot be read as a weights file (damaged?): "
            f"{str(exc) or type(exc).__name__}"
        ) from None
    for record in records:
        if record.compress_type != zipfile.ZIP_STORED or record.file_size > len(body):
            raise ValueError(
                f"{name!r} is not a sklearn_lama weights file: its record "
                f"{record.filename!r} is compressed or declares more bytes than the file holds."
            )


def _check_tensors(name, payload):
    """Refuse tensors with more elements than bytes behind them (broadcast or overlapping views).

    Such a view costs nothing to load but its declared size to copy: a file of
    a few bytes could otherwise claim a table of any size.
    """
    stack = [payload]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
        elif isinstance(item, torch.Tensor):
            if item.layout != torch.strided or item.device.type != "cpu":
                # save_weights writes dense CPU tensors; others may have no storage to check.
                raise ValueError(
                    f"{name!r} is not a sklearn_lama weights file: it holds a "
                    f"{item.layout} tensor on {item.device}."
                )
            if item.numel() * item.element_size() > item.untyped_storage().nbytes():
                raise ValueError(
                    f"{name!r} is not a sklearn_lama weights file: it holds a tensor of shape "
                    f"{tuple(item.shape)} backed by {item.untyped_storage().nbytes()} bytes."
                )


def _old_format_message(name, data):
    """What to say about a file of format 1 (a bare ``torch.save``, without digest)."""
    try:
        payload = _torch_load(name, data)
        saved = payload.get("library_version") if isinstance(payload, dict) else None
    except ValueError:
        saved = None
    if saved is None:
        return (
            f"{name!r} is not a sklearn_lama weights file of this version (a plain "
            "torch or pickle zip file?)."
        )
    return _other_version_message(name, saved)


def _other_version_message(name, saved):
    """Why a file written by sklearn_lama ``saved``, another version, is refused."""
    return (
        f"{name!r} was saved by sklearn_lama {saved}, and this is sklearn_lama "
        f"{__version__}: until version 1.0 a weights file loads only in the version "
        f"that wrote it. Load it with sklearn_lama {saved}, or refit the estimator "
        f"with sklearn_lama {__version__} and save it again."
    )


def _decode_fitted(node):
    if node["class"] == "FrozenEstimator":
        return FrozenEstimator(_decode_fitted(node["estimator"]))
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
    params = {k: _decode_value(v) for k, v in node["params"].items()}
    estimator = _ESTIMATORS[name](**params)
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
