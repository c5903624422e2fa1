"""The most attended words per class (Table 6 of the LAMA paper)."""

from collections import defaultdict
from numbers import Integral

from ..utils._sklearn_compat import Interval, validate_params
from ._attention import attend


@validate_params(
    {
        "pipeline": "no_validation",
        "X": ["array-like"],
        "y": ["array-like", None],
        "n_words": [Interval(Integral, 1, None, closed="left")],
        "min_count": [Interval(Integral, 1, None, closed="left")],
    },
    prefer_skip_nested_validation=True,
)
def top_attended_words(pipeline, X, y=None, n_words=10, *, min_count=5):
    """The words a fitted model attends to most, per class.

    This is the table of top attended words of the LAMA paper (Table 6), for
    any of the three classifiers. A token's weight is its attention averaged
    over the attention rows (LAMA's heads, Duo's two directions; FCSR has one
    row), times the number of tokens of its document, so that 1.0 means "as
    much as a uniform average" whatever the document's length. A word's score
    in a class is the mean weight of its occurrences in the documents of that
    class; words seen fewer than ``min_count`` times in the class, and
    out-of-vocabulary tokens, are left out.

    Parameters
    ----------
    pipeline : Pipeline
        A fitted pipeline: a :class:`~sklearn_lama.Word2VecVectorizer` or
        :class:`~sklearn_lama.MetaEmbeddingTransformer`, then a classifier of
        this package.
    X : iterable of str
        Raw documents.
    y : array-like of shape (n_documents,), default=None
        True labels to group the documents by; ``None`` groups them by the
        predicted label.
    n_words : int, default=10
        Words listed per class.
    min_count : int, default=5
        Occurrences a word needs in a class to be ranked there.

    Returns
    -------
    table : pandas.DataFrame or dict
        One column per class of ``classes_`` (in that order), the words from
        most to least attended down the rows (index ``rank`` from 1), as a
        :class:`pandas.DataFrame` when pandas is installed (a class with fewer
        ranked words is padded with ``None``); otherwise a dict mapping each
        class to its list of words.

    See Also
    --------
    plot_attention : The attention over one document, row by row.
    explain : Documents with their words highlighted by attention.

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
    >>> table = top_attended_words(pipe, docs, labels, n_words=3)
    >>> list(table.columns), len(table)
    (['neg', 'pos'], 3)
    """
    attended = attend(pipeline, X)
    if y is None:
        labels = attended.classes[attended.proba.argmax(axis=1)]
    else:
        labels = list(y)
        if len(labels) != len(attended.tokens):
            raise ValueError(
                f"y has {len(labels)} labels but X has {len(attended.tokens)} documents."
            )
    totals = defaultdict(lambda: defaultdict(float))
    counts = defaultdict(lambda: defaultdict(int))
    for label, tokens, weights in zip(labels, attended.tokens, attended.weights):
        if not tokens:
            continue
        relative = weights.mean(axis=0) * len(tokens)
        for word, weight in zip(tokens, relative):
            if word != "<oov>":
                totals[label][word] += weight
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
