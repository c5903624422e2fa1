"""Text to token sequences: tokenising, vocabularies, word vectors (no torch).

The only thing that leaves this layer is a :class:`TokenSequences`.
"""

from ._meta_embedding import MetaEmbeddingTransformer
from ._sequences import TokenSequences
from ._vectorizer import Word2VecVectorizer

__all__ = ["MetaEmbeddingTransformer", "TokenSequences", "Word2VecVectorizer"]
