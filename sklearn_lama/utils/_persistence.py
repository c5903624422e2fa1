"""Weights-only files: fitted estimators saved so that loading them runs no code.

A pickle (``pickle``, ``joblib``) rebuilds objects by calling whatever the
file names, so loading one from untrusted storage runs untrusted code. The
files written here are safetensors files: tensors, and text metadata that
holds everything else as JSON. Reading one parses bytes and JSON and builds
nothing else; estimator classes are looked up by name in a registry that the
package's estimator modules fill with :func:`register` (this module imports
none of them), never imported from a name in the file.

Layout: a safetensors file whose metadata (``str`` to ``str``) is::

    format           "sklearn_lama.weights"
    format_version   "3"
    library_version  "0.9.0"
    estimator        the JSON of NODE
    sha256           the digest of everything else (see _digest)

    NODE = {"class": "LAMAClassifier", "params": {...}, "state": {...}}
         | {"class": "Pipeline", "params": {...}, "steps": [[name, NODE], ...]}
         | {"class": "FrozenEstimator", "estimator": NODE}

Each tensor of the tree is stored as a safetensors tensor, named by its place
in the tree (``estimator/steps/1/1/state/network/<parameter>``, the JSON
pointer of its spot in ``estimator``), and written in the JSON as
``{"$tensor": name}``. Three more tags keep what JSON lacks: ``{"$tuple":
[...]}``, and ``{"$dict": [[key, value], ...]}`` for a dict whose keys are not
all strings (an optimizer state's parameter numbers) or that has a key
starting with ``$``. Numbers, strings, ``None``, lists and dicts of strings
are themselves.

The digest makes any change to the stored bytes (a flipped bit, a partial
overwrite, a truncation) a clear error instead of a model that predicts
differently. A file written by 0.9.0 or any later release loads in every
later release: each estimator's node is upgraded by the migrations of
:mod:`._compatibility` from its ``library_version`` to this release's. A
file of a later release, or of a later format version, is refused with a
message naming the versions. Files of earlier formats (a ``torch.save``
archive: format 1, written by 0.1.0; the same after a SHA-256 header line:
format 2, written by 0.2.0 to 0.8.0) are refused with a message naming the
versions that read them.

``params`` are ``get_params(deep=False)``; a value that is a tuple, a path or
an estimator (a ``MetaEmbeddingTransformer`` source) is stored as a one-key
dict ``{"tuple": [...]}``, ``{"path": "..."}`` or ``{"estimator": {"class":
..., "params": ...}}``; ``callbacks`` (code) are stored as ``None``. ``state``
is what the estimator's ``_export_state`` returns; numeric numpy arrays in it
are stored as tensors and come back as tensors to its ``_import_state``
(``np.asarray`` reads them without a copy).
"""

import hashlib
import json
import os
import struct
import uuid
from pathlib import Path

import numpy as np
import safetensors
import safetensors.torch
import torch
from sklearn.frozen import FrozenEstimator
from sklearn.pipeline import Pipeline
from sklearn.utils.validation import check_is_fitted

from .._version import __version__
from ._compatibility import IncompatibleFileError, check_readable, upgrade

__all__ = [
    "REGISTERED_ESTIMATORS",
    "SCALAR_TYPES",
    "check_writable",
    "load_weights",
    "register",
    "save_state",
    "save_weights",
    "write_atomically",
]

FORMAT = "sklearn_lama.weights"
FORMAT_VERSION = 3
_DIGEST = "sha256"
# The starts of the earlier formats' files, and the versions that wrote them.
_ZIP_MAGIC = b"PK\x03\x04"
_FORMAT_2_HEADER = b"sklearn_lama weights 2 sha256="
_EARLIER_FORMATS = {1: ("0.1.0", "0.1.0"), 2: ("0.2.0", "0.8.0")}

#: The estimator classes that can be saved, by name (:func:`register`).
REGISTERED_ESTIMATORS = {}
#: The types of parameter values stored as they are.
SCALAR_TYPES = (type(None), bool, int, float, str)
# Parameters that hold code: stored as None (documented with the parameter).
_NOT_STORED = {"callbacks"}


def register(cls):
    """Class decorator: let :func:`save_weights`/:func:`load_weights` store ``cls``.

    ``cls`` must implement ``_export_state()`` (plain values, numpy arrays and
    tensors) and ``_import_state(state)``.
    """
    REGISTERED_ESTIMATORS[cls.__name__] = cls
    return cls


def save_weights(estimator, path):
    """Save a fitted estimator or pipeline in a file that loads without running code.

    Use this instead of ``joblib``/``pickle`` when the file may come back from
    storage you do not fully trust: loading a pickle runs code, loading this
    file with :func:`load_weights` does not. The file is a `safetensors
    <https://huggingface.co/docs/safetensors>`_ file: its tensors are the
    embedding tables and the network's weights and optimizer state (on the
    CPU, so a model trained on a GPU loads on a machine without one), and its
    metadata holds, as JSON, the format name and version, the library
    version, and for each estimator its class name, its
    ``get_params(deep=False)`` and the rest of its fitted state (vocabulary,
    ``classes_``, training history), with a SHA-256 digest of the whole.

    The file is written next to ``path`` under a temporary name and then
    renamed over ``path``, so an existing file is replaced whole or not at
    all, even if the process dies while writing.

    Parameters
    ----------
    estimator : estimator or Pipeline
        A fitted estimator of this package (:class:`LAMAClassifier`,
        :class:`FCSRClassifier`, :class:`DuoClassifier`,
        :class:`Word2VecVectorizer`, :class:`MetaEmbeddingTransformer`,
        :class:`DuoTranslator`), a :class:`~sklearn.frozen.FrozenEstimator`
        of one, or a fitted :class:`~sklearn.pipeline.Pipeline` of them.
    path : str or path-like
        The file to write (conventionally ``*.safetensors``).

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

    Notes
    -----
    Other safetensors readers open the file too: ``safetensors.safe_open``
    lists its tensors and returns its metadata, e.g. to read the network's
    weights without this package.

    .. versionchanged:: 0.9.0
       The file is a safetensors file (it was a ``torch.save`` archive).

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
    ...     save_weights(clf, os.path.join(folder, "model.safetensors"))
    ...     loaded = load_weights(os.path.join(folder, "model.safetensors"))
    >>> bool(np.array_equal(loaded.predict_proba(X), clf.predict_proba(X)))
    True
    >>> loaded.classes_
    array([False,  True])
    """
    check_writable(path, "path")
    _write(_encode_fitted(estimator, "estimator"), path)


def save_state(estimator, state, path):
    """Save ``estimator``'s class and parameters with the fitted ``state`` (:func:`save_weights`).

    For a model in training (the checkpoints): ``state`` is what the
    estimator's ``_export_state()`` returns once it holds that model, and
    :func:`load_weights` returns the estimator fitted with it.
    """
    check_writable(path, "path")
    _write({**_encode_config(estimator), "state": state}, path)


def _write(node, path):
    """Write the encoded estimator ``node`` to ``path``: JSON metadata, tensors, a digest."""
    tensors = {}
    tree = _to_json(node, "estimator", tensors)
    metadata = {
        "format": FORMAT,
        "format_version": str(FORMAT_VERSION),
        "library_version": __version__,
        "estimator": json.dumps(tree),
    }
    write_atomically(_signed(tensors, metadata), path)


def load_weights(path):
    """Load an estimator saved by :func:`save_weights`, without running code from the file.

    The file is parsed as safetensors (tensors) and JSON (everything else),
    and only this package's estimator classes can be named in it. The result
    predicts and transforms as the saved estimator did: bitwise in the
    release that wrote the file, within 1e-6 in later ones. Files written by
    0.9.0 or any later release load: parameters added since take their
    defaults, renamed ones are mapped and changed state is migrated. A
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
        pickle), in the format of an earlier version (``torch.save``, before
        0.9.0), or saved by a later release of sklearn_lama or in a later
        format version (the message names the versions); the message names
        the file. No half-built estimator is returned.

    See Also
    --------
    save_weights : Write such a file.

    Notes
    -----
    .. versionchanged:: 0.9.0
       Reads safetensors files; files of 0.8.0 and earlier (``torch.save``
       archives) are refused, naming the versions that read them.

    .. versionchanged:: 0.10.0
       Reads the files of every release from 0.9.0 on (they were refused by
       any other release than the one that wrote them).

    Examples
    --------
    See :func:`save_weights`.
    """
    tree, tensors, saved = _read(path)
    try:
        return _decode_fitted(_from_json(tree, tensors), _Origin(os.fspath(path), saved))
    except IncompatibleFileError:
        raise
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
    if REGISTERED_ESTIMATORS.get(type(estimator).__name__) is not type(estimator):
        raise TypeError(
            f"save_weights cannot store {where}, a {type(estimator).__name__}: it stores "
            f"{', '.join(REGISTERED_ESTIMATORS)}, FrozenEstimators and Pipelines of them. Save "
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
    if type(value) in SCALAR_TYPES:
        return value
    if isinstance(value, np.generic) and value.dtype.kind in "biuf":
        return value.item()
    if isinstance(value, os.PathLike) and isinstance(os.fspath(value), str):
        return {"path": os.fspath(value)}
    if isinstance(value, list):
        return [_encode_value(v, name) for v in value]
    if isinstance(value, tuple):
        return {"tuple": [_encode_value(v, name) for v in value]}
    if type(value) in REGISTERED_ESTIMATORS.values():
        return {"estimator": _encode_config(value)}
    raise TypeError(
        f"Cannot store the parameter {name}={value!r} without code: save_weights "
        "stores None, bool, int, float, str, paths, lists and tuples of them, and "
        "this package's estimators. Replace it (e.g. a callable tokenizer by a "
        "token_pattern), or save with joblib (trusted storage only)."
    )


def _to_json(obj, name, tensors):
    """``obj`` as JSON values, each tensor moved to ``tensors`` under its place ``name``.

    Numeric numpy arrays become tensors, numpy scalars Python ones; anything
    else that is not a plain value raises a TypeError naming its place.
    """
    # Tensors are stored as contiguous CPU copies: safetensors stores dense
    # tensors that share no memory.
    if isinstance(obj, np.ndarray) and obj.dtype.kind in "biuf":
        tensors[name] = torch.from_numpy(np.array(obj, order="C"))
        return {"$tensor": name}
    if isinstance(obj, torch.Tensor):
        tensors[name] = obj.detach().to("cpu", memory_format=torch.contiguous_format, copy=True)
        return {"$tensor": name}
    if isinstance(obj, np.generic) and obj.dtype.kind in "biufU":
        return obj.item()
    if type(obj) in SCALAR_TYPES:
        return obj
    if type(obj) is list:
        return [_to_json(v, f"{name}/{i}", tensors) for i, v in enumerate(obj)]
    if type(obj) is tuple:
        return {"$tuple": [_to_json(v, f"{name}/$tuple/{i}", tensors) for i, v in enumerate(obj)]}
    if isinstance(obj, dict):
        if all(type(k) is str and not k.startswith("$") for k in obj):
            return {k: _to_json(v, f"{name}/{_pointer_token(k)}", tensors) for k, v in obj.items()}
        return {
            "$dict": [
                [
                    _to_json(k, f"{name}/$dict/{i}/0", tensors),
                    _to_json(v, f"{name}/$dict/{i}/1", tensors),
                ]
                for i, (k, v) in enumerate(obj.items())
            ]
        }
    raise TypeError(
        f"{name} holds a {type(obj).__name__} ({obj!r:.80}), which cannot be stored without code."
    )


def _pointer_token(key):
    # JSON pointer escaping (RFC 6901), so that names stay unique whatever the keys.
    return key.replace("~", "~0").replace("/", "~1")


def _from_json(value, tensors):
    """The tree that :func:`_to_json` encoded, its tensors taken from ``tensors``."""
    if type(value) is list:
        return [_from_json(v, tensors) for v in value]
    if type(value) is not dict:
        return value
    tags = [k for k in value if k.startswith("$")]
    if not tags:
        return {k: _from_json(v, tensors) for k, v in value.items()}
    if len(value) != 1:
        raise ValueError(f"a JSON object mixes the tag {tags[0]!r} with other keys")
    ((tag, content),) = value.items()
    if tag == "$tensor":
        if content not in tensors:
            raise ValueError(f"the tensor {content!r} is not in the file")
        return tensors[content]
    if tag == "$tuple" and type(content) is list:
        return tuple(_from_json(v, tensors) for v in content)
    if tag == "$dict" and type(content) is list:
        return {_from_json(k, tensors): _from_json(v, tensors) for k, v in content}
    raise ValueError(f"unknown JSON tag {tag!r}")


def _signed(tensors, metadata):
    """The bytes of a safetensors file of ``tensors`` and ``metadata``, with its digest."""
    unsigned = safetensors.torch.save(tensors, metadata=metadata)
    header, size = _parse_header(unsigned)
    # The tensors' offsets do not depend on the metadata, so adding the
    # digest leaves the digested content as it was.
    digest = _digest(header, unsigned[8 + size :])
    return safetensors.torch.save(tensors, metadata={**metadata, _DIGEST: digest})


def _digest(header, data):
    """SHA-256 of a safetensors file's header (less the digest) and its tensor bytes.

    The header is digested as canonical JSON (sorted keys, no spaces), so the
    digest covers what the header says, not how the writer spaced it.
    """
    metadata = {k: v for k, v in header["__metadata__"].items() if k != _DIGEST}
    canonical = json.dumps(
        {**header, "__metadata__": metadata}, sort_keys=True, separators=(",", ":")
    )
    digest = hashlib.sha256(canonical.encode())
    digest.update(data)
    return digest.hexdigest()


def _parse_header(data):
    """``(header, size)``: a safetensors file's header as a dict, and its length in bytes.

    A safetensors file starts with the header's length (8 bytes, little
    endian) and the header, JSON; the tensors' bytes follow. Raises
    ValueError if ``data`` does not start so.
    """
    if len(data) < 8:
        raise ValueError(f"{len(data)} bytes, fewer than a safetensors file starts with")
    (size,) = struct.unpack("<Q", data[:8])
    if size > len(data) - 8:
        raise ValueError(f"its first 8 bytes declare a {size}-byte header, longer than the file")
    try:
        header = json.loads(data[8 : 8 + size].decode("utf-8"))
    # JSON errors and UnicodeDecodeError are ValueErrors; deep nesting is a RecursionError.
    except (ValueError, RecursionError) as exc:
        raise ValueError(f"its header is not JSON ({type(exc).__name__})") from None
    if type(header) is not dict:
        raise ValueError("its header is not a JSON object")
    metadata = header.get("__metadata__", {})
    if type(metadata) is not dict or not all(type(v) is str for v in metadata.values()):
        raise ValueError("its metadata is not a JSON object of strings")
    return header, size


def write_atomically(data, path):
    """Write the bytes ``data`` to ``path`` whole or not at all (a temporary file, renamed)."""
    path = os.fspath(path)
    temporary = _temporary_name(path)
    try:
        with open(temporary, "xb") as file:
            file.write(data)
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
            f"{os.path.join(os.fspath(path), 'model.safetensors')!r}."
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
    """``(tree, tensors)`` of a weights file: its ``estimator`` JSON, parsed, and its tensors."""
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
        raise ValueError(_earlier_format_message(name, 1))
    if data.startswith(_FORMAT_2_HEADER):
        raise ValueError(_earlier_format_message(name, 2))
    try:
        header, size = _parse_header(data)
    except ValueError as exc:
        raise ValueError(
            f"{name!r} is not a readable sklearn_lama weights file: it is not a safetensors "
            f"file ({exc}). It is damaged, or another kind of file (a pickle or joblib file?)."
        ) from None
    metadata = header.get("__metadata__", {})
    if metadata.get("format") != FORMAT:
        raise ValueError(
            f"{name!r} is not a sklearn_lama weights file (a safetensors file whose metadata "
            f"does not name the format {FORMAT!r})."
        )
    if metadata.get(_DIGEST) != _digest(header, data[8 + size :]):
        raise ValueError(
            f"{name!r} was altered after it was written (truncated, or bytes changed in "
            "storage): its content no longer matches the digest it carries. It cannot "
            "be loaded; use another copy, or refit."
        )
    saved = metadata.get("library_version")
    if saved is None:
        raise ValueError(f"{name!r} is not a sklearn_lama weights file (no library version).")
    version = metadata.get("format_version")
    if version != str(FORMAT_VERSION):
        raise IncompatibleFileError(
            f"{name!r} is in sklearn_lama weights format version {version!r} (saved by "
            f"sklearn_lama {saved}); sklearn_lama {__version__} reads version "
            f"{FORMAT_VERSION} (written by 0.9.0 and later releases): load it with "
            f"sklearn_lama {saved} or later."
        )
    check_readable(saved, repr(name))
    try:
        # Copies: the loaded tensors must not be views of the bytes read.
        tensors = {k: t.clone() for k, t in safetensors.torch.load(data).items()}
        tree = json.loads(metadata["estimator"])
    # A file that matches its digest is damaged only if forged: safetensors
    # and json report that with several exception types (KeyError when the
    # entry is missing, RecursionError on deep nesting).
    except (safetensors.SafetensorError, ValueError, KeyError, RecursionError) as exc:
        raise ValueError(
            f"{name!r} cannot be read as a weights file ({type(exc).__name__}: {exc})"
        ) from None
    return tree, tensors, saved


def _earlier_format_message(name, version):
    """Why a file that starts as those of weights format ``version`` (before 3) is refused."""
    first, last = _EARLIER_FORMATS[version]
    writers = first if first == last else f"{first} to {last}"
    # Format 1 starts as any zip archive; format 2 has a header of its own.
    what = "a torch or pickle zip archive" if version == 1 else "a torch.save archive"
    return (
        f"{name!r} is not a safetensors file but {what}: a weights file of sklearn_lama "
        f"{writers} (weights format {version}), which only the version that wrote it "
        f"reads, or another torch or pickle file. sklearn_lama {__version__} reads its own "
        "safetensors files only: load the file with the sklearn_lama version that wrote "
        f"it ({writers}), or refit the estimator with sklearn_lama {__version__} and save "
        "it again."
    )


class _Origin:
    """Where the nodes being decoded come from: the file's name and the release that wrote it."""

    def __init__(self, name, saved):
        self.name = name
        self.saved = saved


def _decode_fitted(node, origin):
    if node["class"] == "FrozenEstimator":
        return FrozenEstimator(_decode_fitted(node["estimator"], origin))
    if node["class"] == "Pipeline":
        steps = [(name, _decode_fitted(step, origin)) for name, step in node["steps"]]
        params = {k: _decode_value(v, origin) for k, v in node["params"].items()}
        return Pipeline(steps, **params)
    estimator, node = _decode_config(node, origin)
    estimator._import_state(node["state"])
    return estimator


def _decode_config(node, origin):
    """``(estimator, node)``: the estimator of ``node``'s class and parameters, and the node.

    The node is upgraded to this release (its state too, when it has one).
    """
    name = node["class"]
    if name not in REGISTERED_ESTIMATORS:
        raise ValueError(f"unknown estimator class {name!r}")
    cls = REGISTERED_ESTIMATORS[name]
    node = {**node, "params": {k: _decode_value(v, origin) for k, v in node["params"].items()}}
    node = upgrade(node, origin.saved, cls, repr(origin.name))
    estimator = cls(**node["params"])
    estimator._validate_params()
    return estimator, node


def _decode_value(value, origin):
    if isinstance(value, list):
        return [_decode_value(v, origin) for v in value]
    if not isinstance(value, dict):
        return value
    ((tag, content),) = value.items()
    if tag == "tuple":
        return tuple(_decode_value(v, origin) for v in content)
    if tag == "path":
        return Path(content)
    if tag == "estimator":
        return _decode_config(content, origin)[0]
    raise ValueError(f"unknown parameter value {value!r}")
