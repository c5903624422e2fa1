"""The words that count most per class, by attention (Table 6 of the LAMA paper) or attribution."""

from collections import defaultdict
from numbers import Integral

import numpy as np

from ..classification._targets import MultiLabel, _is_missing
from ..utils._sklearn_compat import Interval, validate_params
from ._attention import attend, check_task, split_pipeline


def _groups(pipeline, classifier, documents, y, task):
    """``(documents, labels)``: each document once per class whose group holds it.

    ``labels`` is ``None`` where the documents are grouped by their
    predicted class, which :func:`attend` finds with the explanation.
    """
    if isinstance(getattr(classifier, "target_encoder_", None), MultiLabel):
        n_labels = len(classifier.classes_)
        if y is None:
            held = pipeline.predict(documents)
        else:
            held = np.asarray(y)
            if held.shape != (len(documents), n_labels) or not np.isin(held, (0, 1)).all():
                raise ValueError(
                    f"y must be an indicator matrix of shape ({len(documents)}, {n_labels}) "
                    "(the documents by the classifier's labels) for a multi-label "
                    f"classifier; got an array of shape {held.shape}."
                )
        # A document counts in the group of every label it holds, explained as that label.
        rows, labels = np.nonzero(held)
        return [documents[i] for i in rows], labels
    if y is None:
        return documents, None
    y = np.asarray(y)
    if task is not None and y.ndim == 2:
        n_tasks = len(classifier.classes_)
        if y.shape != (len(documents), n_tasks):
            raise ValueError(
                f"y must have shape ({len(documents)}, {n_tasks}) (the documents by the "
                f"classifier's tasks), or be the task's column; got {y.shape}."
            )
        y = y[:, task]
        labelled = ~_is_missing(y)
        return [d for d, keep in zip(documents, labelled) if keep], y[labelled]
    if y.ndim != 1:
        raise ValueError(
            f"y must be 1-D, one label per document; got an array of shape {y.shape}"
            + (" (pass task= for a multi-output classifier)." if task is None else ".")
        )
    return documents, y


@validate_params(
    {
        "pipeline": "no_validation",
        "X": ["array-like"],
        "y": ["array-like", None],
        "n_words": [Interval(Integral, 1, None, closed="left")],
        "min_count": [Interval(Integral, 1, None, closed="left")],
        "method": "no_validation",
        "task": "no_validation",
    },
    prefer_skip_nested_validation=True,
)
def top_attended_words(pipeline, X, y=None, n_words=10, *, min_count=5, method=None, task=None):
    """The words that count most for each class.

    The documents are grouped by class (true or predicted label) and each
    token gets a score from ``method`` (:meth:`TokenExplainer.token_scores`);
    a word's score in a class is the mean score of its occurrences in the
    documents of that class. Words seen fewer than ``min_count`` times in the
    class, and out-of-vocabulary tokens, are left out.

    - With integrated gradients or occlusion, a token's score is its
      attribution to the class of its document's group: the list of a class
      holds the words that, where they occur, raise that class's
      probability most. A word frequent in the class but without effect on
      the model scores about 0.
    - With attention it is the table of top attended words of the LAMA paper
      (Table 6): a token's weight, averaged over the attention rows, times
      the number of tokens of its document (minus 1, so that 0 means "as much
      as a uniform average" whatever the document's length). Attention is
      the same whatever the class, so these lists show where the model
      pooled in the documents of a class, not what counted for it.

    Parameters
    ----------
    pipeline : Pipeline
        A fitted pipeline: a :class:`~sklearn_lama.Word2VecVectorizer` or
        :class:`~sklearn_lama.MetaEmbeddingTransformer`, then a classifier of
        this package.
    X : iterable of str
        Raw documents.
    y : array-like of shape (n_documents,) or (n_documents, n_outputs), default=None
        True labels to group the documents by; ``None`` groups them by the
        predicted label. For a multi-label classifier, the indicator matrix
        ``(n_documents, n_labels)``: a document is in the group of every
        label it holds (``None``: every label it is predicted to hold) and
        explained as that label. For a multi-output classifier, the 2-D
        ``y`` (its column ``task`` is read; documents whose label is missing
        are left out) or the task's labels.
    n_words : int, default=10
        Words listed per class.
    min_count : int, default=5
        Occurrences a word needs in a class to be ranked there.
    method : {"attention", "integrated_gradients", "occlusion"}, \
            TokenExplainer or None, default=None
        How tokens are scored; ``None`` is the classifier's default
        explanation, the most faithful one in the deletion benchmark (see
        the user guide).
    task : int, default=None
        For a classifier fitted on a multi-output ``y`` (one column per task,
        ``classes_`` a list), the task (column of ``y``) whose classes are
        listed; it must be given there, and left ``None`` for any other
        classifier.

    Returns
    -------
    table : pandas.DataFrame or dict
        One column per class of ``classes_`` (of ``classes_[task]`` for a
        multi-output classifier; per label for a multi-label one, named by
        its column index) in that order, the words from
        highest to lowest score down the rows (index ``rank`` from 1), as a
        :class:`pandas.DataFrame` when pandas is installed (a class with fewer
        ranked words is padded with ``None``); otherwise a dict mapping each
        class to its list of words.

    See Also
    --------
    plot_attention : The values over one document, row by row.
    explain : Documents with their words highlighted.

    References
    ----------
    .. [1] S. Mehta, H. Rangwala and N. Ramakrishnan, "Compact Multi-Head
       Self-Attention for Learning Supervised Text Representations", Table 6.

    Examples
    --------
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn_lama import LAMAClassifier, Word2VecVectorizer
    >>> from sklearn_lama.inspection import top_attended_words
    >>> docs = ["a good great film", "a bad awful film"] * 20
    >>> labels = ["pos", "neg"] * 20
    >>> pipe = make_pipeline(
    ...     Word2VecVectorizer(vector_size=8, min_count=1, random_state=0),
    ...     LAMAClassifier(n_heads=2, hidden_size=4, max_epochs=3, random_state=0),
    ... ).fit(docs, labels)
    >>> table = top_attended_words(pipe, docs, labels, n_words=3, method="occlusion")
    >>> list(table.columns), len(table)
    (['neg', 'pos'], 3)
    """
    _, _, classifier = split_pipeline(pipeline)
    task = check_task(classifier, task)
    documents, groups = _groups(pipeline, classifier, list(X), y, task)
    attended = attend(pipeline, documents, method, groups, task=task)
    labels = attended.classes[attended.targets]
    totals = defaultdict(lambda: defaultdict(float))
    counts = defaultdict(lambda: defaultdict(int))
    for label, tokens, weights in zip(labels, attended.tokens, attended.weights):
        if not tokens:
            continue
        for word, score in zip(tokens, attended.method.token_scores(weights)):
            if word != "<oov>":
                totals[label][word] += score
                counts[label][word] += 1
    top = {}
    for label in attended.classes.tolist():
        means = {
            word: totals[label][word] / count
            for word, count in counts[label].items()
            if count >= min_count
        }
        # Ties (frequent in tiny corpora) are broken by the word, for a stable table.
        top[label] = sorted(means, key=lambda w: (-means[w], w))[:n_words]
    try:
        import pandas as pd
    except ImportError:
        return top
    columns = {label: words + [None] * (n_words - len(words)) for label, words in top.items()}
    table = pd.DataFrame(columns, index=pd.RangeIndex(1, n_words + 1, name="rank"))
    return table
