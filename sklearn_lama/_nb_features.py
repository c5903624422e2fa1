"""Naive Bayes log-count ratios of the training tokens, appended to the embedding tables.

Word vectors trained on a few thousand documents carry little of what
separates the classes (word2vec puts "good" next to "bad"); a linear model on
TF-IDF n-grams learns exactly that, and wins on such corpora. The
log-count ratio of a token (Wang & Manning, 2012) is that signal in one
number per class; appended to every token vector it lets the attention models
weigh words by it from the first epoch.
"""

import numpy as np
import scipy.sparse as sp

from ._sequences import N_RESERVED

__all__ = ["append_ratios", "log_count_ratios", "nb_columns"]


def nb_columns(n_classes):
    """Columns of ratios for ``n_classes`` classes: one for two classes, else one per class."""
    return 1 if n_classes == 2 else n_classes


def log_count_ratios(batches, docs, y, weights, vocabulary_size, n_classes, alpha=1.0):
    """Standardised log-count ratios, shape ``(vocabulary_size, nb_columns(n_classes))``.

    For class ``c``, ``r_c(w) = log(p_c(w) / |p_c|_1) - log(q_c(w) / |q_c|_1)``
    with ``p_c(w)`` the ``alpha``-smoothed (weighted) number of class-``c``
    documents holding token ``w`` and ``q_c(w)`` that of the other classes
    (Wang & Manning, 2012, Eq. 1-2, one class against the rest; two classes
    need the second class's column only, the first is its negative). Each
    column is divided by its standard deviation over the vocabulary words;
    the padding row is 0.

    Parameters
    ----------
    batches : SequenceBatches
        Every document's token ids (``ids``, ``offsets``).
    docs, y, weights : ndarray of shape (n_rows,)
        The training rows: a document index, its encoded class and its weight.
    vocabulary_size : int
        Rows of the tables (reserved rows included).
    n_classes : int
        Number of classes.
    alpha : float, default=1.0
        Additive smoothing of the counts.
    """
    lengths = np.diff(batches.offsets)
    owner = np.repeat(np.arange(len(lengths)), lengths)
    presence = sp.csr_matrix(
        (np.ones(len(batches.ids)), (owner, batches.ids)),
        shape=(len(lengths), vocabulary_size),
    )
    # NBSVM's binarised features: a document counts once per distinct token.
    presence.data[:] = 1.0
    per_class = sp.csr_matrix(
        (np.asarray(weights, np.float64), (np.asarray(y), np.arange(len(y)))),
        shape=(n_classes, len(y)),
    )
    counts = np.asarray((per_class @ presence[np.asarray(docs)]).todense())
    classes = [1] if n_classes == 2 else range(n_classes)
    ratios = np.zeros((vocabulary_size, len(classes)))
    for column, c in enumerate(classes):
        p = counts[c] + alpha
        q = counts.sum(axis=0) - counts[c] + alpha
        ratios[:, column] = np.log(p / p.sum()) - np.log(q / q.sum())
    ratios[0] = 0.0
    scale = ratios[N_RESERVED:].std(axis=0) if vocabulary_size > N_RESERVED else 0.0
    return (ratios / np.where(scale > 0, scale, 1.0)).astype(np.float32)


def append_ratios(tables, ratios, weight):
    """Each table with the ratios appended, scaled to ``weight`` times the table's spread.

    A table's spread is the standard deviation of its word vectors' entries,
    so the ratio columns weigh the same against any embedding size; with
    ``k`` columns each is scaled by ``weight / sqrt(k)``, so that the block
    weighs the same whatever the number of classes.
    """
    weight = weight / np.sqrt(ratios.shape[1])
    appended = []
    for table in tables:
        table = np.asarray(table, np.float32)
        words = table[N_RESERVED:]
        spread = float(words.std()) if words.size else 1.0
        appended.append(np.hstack([table, ratios * (weight * (spread or 1.0))]))
    return appended
