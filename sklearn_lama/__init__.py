"""Compact attention-based text classifiers for scikit-learn (LAMA, FCSR, Duo)."""

from ._duo import DuoClassifier
from ._fcsr import FCSRClassifier
from ._inputs import InputAdapter
from ._lama import LAMAClassifier
from ._meta_embedding import MetaEmbeddingTransformer
from ._persistence import load_weights, save_weights
from ._sequences import TokenSequences
from ._translator import DuoTranslator
from ._vectorizer import Word2VecVectorizer
from ._version import __version__

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
]
