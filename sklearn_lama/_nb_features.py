"""Naive Bayes log-count ratios of the training tokens, appended to the embedding tables.

Word vectors trained on a few thousand documents carry little of what
separates the classes (word2vec puts "good" next to "bad"); a linear model on
TF-IDF n-grams learns exactly that, and wins on such corpora. The
log-count ratio of a token (Wang & Manning, 2012) is that signal in one
number per class; appended to every token vector it lets the attention models
weigh words by it from the first epoch. The same ratios of the word pairs
(bigrams) carry what the linear model learns from its bigram features
("not good"); each position gets that of the pair it ends.
"""

import numpy as np
import scipy.sparse as sp

from ._sequences import N_RESERVED

__all__ = [
    "append_ratios",
    "bigram_log_count_ratios",
    "log_count_ratios",
    "nb_columns",
    "ratio_scales",
]


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
    counts = _class_counts(presence, docs, y, weights, n_classes)
    ratios = _ratios(counts, n_classes, alpha)
    ratios[0] = 0.0
    return _standardised(ratios, ratios[N_RESERVED:])


def bigram_log_count_ratios(
    batches, docs, y, weights, vocabulary_size, n_classes, min_count=2, alpha=1.0
):
    """The log-count ratios of the token pairs of the training documents.

    The ratios of :func:`log_count_ratios`, with a document's distinct
    adjacent pairs of tokens in place of its distinct tokens (Wang & Manning,
    2012, use both as features), for the pairs held by at least ``min_count``
    (weighted) training documents; each column is divided by its standard
    deviation over those pairs.

    Returns
    -------
    keys : ndarray of shape (n_pairs,), int64
        The pairs, sorted, each as ``first * vocabulary_size + second``.
    ratios : ndarray of shape (n_pairs, nb_columns(n_classes)), float32
    """
    lengths = np.diff(batches.offsets)
    owner = np.repeat(np.arange(len(lengths)), lengths)
    ids = np.asarray(batches.ids, np.int64)
    # Pairs within a document: the last token of one and the first of the next are no pair.
    within = owner[:-1] == owner[1:]
    pairs = (ids[:-1] * vocabulary_size + ids[1:])[within]
    keys, column = np.unique(pairs, return_inverse=True)
    presence = sp.csr_matrix(
        (np.ones(len(pairs)), (owner[:-1][within], column)),
        shape=(len(lengths), len(keys)),
    )
    counts = _class_counts(presence, docs, y, weights, n_classes)
    kept = counts.sum(axis=0) >= min_count
    ratios = _ratios(counts[:, kept], n_classes, alpha)
    return keys[kept], _standardised(ratios, ratios)


def _class_counts(presence, docs, y, weights, n_classes):
    """The (weighted) number of documents of each class holding each feature."""
    # NBSVM's binarised features: a document counts once per distinct feature.
    presence.data[:] = 1.0
    per_class = sp.csr_matrix(
        (np.asarray(weights, np.float64), (np.asarray(y), np.arange(len(y)))),
        shape=(n_classes, len(y)),
    )
    return np.asarray((per_class @ presence[np.asarray(docs)]).todense())


def _ratios(counts, n_classes, alpha):
    """Wang & Manning's Eq. 1-2, one class against the rest, one column per class."""
    classes = [1] if n_classes == 2 else range(n_classes)
    ratios = np.zeros((counts.shape[1], len(classes)))
    for column, c in enumerate(classes):
        p = counts[c] + alpha
        q = counts.sum(axis=0) - counts[c] + alpha
        ratios[:, column] = np.log(p / p.sum()) - np.log(q / q.sum())
    return ratios


def _standardised(ratios, reference):
    """``ratios`` divided by the standard deviation of ``reference``'s columns."""
    scale = reference.std(axis=0) if len(reference) else 0.0
    return (ratios / np.where(scale > 0, scale, 1.0)).astype(np.float32)


def ratio_scales(tables, weight, n_columns):
    """The factor of the ratio columns appended to each table.

    ``weight`` times the table's spread, the standard deviation of its word
    vectors' entries, so that the ratio columns weigh the same against any
    embedding size; divided by ``sqrt(n_columns)``, so that the block weighs
    the same whatever the number of classes.
    """
    scales = []
    for table in tables:
        words = np.asarray(table, np.float32)[N_RESERVED:]
        spread = float(words.std()) if words.size else 1.0
        scales.append(weight / np.sqrt(n_columns) * (spread or 1.0))
    return np.asarray(scales, np.float32)


def append_ratios(tables, ratios, weight):
    """Each table with the ratios appended, scaled by :func:`ratio_scales`."""
    scales = ratio_scales(tables, weight, ratios.shape[1])
    return [
        np.hstack([np.asarray(table, np.float32), ratios * scale])
        for table, scale in zip(tables, scales)
    ]
