"""Write a fitted classifier as an ONNX graph, and what its text side needs beside it."""

import copy
import importlib
import io
import json
import warnings
from pathlib import Path

import numpy as np
import torch
from sklearn.compose import ColumnTransformer
from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS
from sklearn.pipeline import Pipeline
from sklearn.utils.validation import check_is_fitted
from torch import nn

from .._version import __version__
from ..classification import DuoClassifier, FCSRClassifier, LAMAClassifier
from ..classification._targets import SingleLabel
from ..modules._network import NgramFeatures
from ..text import MetaEmbeddingTransformer, Word2VecVectorizer
from ..utils._persistence import check_writable, write_atomically
from ._columns import join, side_graph
from ._runtime import FORMAT, FORMAT_VERSION

__all__ = ["to_onnx"]

_CLASSIFIERS = (LAMAClassifier, FCSRClassifier, DuoClassifier)
_TEXT_STEPS = (Word2VecVectorizer, MetaEmbeddingTransformer)
# The ONNX operator set the graphs are written in.
OPSET = 17


def to_onnx(estimator, path):
    """Write a fitted classifier or text pipeline as an ONNX graph and a settings file.

    The graph maps token ids and lengths to class probabilities, with the
    batch and sequence axes dynamic: inputs ``ids`` (int64, ``(batch,
    tokens)``, 0 pads) and ``lengths`` (int64, ``(batch,)``, at least 1),
    outputs ``probabilities`` and ``logits`` (float32, ``(batch,
    n_classes)``, columns following ``classes_``; the probabilities are
    scaled by the temperature of ``calibration="temperature"``). It holds
    the fitted network in evaluation mode, with its embedding tables and
    Naive Bayes columns (token ratios as a table over the vocabulary, pair
    ratios looked up by binary search), and computes in float32. Beside it, ``path``
    with the suffix ``.json`` holds the classes and, for a pipeline, what the
    text side needs: the vectorizer's tokenisation settings, stop words,
    vocabulary (in id order), ``max_len`` and ``oov`` rule.
    :class:`~sklearn_lama.export.OnnxTextClassifier` reads both and serves
    raw text with numpy and onnxruntime only.

    For a pipeline whose text step sits in a
    :class:`~sklearn.compose.ColumnTransformer` beside side columns,
    skl2onnx converts the ColumnTransformer's other transformers (with their
    column selections, the remainder included) into the same graph: one
    more input per side column, ``columns/<name>`` (``(batch, 1)``, strings
    where its encoder fitted string categories, float32 otherwise), and one
    more output, the side features (``columns/side``); the settings name the
    text column, those inputs and the side features.

    Parameters
    ----------
    estimator : LAMAClassifier, FCSRClassifier, DuoClassifier or Pipeline
        A fitted classifier that reads token ids (fitted on a
        :class:`~sklearn_lama.TokenSequences` or a 2-D integer array), or a
        fitted :class:`~sklearn.pipeline.Pipeline` of a
        :class:`~sklearn_lama.Word2VecVectorizer` or
        :class:`~sklearn_lama.MetaEmbeddingTransformer` (alone, or in a
        :class:`~sklearn.compose.ColumnTransformer` fitted on a DataFrame)
        and such a classifier.
    path : str or path-like
        The ``.onnx`` file to write; the settings go to the same name with
        the suffix ``.json``. Each file is replaced whole or not at all.

    Returns
    -------
    onnx_path, settings_path : Path
        The two files written.

    Raises
    ------
    ImportError
        If the ``onnx`` package is missing, or ``skl2onnx`` for side columns
        (``pip install 'sklearn-lama[onnx]'``).
    TypeError
        If ``estimator`` is not one of the above, a vectorizer's
        ``tokenizer``, ``preprocessor`` or ``strip_accents`` is a callable
        (code, which the settings file cannot hold), or skl2onnx cannot
        convert a transformer of the side columns (nothing is written).
    ValueError
        If ``path`` cannot be written, or the classifier reads vectors
        instead of token ids, was fitted on a 2-D ``y`` (multi-label or
        multi-output), or uses an option the graph does not express
        (``FCSRClassifier(context_window=...)``); raised before any work.
    sklearn.exceptions.NotFittedError
        If the estimator is not fitted.

    See Also
    --------
    OnnxTextClassifier : Serve the exported files.

    Notes
    -----
    The graph is traced with PyTorch's TorchScript-based ONNX exporter
    (``torch.onnx.export(..., dynamo=False)``); the documentation's serving
    page says why not the dynamo exporter. The networks compute without
    branches on the document length where a trace would otherwise fix one
    (LAMA's chunked recurrence, FCSR's blocked scan, which recurses to a
    fixed depth while traced), so one graph serves every length.

    .. versionadded:: 0.9.0

    .. versionchanged:: 0.11.0
       The side columns' encoders are converted into the graph by skl2onnx,
       any that it converts; 0.10.0 wrote those of ``SimpleImputer``,
       ``StandardScaler`` and ``OneHotEncoder`` into the settings file.

    Examples
    --------
    >>> from sklearn_lama.export import OnnxTextClassifier, to_onnx
    >>> to_onnx(pipeline, "model.onnx")  # doctest: +SKIP
    >>> OnnxTextClassifier("model.onnx").predict_proba(["a gripping film"])  # doctest: +SKIP
    """
    classifier, text_step = _split(estimator)
    check_is_fitted(classifier)
    if not isinstance(classifier.target_encoder_, SingleLabel):
        raise ValueError(
            f"to_onnx exports single-label classifiers (a softmax over classes_); this "
            f"{type(classifier).__name__} was fitted on a 2-D y "
            f"({type(classifier.target_encoder_).__name__})."
        )
    kind = classifier.input_adapter_.kind
    if kind not in ("sequences", "ids"):
        raise ValueError(
            f"to_onnx exports classifiers that read token ids; this "
            f"{type(classifier).__name__} was fitted on "
            f"{classifier.input_adapter_.description}."
        )
    if isinstance(classifier, FCSRClassifier) and classifier.context_window is not None:
        raise ValueError(
            "to_onnx does not export FCSRClassifier(context_window=...): the windowed "
            "scan chooses its path by the document's length. Refit with "
            "context_window=None to export."
        )
    if classifier.input_adapter_.n_side and not isinstance(text_step, ColumnTransformer):
        raise ValueError(
            f"this {type(classifier).__name__} was fitted with side features: export the "
            "Pipeline of its ColumnTransformer and it, so that the server encodes the columns."
        )
    onnx = _require("onnx")
    side, columns = None, None
    if isinstance(text_step, ColumnTransformer):
        if classifier.input_adapter_.n_side:
            _require("skl2onnx")
        side, columns, text_step = side_graph(text_step, classifier.input_adapter_.n_side, OPSET)
    text = None if text_step is None else _text_settings(text_step)
    onnx_path = Path(path)
    settings_path = onnx_path.with_suffix(".json")
    check_writable(onnx_path, "path")
    check_writable(settings_path, "path")
    settings = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "library_version": __version__,
        "classifier": type(classifier).__name__,
        "input": kind,
        "classes": {
            "dtype": classifier.classes_.dtype.str,
            "values": classifier.classes_.tolist(),
        },
        "text": text,
        "columns": columns,
    }
    graph = onnx.load_from_string(_graph_bytes(classifier))
    if side is not None:
        graph = join(side, graph)
    onnx.checker.check_model(graph)
    write_atomically(graph.SerializeToString(), onnx_path)
    write_atomically(json.dumps(settings, ensure_ascii=False).encode("utf-8"), settings_path)
    return onnx_path, settings_path


def _split(estimator):
    """``(classifier, text_step or None)`` of what ``to_onnx`` was given."""
    if isinstance(estimator, _CLASSIFIERS):
        return estimator, None
    if type(estimator) is Pipeline:
        steps = [step for _, step in estimator.steps if step not in (None, "passthrough")]
        if len(steps) == 2 and isinstance(steps[1], _CLASSIFIERS):
            if isinstance(steps[0], _TEXT_STEPS):
                check_is_fitted(steps[0])
                return steps[1], steps[0]
            if isinstance(steps[0], ColumnTransformer):
                check_is_fitted(steps[0])
                return steps[1], steps[0]
    raise TypeError(
        f"to_onnx exports a LAMAClassifier, FCSRClassifier or DuoClassifier, or a Pipeline "
        f"of a Word2VecVectorizer or MetaEmbeddingTransformer (alone or in a "
        f"ColumnTransformer) and one of them; got "
        f"{_describe(estimator)}."
    )


def _describe(estimator):
    if type(estimator) is Pipeline:
        return "a Pipeline of " + ", ".join(type(s).__name__ for _, s in estimator.steps)
    return f"a {type(estimator).__name__}"


def _text_settings(step):
    """What :class:`OnnxTextClassifier` needs to turn text into ``step``'s ids."""
    name = type(step).__name__
    for param in ("tokenizer", "preprocessor"):
        if getattr(step, param) is not None:
            raise TypeError(
                f"to_onnx cannot export {name}.{param}, a callable (code): refit with "
                f"{param}=None (and a token_pattern) to export."
            )
    if step.strip_accents not in (None, "ascii", "unicode"):
        raise TypeError(
            f"to_onnx cannot export {name}.strip_accents={step.strip_accents!r}, a callable "
            "(code): refit with None, 'ascii' or 'unicode' to export."
        )
    stop_words = step.stop_words
    if stop_words == "english":
        stop_words = sorted(ENGLISH_STOP_WORDS)
    vocabulary = sorted(step.vocabulary_, key=step.vocabulary_.get)
    return {
        "lowercase": bool(step.lowercase),
        "strip_accents": step.strip_accents,
        "token_pattern": step.token_pattern,
        "stop_words": None if stop_words is None else list(stop_words),
        "max_len": step.max_len,
        "oov": step.oov,
        "encoding": step.encoding,
        "vocabulary": vocabulary,
    }


def _require(name):
    try:
        return importlib.import_module(name)
    except ImportError:
        raise ImportError(
            f"to_onnx needs the {name} package: pip install 'sklearn-lama[onnx]'."
        ) from None


class _SearchedNgrams(NgramFeatures):
    """:class:`NgramFeatures` whose key search is a fixed number of halvings.

    ONNX has no sorted search; ``bit_length(n_keys)`` halvings of the
    interval give ``torch.searchsorted``'s answer exactly, with gathers and
    comparisons only.
    """

    @classmethod
    def of(cls, features):
        return cls(
            features.keys,
            features.values,
            features.vocabulary_size,
            features.n,
            int(features.folds),
        )

    def search(self, keys, grams):
        n = len(keys)
        low = torch.zeros_like(grams)
        high = torch.full_like(grams, n)
        for _ in range(n.bit_length()):
            middle = torch.div(low + high, 2, rounding_mode="floor")
            below = keys[middle.clamp(max=n - 1)] < grams
            low = torch.where(below, middle + 1, low)
            high = torch.where(below, high, middle)
        return low


class _TokenTable(nn.Module):
    """Token features (:class:`NgramFeatures` with ``n=1``) as one table over the vocabulary.

    At inference only block 0 is read, whose keys are the token ids
    themselves: a row per id, zeros for ids without features, gives the
    same features as the sorted search in one gather.
    """

    def __init__(self, features):
        super().__init__()
        self.register_buffer("table", features.block_table())

    def forward(self, ids):
        return self.table[ids]


def _exportable(module):
    """Make the n-gram features in ``module`` exportable, in place.

    Token features become a :class:`_TokenTable`, pair features (with keys)
    a :class:`_SearchedNgrams`: the same features, from operators ONNX has.
    """
    for name, child in module.named_children():
        if isinstance(child, (_TokenTable, _SearchedNgrams)):
            continue
        if isinstance(child, NgramFeatures):
            if child.n == 1:
                setattr(module, name, _TokenTable(child))
            elif len(child.keys):
                setattr(module, name, _SearchedNgrams.of(child))
        else:
            _exportable(child)


class _Probabilities(nn.Module):
    """The fitted network or its folded form: ``(ids, lengths)`` to ``(probabilities, logits)``.

    The probabilities are the softmax of the logits divided by the
    calibration's ``temperature`` (1 without calibration).
    """

    def __init__(self, network, temperature):
        super().__init__()
        self.network = network
        self.temperature = temperature

    def forward(self, ids, lengths, side=None):
        logits = self.network(lengths=lengths, ids=ids, side=side)[0]
        return torch.softmax(logits / self.temperature, dim=-1), logits


def _graph_bytes(classifier):
    """The ONNX graph of ``classifier``'s fitted network, serialised."""
    network = copy.deepcopy(classifier.net_.module_).to("cpu", torch.float32).eval()
    # What predict runs in float32: the network's folded form where it has one (Duo's
    # head, whose per-token tables the graph then holds as constants), built here
    # from the same weights, else the network.
    folded = network.fold()
    inference = network if folded is None else folded
    _exportable(inference)
    temperature = 1.0 if classifier.temperature_ is None else float(classifier.temperature_[0])
    model = _Probabilities(inference, temperature).eval()
    # Any example traces the same graph: nothing in it branches on the sizes.
    ids = torch.tensor([[2, 3, 2, 3, 2], [3, 2, 0, 0, 0]], dtype=torch.int64)
    ids = ids.clamp(max=_vocabulary_size(network) - 1)
    lengths = torch.tensor([5, 2], dtype=torch.int64)
    inputs, names = (ids, lengths), ["ids", "lengths"]
    if network.side is not None:
        # Side features: one more input, (batch, n_side) float32.
        inputs, names = (*inputs, torch.zeros((2, network.side.in_features))), [*names, "side"]
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        # The tracer notes every Python number taken from a size, and the
        # exporter that it is not the default one; neither concerns the graph.
        warnings.simplefilter("ignore")
        torch.onnx.export(
            model,
            inputs,
            buffer,
            dynamo=False,
            input_names=names,
            output_names=["probabilities", "logits"],
            dynamic_axes={
                "ids": {0: "batch", 1: "tokens"},
                **{name: {0: "batch"} for name in names[1:]},
                "probabilities": {0: "batch"},
                "logits": {0: "batch"},
            },
            opset_version=OPSET,
        )
    return buffer.getvalue()


def _vocabulary_size(network):
    return int(np.min([lookup.num_embeddings for lookup in network.lookups]))
