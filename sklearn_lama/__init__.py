"""Compact attention-based text classifiers for scikit-learn (LAMA, FCSR, Duo)."""

from ._version import __version__
from .classification import DuoClassifier, FCSRClassifier, InputAdapter, LAMAClassifier
from .text import MetaEmbeddingTransformer, TokenSequences, Word2VecVectorizer
from .translation import DuoTranslator
from .utils._persistence import load_weights, save_weights
from .utils._state import skops_trusted_types

__all__ = [
    "DuoClassifier",
    "DuoTranslator",
    "FCSRClassifier",
    "InputAdapter",
    "LAMAClassifier",
    "MetaEmbeddingTransformer",
    "TokenSequences",
    "Word2VecVectorizer",
    "__version__",
    "load_weights",
    "save_weights",
    "skops_trusted_types",
]
