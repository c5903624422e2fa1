"""How faithful an explanation is: the deletion test."""

from numbers import Integral

import numpy as np
from sklearn.utils import check_random_state

from ..text._sequences import TokenSequences
from ._attention import read_documents, task_proba
from ._methods import resolve_method


def _ranks(sequences, rankings):
    """Each token's place in its document's ranking (0: deleted first), as one flat array."""
    lengths = sequences.lengths
    starts = np.repeat(sequences.offsets[:-1], lengths)
    ranks = np.empty(len(sequences.ids), dtype=np.int64)
    if len(ranks):
        positions = np.concatenate([np.asarray(order, dtype=np.int64) for order in rankings])
        ranks[starts + positions] = np.arange(len(ranks)) - starts
    return ranks


# Tokens of the shortened documents classified in one call: several values of k
# share a call (and so its batches) while their documents stay within this.
_CALL_TOKENS = 2**22


def _shortened(sequences, ranks, max_k):
    """``(k, documents, shortened)`` for ``k = 1 ... max_k``, several ``k`` per ``shortened``.

    ``documents`` are those with tokens left to delete at ``k`` (every one at
    ``k = 1``), ``shortened`` a :class:`TokenSequences` of each group's
    documents, ``k`` by ``k``, without their ``k`` top-ranked tokens; the
    caller classifies it once and reads each ``k``'s rows in order.
    """
    lengths = sequences.lengths
    owner = np.repeat(np.arange(len(sequences)), lengths)
    group, ids, counts, sides, tokens = [], [], [], [], 0
    last = min(max_k, max(int(lengths.max(initial=0)), 1))
    for k in range(1, last + 1):
        documents = np.flatnonzero(lengths >= k) if k > 1 else np.arange(len(sequences))
        keep = ranks >= k
        if k > 1:
            keep &= lengths[owner] >= k
        group.append((k, documents))
        ids.append(sequences.ids[keep])
        counts.append(np.bincount(owner[keep], minlength=len(sequences))[documents])
        if sequences.side is not None:
            sides.append(sequences.side[documents])
        tokens += len(ids[-1]) + len(documents)
        if tokens >= _CALL_TOKENS or k == last:
            offsets = np.concatenate([[0], np.cumsum(np.concatenate(counts), dtype=np.int64)])
            yield (
                group,
                TokenSequences(
                    np.concatenate(ids),
                    offsets,
                    sequences.tables,
                    sequences.vocabulary_id,
                    sequences.pretrained,
                    side=np.concatenate(sides) if sides else None,
                    side_names=sequences.side_names,
                ),
            )
            group, ids, counts, sides, tokens = [], [], [], [], 0


def deletion_curve(pipeline, documents, method=None, *, max_k=10, random_state=None, task=None):
    """Drop of the predicted class's probability as the top-ranked tokens are deleted.

    The deletion test of an explanation: each document's tokens are ranked
    by ``method`` (most positive score first: the tokens that, by the
    method, raised the predicted class most), and for ``k = 1 ... max_k``
    the ``k`` first ones are deleted from the document (all of them from a
    shorter document) and the document is classified again. The more
    faithful the ranking, the faster the predicted class's probability
    falls; ``method="random"`` ranks the tokens in a random order, the
    floor that any explanation should clear. The mean of the curve over
    ``k`` and the documents is the AOPC (area over the perturbation curve).

    The explained class is each document's most probable class: for a
    multi-label classifier its most probable label (the drop is that
    label's own probability), for a multi-output one the most probable
    class of ``task``.

    Parameters
    ----------
    pipeline : Pipeline
        A fitted pipeline: a :class:`~sklearn_lama.Word2VecVectorizer` or
        :class:`~sklearn_lama.MetaEmbeddingTransformer`, then a classifier of
        this package.
    documents : iterable of str
        Raw documents.
    method : {"attention", "integrated_gradients", "occlusion", "random"}, \
            TokenExplainer or None, default=None
        What ranks the tokens; ``None`` is the classifier's default
        explanation.
    max_k : int, default=10
        Tokens deleted at most. Each ``k`` classifies again only the
        documents that still have tokens to lose (at least ``k``): beyond the
        longest document, a larger ``max_k`` costs no further prediction.
    random_state : int, RandomState instance or None, default=None
        Draws the orders of ``method="random"``; the other methods ignore it.
    task : int, default=None
        For a classifier fitted on a multi-output ``y`` (one column per task),
        the task (column of ``y``) whose predicted class is explained; it
        must be given there, and left ``None`` for any other classifier.

    Returns
    -------
    drops : ndarray of shape (n_documents, max_k)
        ``drops[i, k - 1]`` is the predicted class's probability for
        document ``i`` minus its probability once its ``k`` top-ranked
        tokens are deleted.

    References
    ----------
    .. [1] W. Samek, A. Binder, G. Montavon, S. Lapuschkin and K.-R. Müller,
       "Evaluating the Visualization of What a Deep Neural Network Has
       Learned", IEEE Transactions on Neural Networks and Learning Systems,
       2017.
    .. [2] J. DeYoung et al., "ERASER: A Benchmark to Evaluate Rationalized
       NLP Models", ACL 2020.

    Examples
    --------
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn_lama import FCSRClassifier, Word2VecVectorizer
    >>> from sklearn_lama.inspection import deletion_curve
    >>> docs = ["a good great film", "a bad awful film"] * 20
    >>> labels = ["pos", "neg"] * 20
    >>> pipe = make_pipeline(
    ...     Word2VecVectorizer(vector_size=8, min_count=1, random_state=0),
    ...     FCSRClassifier(max_epochs=3, random_state=0),
    ... ).fit(docs, labels)
    >>> drops = deletion_curve(pipe, docs[:4], "occlusion", max_k=3)
    >>> drops.shape
    (4, 3)
    """
    if not isinstance(max_k, Integral) or isinstance(max_k, bool) or max_k < 1:
        raise ValueError(f"max_k must be a positive int; got {max_k!r}.")
    _, sequences, classifier, task = read_documents(pipeline, documents, task)
    random = isinstance(method, str) and method == "random"
    if not random:
        method = resolve_method(method, classifier)
        # Before any prediction: a method refuses documents too long for it at once.
        method._check_documents(classifier, sequences)
    rows = np.arange(len(sequences))
    proba = task_proba(classifier, sequences, task)
    explained = proba.argmax(axis=1)
    if random:
        rng = check_random_state(random_state)
        rankings = [rng.permutation(n) for n in sequences.lengths]
    else:
        values = method.attribute(classifier, sequences, explained, task=task)
        # A stable sort: equal scores keep the order of the tokens.
        rankings = [np.argsort(-method.token_scores(v), kind="stable") for v in values]
    before = proba[rows, explained]
    drops = np.empty((len(sequences), max_k))
    # Past its length, a document loses no more tokens and keeps its last drop:
    # each k classifies again only the documents with tokens left to delete,
    # and the shortened documents of several k share one call.
    if not len(sequences):
        return drops
    for group, shortened in _shortened(sequences, _ranks(sequences, rankings), max_k):
        after = task_proba(classifier, shortened, task)
        start = 0
        for k, documents in group:
            end = start + len(documents)
            drops[documents, k - 1] = (
                before[documents] - after[np.arange(start, end), explained[documents]]
            )
            start = end
    done = np.maximum(sequences.lengths, 1)
    past = np.arange(max_k) >= done[:, None]
    np.copyto(drops, drops[rows, np.minimum(done, max_k) - 1][:, None], where=past)
    return drops
