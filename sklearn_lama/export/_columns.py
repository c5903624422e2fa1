"""A fitted ColumnTransformer's side columns as an ONNX graph, converted by skl2onnx.

Every transformer of the ColumnTransformer but the text step, with its column
selection (the remainder included), is converted by skl2onnx's own
converters, so any encoder that skl2onnx converts is exported; the graph
(:func:`side_graph`) is then joined to the classifier's (:func:`join`) as one
model, whose ``side`` input it feeds. The server (:mod:`._runtime`) feeds the
raw columns to that model and needs neither scikit-learn nor skl2onnx.
"""

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

    ``graph`` (``None`` without side features) is a ModelProto of the side
    columns, joining skl2onnx's graph of each transformer (:func:`_convert`):
    one input per column read, ``(batch, 1)``, strings for a column whose
    encoder fitted string categories and float32 otherwise, and one output,
    the side features ``(batch, n_side)`` float32 in the ColumnTransformer's
    order. ``settings`` is ``{"text": column name,
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
    kept = [(name, t, names) for name, t, names in selections if name != text_name]
    graph = _convert(columns, kept, inputs, strings, n_side, opset)
    try:
        text_part = columns.output_indices_.get(text_name, slice(0, 0))
        features = [
            str(f)
            for j, f in enumerate(columns.get_feature_names_out())
            if not text_part.start <= j < text_part.stop
        ]
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


def _convert(columns, kept, inputs, strings, n_side, opset):
    """One graph of the transformers ``kept``: the columns ``inputs`` in, their features out.

    skl2onnx converts each transformer on its own, reading its columns; each
    graph's names take the transformer's position as prefix, its inputs
    become the columns' (shared by the transformers), and a ``Concat`` joins their outputs,
    cast to float32, in the ColumnTransformer's order (``output_indices_``).
    Passed-through columns go to the ``Concat`` as they are read.
    """
    from onnx import TensorProto, compose, helper
    from skl2onnx import convert_sklearn
    from skl2onnx.common.data_types import FloatTensorType, StringTensorType

    types = {
        c: StringTensorType([None, 1]) if strings[c] else FloatTensorType([None, 1])
        for c in inputs
    }
    # The output's name, other than every column's.
    output = "side"
    while output in inputs:
        output += "_"
    order = sorted(kept, key=lambda part: columns.output_indices_[part[0]].start)
    parts, nodes, initializers, sparse, value_info = [], [], [], [], []
    opsets, ir_version = {"": opset}, 7
    for k, (name, transformer, names) in enumerate(order):
        indices = columns.output_indices_[name]
        if transformer == "drop" or not names or indices.stop == indices.start:
            continue
        if transformer == "passthrough":
            parts.extend(names)
            continue
        try:
            sub = convert_sklearn(
                transformer,
                initial_types=[(c, types[c]) for c in names],
                target_opset={"": opset, "ai.onnx.ml": ML_OPSET},
            )
        except Exception as exc:  # skl2onnx raises RuntimeError, TypeError, its own errors
            raise TypeError(
                f"to_onnx cannot convert the side columns' transformers with skl2onnx: {exc}"
            ) from exc
        graph = compose.add_prefix_graph(sub.graph, f"{k}/")
        # skl2onnx may rename an input (one named as its output, "variable"): the
        # graph's inputs are the columns in the order given, renamed to the columns.
        reads = {i.name: column for i, column in zip(graph.input, names)}
        for node in graph.node:
            node.input[:] = [reads.get(edge, edge) for edge in node.input]
        nodes.extend(graph.node)
        initializers.extend(graph.initializer)
        sparse.extend(graph.sparse_initializer)
        value_info.extend(graph.value_info)
        part = graph.output[0]
        if part.type.tensor_type.elem_type != TensorProto.FLOAT:
            nodes.append(
                helper.make_node("Cast", [part.name], [f"{k}/float"], to=TensorProto.FLOAT)
            )
            parts.append(f"{k}/float")
        else:
            parts.append(part.name)
        # skl2onnx writes each node as operator set ``opset`` defines it, but records
        # the highest version those definitions date from; the joined graph holds one
        # version per domain, the classifier's.
        for entry in sub.opset_import:
            if entry.domain not in ("", "ai.onnx"):
                opsets[entry.domain] = max(opsets.get(entry.domain, 1), entry.version)
        ir_version = max(ir_version, sub.ir_version)
    nodes.append(helper.make_node("Concat", parts, [output], axis=1))
    graph = helper.make_graph(
        nodes,
        "side_columns",
        [
            helper.make_tensor_value_info(
                c, TensorProto.STRING if strings[c] else TensorProto.FLOAT, [None, 1]
            )
            for c in inputs
        ],
        [helper.make_tensor_value_info(output, TensorProto.FLOAT, [None, n_side])],
        initializer=initializers,
        sparse_initializer=sparse,
        value_info=value_info,
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid(d, v) for d, v in opsets.items()]
    )
    model.ir_version = ir_version
    return model


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
