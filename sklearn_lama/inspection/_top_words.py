"""The words that count most per class, by attention (Table 6 of the LAMA paper) or attribution."""

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
        "method": "no_validation",
    },
    prefer_skip_nested_validation=True,
)
def top_attended_words(pipeline, X, y=None, n_words=10, *, min_count=5, method=None):
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
    y : array-like of shape (n_documents,), default=None
        True labels to group the documents by; ``None`` groups them by the
        predicted label.
    n_words : int, default=10
        Words listed per class.
    min_count : int, default=5
        Occurrences a word needs in a class to be ranked there.
    method : {"attention", "integrated_gradients", "occlusion"}, \
            TokenExplainer or None, default=None
        How tokens are scored; ``None`` is the classifier's default
        explanation, the most faithful one in the deletion benchmark (see
        the user guide).

    Returns
    -------
    table : pandas.DataFrame or dict
        One column per class of ``classes_`` (in that order), the words from
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
    attended = attend(pipeline, X, method, y)
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
