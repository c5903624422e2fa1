"""A fitted ColumnTransformer's side columns as an ONNX graph, converted by skl2onnx.

Every transformer of the ColumnTransformer but the text step, with its column
selection (the remainder included), is converted by skl2onnx's own
converters, so any encoder that skl2onnx converts is exported; the graph
(:func:`side_graph`) is then joined to the classifier's (:func:`join`) as one
model, whose ``side`` input it feeds. The server (:mod:`._runtime`) feeds the
raw columns to that model and needs neither scikit-learn nor skl2onnx.
"""

import copy
import warnings

import numpy as np
from sklearn.pipeline import Pipeline

from ..text import MetaEmbeddingTransformer, Word2VecVectorizer

# Every name of the side columns' graph (its inputs, nodes, edges, constants and
# output) starts with this, so that none meets a name of the classifier's graph.
PREFIX = "columns/"
# The highest ai.onnx.ml operator set the converters may use (onnx 1.11's, which
# every onnxruntime that the onnx extra admits reads).
ML_OPSET = 3


def side_graph(columns, n_side, opset):
    """``(graph, settings, text_step)`` of a fitted ColumnTransformer holding one text step.

    ``graph`` (``None`` without side features) is skl2onnx's ModelProto of
    the side columns: one input per column read, ``(batch, 1)``, strings for
    a column whose encoder fitted string categories and float32 otherwise,
    and one output, the side features ``(batch, n_side)`` float32 in the
    ColumnTransformer's order. ``settings`` is ``{"text": column name,
    "inputs": {column: input name}, "output": output name, "features":
    names}``, with the names of the joined graph (:func:`join`). ``n_side``
    is the classifier's number of side features, checked against the
    ColumnTransformer's.
    """
    if getattr(columns, "feature_names_in_", None) is None:
        raise ValueError(
            "to_onnx exports a ColumnTransformer fitted on a DataFrame (its columns named): "
            "the server reads the columns by name."
        )
    text_step, text_name, text_column, selections = None, None, None, []
    for name, transformer, selected in columns.transformers_:
        names = [] if transformer == "drop" else _names(columns, selected)
        if isinstance(transformer, (Word2VecVectorizer, MetaEmbeddingTransformer)):
            text_step, text_name, text_column = transformer, name, names[0]
        selections.append((name, transformer, names))
    width = sum(
        part.stop - part.start
        for name, part in columns.output_indices_.items()
        if name != text_name
    )
    if width != n_side:
        raise ValueError(
            f"the ColumnTransformer's side columns make {width} features, but the classifier "
            f"was fitted with {n_side}."
        )
    if not n_side:  # the text alone, picked from a table by the ColumnTransformer
        return None, {"text": text_column, "inputs": {}, "output": None, "features": []}, text_step
    # One input per column read beside the text, in the order of the frame's columns.
    strings = {}
    for name, transformer, names in selections:
        if name != text_name:
            for j, column in enumerate(names):
                strings[column] = strings.get(column, False) or _reads_strings(transformer, j)
    inputs = [c for c in columns.feature_names_in_ if c in strings]
    position = {column: i for i, column in enumerate(inputs)}
    side = copy.copy(columns)
    # Without the text step; the others read their columns by position among the inputs.
    side.transformers_ = [
        (name, t, [position[c] for c in names])
        for name, t, names in selections
        if name != text_name
    ]
    graph = _convert(side, inputs, [strings[c] for c in inputs], n_side, opset)
    try:
        features = [str(f) for f in side.get_feature_names_out()]
    except (AttributeError, ValueError):  # a transformer that does not name its outputs
        features = [f"side{j}" for j in range(n_side)]
    settings = {
        "text": text_column,
        "inputs": {c: PREFIX + i.name for c, i in zip(inputs, graph.graph.input)},
        "output": PREFIX + graph.graph.output[0].name,
        "features": features,
    }
    return graph, settings, text_step


def _names(columns, selected):
    """The names of the columns ``selected``: names as given, or positions, slices, masks."""
    if isinstance(selected, str):
        return [selected]
    with warnings.catch_warnings():
        # scikit-learn 1.6 warns that the remainder's positions will be names in 1.7:
        # either gives the same names here.
        warnings.filterwarnings("ignore", r"\s*The format of the columns of the 'remainder'")
        if not isinstance(selected, slice) and all(isinstance(c, str) for c in selected):
            return list(selected)
        return [str(c) for c in np.atleast_1d(columns.feature_names_in_[selected])]


def _reads_strings(transformer, j):
    """Whether ``transformer`` reads its ``j``-th column as strings.

    A column is text where the transformer's first step fitted string
    categories (``categories_`` of the encoders) or filled it with a string
    (``statistics_`` of an imputer); a number otherwise.
    """
    steps = transformer.steps if isinstance(transformer, Pipeline) else [(None, transformer)]
    first = next((s for _, s in steps if s not in (None, "passthrough")), None)
    categories = getattr(first, "categories_", None)
    if categories is not None:
        return any(isinstance(v, str) for v in categories[j])
    statistics = getattr(first, "statistics_", None)
    return statistics is not None and isinstance(statistics[j], str)


def _convert(side, inputs, strings, n_side, opset):
    """skl2onnx's graph of the ColumnTransformer ``side``, which reads ``inputs`` by position."""
    from skl2onnx import convert_sklearn
    from skl2onnx.common.data_types import FloatTensorType, StringTensorType

    types = [
        (column, StringTensorType([None, 1]) if text else FloatTensorType([None, 1]))
        for column, text in zip(inputs, strings)
    ]
    # The output's name, other than every column's.
    output = "side"
    while output in inputs:
        output += "_"
    try:
        graph = convert_sklearn(
            side,
            initial_types=types,
            final_types=[(output, FloatTensorType([None, n_side]))],
            target_opset={"": opset, "ai.onnx.ml": ML_OPSET},
        )
    except Exception as exc:  # skl2onnx raises RuntimeError, TypeError, its own errors
        raise TypeError(
            f"to_onnx cannot convert the side columns' transformers with skl2onnx: {exc}"
        ) from exc
    # skl2onnx writes each node as operator set ``opset`` defines it, but records
    # the highest version those definitions date from; the joined graph holds one
    # version per domain, the classifier's.
    for entry in graph.opset_import:
        if entry.domain in ("", "ai.onnx"):
            entry.version = opset
    return graph


def join(side, classifier):
    """One ModelProto: the raw side columns and the token ids in, the classifier's outputs out.

    ``side``'s names take :data:`PREFIX`, and its output feeds
    ``classifier``'s ``side`` input; it stays an output of the joined graph,
    beside ``probabilities`` and ``logits``, which the server checks for
    missing values.
    """
    from onnx import compose

    side = compose.add_prefix(side, PREFIX)
    ir_version = max(side.ir_version, classifier.ir_version)
    side.ir_version = classifier.ir_version = ir_version
    output = side.graph.output[0].name
    return compose.merge_models(
        side,
        classifier,
        io_map=[(output, "side")],
        outputs=["probabilities", "logits", output],
    )
