"""Naive Bayes log-count ratios of the training tokens, appended to the embedding tables.

Word vectors trained on a few thousand documents carry little of what
separates the classes (word2vec puts "good" next to "bad"); a linear model on
TF-IDF n-grams learns exactly that, and wins on such corpora. The
log-count ratio of a token (Wang & Manning, 2012) is that signal in one
number per class; appended to every token vector it lets the attention models
weigh words by it from the first epoch. The same ratios of the word pairs
(bigrams) carry what the linear model learns from its bigram features
("not good"); each position gets that of the pair it ends.

A pair held by two training documents of one class is an almost certain cue
on those documents and a weak one elsewhere: ratios counted on the very
documents a model trains on leak their labels (as target encoding does
without cross-fitting), and a model that fits them fast learns the leak.
Cross-fitted pair ratios (``nb_folds``) avoid it: a training document sees
the ratios counted on the documents outside its fold (Chernozhukov et al.,
2018).
"""

import numpy as np
import scipy.sparse as sp
import torch

from ..modules import PairFeatures, document_folds
from ..text._sequences import N_RESERVED

__all__ = [
    "NaiveBayesColumns",
    "append_ratios",
    "bigram_log_count_ratios",
    "log_count_ratios",
    "nb_columns",
    "ratio_scales",
]


class NaiveBayesColumns:
    """The Naive Bayes columns a classifier appends to its embedding tables.

    The token ratios of :func:`log_count_ratios` join every table as
    fine-tuned columns (when ``weight > 0``); the pair ratios of
    :func:`bigram_log_count_ratios` come as fixed
    :class:`~sklearn_lama.modules.PairFeatures` appended to every table's
    vectors (when ``pair_weight > 0``). Each problem of the target (one
    for a label per document, one per label or per task otherwise) gives
    its ``nb_columns(n_classes)`` columns, side by side; a task counts only
    the documents labelled for it.

    Parameters
    ----------
    weight : float
        Weight of the token ratios (``nb_unigram_weight``).
    pair_weight : float
        Weight of the pair ratios (``nb_bigram_weight``).
    folds : int
        Cross-fitting folds of the pair ratios (``nb_folds``).
    target : SingleLabel, MultiLabel or MultiOutput
        The estimator's target encoding: its ``nb_sizes`` (classes of each
        problem) and ``nb_problems(y)``.
    """

    def __init__(self, weight, pair_weight, folds, target):
        self.weight = weight
        self.pair_weight = pair_weight
        self.folds = folds
        self.target = target

    def extend(self, tables, vocabulary_size, counted=None):
        """The tables with the token ratios appended, and the pair features.

        Parameters
        ----------
        tables : list of ndarray of shape (vocabulary_size, d_i)
            The embedding tables.
        vocabulary_size : int
            Rows of the tables.
        counted : TrainingView, default=None
            The training rows the ratios count (held-out rows left out);
            ``None`` gives zeros of the right shapes, for a network rebuilt to
            receive trained weights.

        Returns
        -------
        tables : list of ndarray of shape (vocabulary_size, d_i + n_token_columns)
            The tables with the scaled token ratios appended.
        pairs : dict
            ``pair_features`` and ``pair_scales`` of
            :class:`~sklearn_lama.modules.SequenceNetwork`; empty without
            pair ratios.
        pair_width : int
            Columns that the pair features add to every table's vectors.
        """
        width = sum(nb_columns(n) for n in self.target.nb_sizes)
        problems = [] if counted is None else self._problems(counted)
        pairs, pair_width = {}, 0
        if self.pair_weight:
            pair_width = width
            if counted is None:
                keys, values = np.zeros(0, np.int64), np.zeros((0, width), np.float32)
            else:
                keys, values = _merged_pairs(
                    [
                        bigram_log_count_ratios(
                            counted.batches, *rows, vocabulary_size, n, folds=self.folds
                        )
                        for *rows, n in problems
                    ]
                )
            pairs = {
                "pair_features": PairFeatures(
                    torch.from_numpy(keys),
                    torch.from_numpy(values),
                    vocabulary_size,
                    folds=self.folds,
                ),
                # Scaled by the spread of the tables' own vectors, before the ratios join them.
                "pair_scales": torch.from_numpy(ratio_scales(tables, self.pair_weight, width)),
            }
        if self.weight:
            if counted is None:
                ratios = np.zeros((vocabulary_size, width), np.float32)
            else:
                ratios = np.hstack(
                    [
                        log_count_ratios(counted.batches, *rows, vocabulary_size, n)
                        for *rows, n in problems
                    ]
                )
            tables = append_ratios(tables, ratios, self.weight)
        return tables, pairs, pair_width

    def _problems(self, view):
        """``(docs, y, weights, n_classes)`` of each problem, from a training view's rows."""
        problems = []
        for k, (rows, labels, n) in enumerate(self.target.nb_problems(view.y)):
            weights = view.weights[rows] if view.weights.ndim == 1 else view.weights[rows, k]
            problems.append((view.index[rows], labels, weights, n))
        return problems


def _merged_pairs(tables):
    """The ``(keys, ratios)`` of several problems as one table, side by side.

    A pair one problem does not keep gets zeros in its columns, as an
    unknown pair does.
    """
    if len(tables) == 1:
        return tables[0]
    keys = np.unique(np.concatenate([k for k, _ in tables]))
    widths = [v.shape[1] for _, v in tables]
    values = np.zeros((len(keys), sum(widths)), np.float32)
    start = 0
    for (problem_keys, problem_values), width in zip(tables, widths):
        values[np.searchsorted(keys, problem_keys), start : start + width] = problem_values
        start += width
    return keys, values


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
    batches,
    docs,
    y,
    weights,
    vocabulary_size,
    n_classes,
    min_count=2,
    alpha=1.0,
    folds=0,
):
    """The log-count ratios of the token pairs of the training documents.

    The ratios of :func:`log_count_ratios`, with a document's distinct
    adjacent pairs of tokens in place of its distinct tokens (Wang & Manning,
    2012, use both as features), for the pairs held by at least ``min_count``
    (weighted) training documents; each column is divided by its standard
    deviation over those pairs.

    With ``folds``, ``folds`` more blocks follow: block ``f`` (1 to
    ``folds``) holds the ratios counted without the training documents of
    fold ``f - 1`` (:func:`~sklearn_lama.modules.document_folds`), their keys offset by
    ``f * vocabulary_size ** 2``, scaled like block 0.

    Returns
    -------
    keys : ndarray of shape (n_pairs,), int64
        The pairs, sorted, each as ``block * vocabulary_size ** 2 + first *
        vocabulary_size + second``; block 0 counts every training document.
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
    docs, y, weights = np.asarray(docs), np.asarray(y), np.asarray(weights)
    counts = _class_counts(presence, docs, y, weights, n_classes)
    kept = counts.sum(axis=0) >= min_count
    ratios = _ratios(counts[:, kept], n_classes, alpha)
    blocks = [(keys[kept], _standardised(ratios, ratios))]
    fold = None
    if folds:
        every = document_folds(torch.from_numpy(ids), torch.from_numpy(lengths), folds)
        fold = every.numpy()[docs]
    for f in range(folds):
        out = fold != f
        counts = _class_counts(presence, docs[out], y[out], weights[out], n_classes)
        kept_f = counts.sum(axis=0) >= min_count
        ratios_f = _ratios(counts[:, kept_f], n_classes, alpha)
        offset = (f + 1) * vocabulary_size * vocabulary_size
        blocks.append((keys[kept_f] + offset, _standardised(ratios_f, ratios)))
    return tuple(np.concatenate(block) for block in zip(*blocks))


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
