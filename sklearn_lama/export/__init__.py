"""Serving without the training stack: fitted classifiers as ONNX graphs.

:func:`to_onnx` writes a fitted classifier or text pipeline as an ONNX graph
(token ids and lengths to class probabilities) and a settings file beside it;
:class:`OnnxTextClassifier` serves the two with numpy and onnxruntime only.
Both need the ``onnx`` extra: ``pip install 'sklearn-lama[onnx]'``.
"""

from ._onnx import to_onnx
from ._runtime import OnnxTextClassifier, TextEncoder

__all__ = ["OnnxTextClassifier", "TextEncoder", "to_onnx"]
