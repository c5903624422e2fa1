"""Naive Bayes log-count ratios of the training tokens and pairs, appended to token vectors.

Word vectors trained on a few thousand documents carry little of what
separates the classes (word2vec puts "good" next to "bad"); a linear model on
TF-IDF n-grams learns exactly that, and wins on such corpora. The
log-count ratio of a token (Wang & Manning, 2012) is that signal in one
number per class; appended to every token vector it lets the attention models
weigh words by it from the first epoch. The same ratios of the word pairs
(bigrams) carry what the linear model learns from its bigram features
("not good"); each position gets that of the pair it ends.

A token or pair held by a few training documents of one class is an almost
certain cue on those documents and a weak one elsewhere: ratios counted on
the very documents a model trains on leak their labels (as target encoding
does without cross-fitting), and a model that fits them fast learns the
leak. Cross-fitted ratios (``nb_folds``) avoid it: a training document sees
the ratios counted on the documents outside its fold (Chernozhukov et al.,
2018); predictions read those of every training document.
"""

import numpy as np
import scipy.sparse as sp
import torch

from ..modules import NgramFeatures, document_folds
from ..text._sequences import N_RESERVED

__all__ = [
    "NaiveBayesColumns",
    "nb_columns",
    "ngram_log_count_ratios",
    "ratio_scales",
]


class NaiveBayesColumns:
    """The Naive Bayes columns a classifier appends to every token vector.

    The ratios of :func:`ngram_log_count_ratios`, of single tokens (when
    ``weight > 0``) then of token pairs (when ``pair_weight > 0``), come as
    fixed :class:`~sklearn_lama.modules.NgramFeatures` appended to every
    table's vectors, cross-fitted in ``folds`` folds. Each problem of the
    target (one for a label per document, one per label or per task
    otherwise) gives its ``nb_columns(n_classes)`` columns, side by side; a
    task counts only the documents labelled for it.

    Parameters
    ----------
    weight : float
        Weight of the token ratios (``nb_unigram_weight``).
    pair_weight : float
        Weight of the pair ratios (``nb_bigram_weight``).
    folds : int
        Cross-fitting folds of the ratios (``nb_folds``); 0 counts every
        training document for every row.
    target : SingleLabel, MultiLabel or MultiOutput
        The estimator's target encoding: its ``nb_sizes`` (classes of each
        problem) and ``nb_problems(y)``.
    """

    # (n, min_count): every token a training document holds has a ratio; a
    # pair needs two documents, one alone would be its document's label.
    _ORDERS = {1: 1, 2: 2}

    def __init__(self, weight, pair_weight, folds, target):
        self.weight = weight
        self.pair_weight = pair_weight
        self.folds = folds
        self.target = target

    def features(self, tables, vocabulary_size, counted=None):
        """The :class:`~sklearn_lama.modules.SequenceNetwork` arguments of the ratios.

        Parameters
        ----------
        tables : list of ndarray of shape (vocabulary_size, d_i)
            The embedding tables, whose spread scales the ratios.
        vocabulary_size : int
            Rows of the tables.
        counted : TrainingView, default=None
            The training rows the ratios count (held-out rows left out);
            ``None`` gives no n-grams, for a network rebuilt to receive
            trained weights.

        Returns
        -------
        features : dict
            ``token_features``, ``token_scales``, ``pair_features`` and
            ``pair_scales`` of :class:`~sklearn_lama.modules.SequenceNetwork`,
            those with a weight of 0 left out.
        width : int
            Columns that the features add to every table's vectors.
        """
        width = sum(nb_columns(n) for n in self.target.nb_sizes)
        problems = [] if counted is None else self._problems(counted)
        features, added = {}, 0
        for name, n, weight in (("token", 1, self.weight), ("pair", 2, self.pair_weight)):
            if not weight:
                continue
            if counted is None:
                keys, values = np.zeros(0, np.int64), np.zeros((0, width), np.float32)
            else:
                keys, values = _merged(
                    [
                        ngram_log_count_ratios(
                            counted.batches,
                            *rows,
                            vocabulary_size,
                            n_classes,
                            n=n,
                            min_count=self._ORDERS[n],
                            folds=self.folds,
                        )
                        for *rows, n_classes in problems
                    ]
                )
            features[f"{name}_features"] = NgramFeatures(
                torch.from_numpy(keys),
                torch.from_numpy(values),
                vocabulary_size,
                n=n,
                folds=self.folds,
            )
            features[f"{name}_scales"] = torch.from_numpy(ratio_scales(tables, weight, width))
            added += width
        return features, added

    def _problems(self, view):
        """``(docs, y, weights, n_classes)`` of each problem, from a training view's rows."""
        problems = []
        for k, (rows, labels, n) in enumerate(self.target.nb_problems(view.y)):
            weights = view.weights[rows] if view.weights.ndim == 1 else view.weights[rows, k]
            problems.append((view.index[rows], labels, weights, n))
        return problems


def _merged(tables):
    """The ``(keys, ratios)`` of several problems as one table, side by side.

    An n-gram one problem does not keep gets zeros in its columns, as an
    unknown one does.
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


def ngram_log_count_ratios(
    batches,
    docs,
    y,
    weights,
    vocabulary_size,
    n_classes,
    n=2,
    min_count=2,
    alpha=1.0,
    folds=0,
):
    """Standardised log-count ratios of the n-grams of the training documents.

    For class ``c``, ``r_c(g) = log(p_c(g) / |p_c|_1) - log(q_c(g) / |q_c|_1)``
    with ``p_c(g)`` the ``alpha``-smoothed (weighted) number of class-``c``
    documents holding the n-gram ``g`` (``n`` adjacent tokens within a
    document) and ``q_c(g)`` that of the other classes (Wang & Manning, 2012,
    Eq. 1-2, one class against the rest; two classes need the second class's
    column only, the first is its negative), for the n-grams held by at least
    ``min_count`` (weighted) training documents. Each column is divided by its
    standard deviation over those n-grams.

    With ``folds``, ``folds`` more blocks follow: block ``f`` (1 to
    ``folds``) holds the ratios counted without the training documents of
    fold ``f - 1`` (:func:`~sklearn_lama.modules.document_folds`), their keys
    offset by ``f * vocabulary_size ** n``, standardised by their own spread:
    nothing in block ``f`` depends on the labels of fold ``f - 1``.

    Parameters
    ----------
    batches : SequenceBatches
        Every document's token ids (``ids``, ``offsets``).
    docs, y, weights : ndarray of shape (n_rows,)
        The training rows: a document index, its encoded class and its weight.
    vocabulary_size : int
        Number of token ids.
    n_classes : int
        Number of classes.
    n : int, default=2
        Tokens per n-gram.
    min_count : float, default=2
        Fewest (weighted) counted documents holding an n-gram that has a ratio.
    alpha : float, default=1.0
        Additive smoothing of the counts.
    folds : int, default=0
        Cross-fitted blocks after block 0.

    Returns
    -------
    keys : ndarray of shape (n_ngrams,), int64
        The n-grams, sorted, each as ``block * vocabulary_size ** n + sum_j
        id_j * vocabulary_size ** (n - 1 - j)``; block 0 counts every
        training document.
    ratios : ndarray of shape (n_ngrams, nb_columns(n_classes)), float32
    """
    lengths = np.diff(batches.offsets)
    owner = np.repeat(np.arange(len(lengths)), lengths)
    ids = np.asarray(batches.ids, np.int64)
    grams, size = ids[: len(ids) - n + 1], len(ids) - n + 1
    for j in range(1, n):
        grams = grams * vocabulary_size + ids[j : j + size]
    # n-grams within a document: none spans the end of one and the start of the next.
    within = owner[:size] == owner[n - 1 :]
    grams = grams[within]
    keys, column = _unique_inverse(grams, vocabulary_size**n)
    # NBSVM's binarised features: a document counts once per distinct n-gram it holds.
    presence = sp.csr_matrix(
        (np.ones(len(grams)), (owner[:size][within], column)),
        shape=(len(lengths), len(keys)),
    )
    presence.sum_duplicates()
    holder, held = np.repeat(np.arange(len(lengths)), np.diff(presence.indptr)), presence.indices
    docs, y, weights = np.asarray(docs), np.asarray(y), np.asarray(weights, np.float64)
    # The weight each document brings to each class: a repeated row counts again.
    brought = np.zeros((len(lengths), n_classes))
    np.add.at(brought, (docs, y), weights)
    total = _class_counts(holder, held, brought, len(keys))
    blocks, counted = [], [total]
    if folds:
        fold = document_folds(torch.from_numpy(ids), torch.from_numpy(lengths), folds).numpy()
        fold = fold[holder]
        # A block counts the documents outside its fold: every document less those of the fold.
        for f in range(folds):
            inside = fold == f
            counted.append(total - _class_counts(holder[inside], held[inside], brought, len(keys)))
    for block, counts in enumerate(counted):
        kept = counts.sum(axis=0) >= min_count
        ratios = _ratios(counts[:, kept], n_classes, alpha)
        offset = block * vocabulary_size**n
        blocks.append((keys[kept] + offset, _standardised(ratios)))
    return tuple(np.concatenate(part) for part in zip(*blocks))


def _class_counts(holder, held, brought, n_features):
    """The (weighted) number of documents of each class holding each feature.

    Document ``holder[i]`` holds feature ``held[i]`` and brings
    ``brought[holder[i], c]`` to class ``c``; shape ``(n_classes, n_features)``.
    """
    return np.stack(
        [
            np.bincount(held, weights=brought[holder, c], minlength=n_features)
            for c in range(brought.shape[1])
        ]
    )


def _unique_inverse(values, size):
    """``np.unique(values, return_inverse=True)`` of integers in ``[0, size)``.

    Where the range is no larger than ``values``, a table of it finds them
    in linear time instead of sorting.
    """
    if size > len(values):
        return np.unique(values, return_inverse=True)
    seen = np.zeros(size, bool)
    seen[values] = True
    return np.flatnonzero(seen), np.cumsum(seen)[values] - 1


def _ratios(counts, n_classes, alpha):
    """Wang & Manning's Eq. 1-2, one class against the rest, one column per class."""
    classes = [1] if n_classes == 2 else range(n_classes)
    ratios = np.zeros((counts.shape[1], len(classes)))
    for column, c in enumerate(classes):
        p = counts[c] + alpha
        q = counts.sum(axis=0) - counts[c] + alpha
        ratios[:, column] = np.log(p / p.sum()) - np.log(q / q.sum())
    return ratios


def _standardised(ratios):
    """``ratios`` divided by the standard deviation of its columns."""
    scale = ratios.std(axis=0) if len(ratios) else 0.0
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
