"""Word2vec vectors of subword units: the starting point of the translator's embedding streams."""

import numpy as np
import torch

from ..text._vectorizer import train_word_vectors

__all__ = ["start_from_word2vec", "word2vec_vectors"]


def word2vec_vectors(sequences, width, sg, seed):
    """Word2vec vectors of the ids that occur in ``sequences`` (gensim, one worker).

    The word vectors of :class:`~sklearn_lama.Word2VecVectorizer`'s training
    (:func:`~sklearn_lama.text._vectorizer.train_word_vectors`), each id a word:
    window 5, 5 negative samples, 5 epochs, every id kept.

    Parameters
    ----------
    sequences : list of int arrays
        Subword ids, one array per sentence.
    width : int
        Vector size.
    sg : bool
        Skip-gram if true, CBOW otherwise.
    seed : int

    Returns
    -------
    ids : ndarray of int64, shape (n,)
        Every id that occurs in ``sequences``.
    vectors : ndarray of float32, shape (n, width)
    """
    sentences = [[str(int(i)) for i in ids] for ids in sequences if len(ids)]
    if not sentences:
        return np.zeros(0, np.int64), np.zeros((0, width), np.float32)
    words, vectors = train_word_vectors(
        sentences,
        vector_size=width,
        min_count=1,
        window=5,
        sg=int(sg),
        negative=5,
        epochs=5,
        workers=1,
        seed=seed,
    )
    return np.array([int(word) for word in words], dtype=np.int64), vectors


def start_from_word2vec(embeddings, sequences, std, seed):
    """Overwrite the rows of the ids in ``sequences`` with word2vec vectors, one model per table.

    The first table gets CBOW vectors and the second skip-gram ones, trained separately on the
    same sentences: two different embeddings of the same tokens, as the Duo paper's
    meta-embeddings are. Each table's vectors are rescaled to the standard deviation ``std``; ids
    that never occur keep their random rows.

    Parameters
    ----------
    embeddings : sequence of torch.nn.Embedding
    sequences : list of int arrays
        The training sentences' ids.
    std : float
        Standard deviation of the rescaled vectors.
    seed : int
        Seed of the first model; the second uses ``seed + 1``.
    """
    for k, embedding in enumerate(embeddings):
        ids, vectors = word2vec_vectors(sequences, embedding.embedding_dim, k % 2 == 1, seed + k)
        if not len(ids):
            continue
        vectors *= std / max(float(vectors.std()), 1e-12)
        with torch.no_grad():
            embedding.weight[torch.from_numpy(ids)] = torch.from_numpy(vectors).to(
                embedding.weight
            )
