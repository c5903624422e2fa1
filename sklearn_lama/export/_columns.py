"""A fitted ColumnTransformer's side columns as plain settings that the ONNX server applies.

The server (:mod:`._runtime`) imports neither scikit-learn nor torch, so the
encoders of the side columns are written as their fitted numbers: imputed
values, means and scales, categories. Only the encoders listed in
:data:`ENCODERS` are written; any other is refused before anything is.
"""

import numpy as np
from sklearn.impute import SimpleImputer
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

from ..text import MetaEmbeddingTransformer, Word2VecVectorizer

ENCODERS = "SimpleImputer, StandardScaler, OneHotEncoder (without drop), 'passthrough'"


def column_settings(columns, n_side):
    """``(settings, text_step)`` of a fitted ColumnTransformer holding one text step.

    ``settings`` is ``{"text": column name, "parts": [{"columns": [...],
    "steps": [...]}, ...]}``, one part per side transformer in the order of
    the side features; ``n_side`` is the classifier's number of them,
    checked against the parts' widths.
    """
    if getattr(columns, "feature_names_in_", None) is None:
        raise ValueError(
            "to_onnx exports a ColumnTransformer fitted on a DataFrame (its columns named): "
            "the server reads the columns by name."
        )
    text_step, text_column, parts = None, None, []
    for name, transformer, selected in columns.transformers_:
        if transformer == "drop" or len(np.atleast_1d(selected)) == 0:
            continue
        names = _names(columns, selected)
        if isinstance(transformer, (Word2VecVectorizer, MetaEmbeddingTransformer)):
            text_step, text_column = transformer, names[0]
            continue
        steps = transformer.steps if isinstance(transformer, Pipeline) else [(name, transformer)]
        parts.append({"columns": names, "steps": [_step(name, s) for _, s in steps]})
    width = sum(_width(part) for part in parts)
    if width != n_side:
        raise ValueError(
            f"the ColumnTransformer's side columns make {width} features, but the classifier "
            f"was fitted with {n_side}."
        )
    return {"text": text_column, "parts": parts}, text_step


def _names(columns, selected):
    """The names of the columns ``selected``: names as given, or positions, slices, masks."""
    if isinstance(selected, str):
        return [selected]
    if not isinstance(selected, slice) and all(isinstance(c, str) for c in selected):
        return list(selected)
    return [str(c) for c in np.atleast_1d(columns.feature_names_in_[selected])]


def _step(name, step):
    if step == "passthrough":
        return {"kind": "passthrough"}
    if isinstance(step, SimpleImputer) and not step.add_indicator:
        values = [v.item() if isinstance(v, np.generic) else v for v in step.statistics_]
        return {"kind": "impute", "values": values}
    if isinstance(step, StandardScaler):
        return {
            "kind": "scale",
            "mean": None if step.mean_ is None else step.mean_.tolist(),
            "scale": None if step.scale_ is None else step.scale_.tolist(),
        }
    if (
        isinstance(step, OneHotEncoder)
        and step.drop is None
        and step.min_frequency is None
        and step.max_categories is None
    ):
        return {
            "kind": "one_hot",
            "categories": [c.tolist() for c in step.categories_],
            "handle_unknown": step.handle_unknown,
        }
    raise TypeError(
        f"to_onnx cannot export the side column step {name!r} ({type(step).__name__}): the "
        f"server applies {ENCODERS} only."
    )


def _width(part):
    one_hot = [s for s in part["steps"] if s["kind"] == "one_hot"]
    if one_hot:
        return sum(len(c) for c in one_hot[-1]["categories"])
    return len(part["columns"])
