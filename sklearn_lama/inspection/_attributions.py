"""Per-token attributions of a fitted pipeline's predictions, by the method asked for."""

from ._attention import attend


def token_attributions(pipeline, documents, method=None, *, target=None, task=None):
    """How much each token of each document counts, by ``method``.

    The same convention as the classifiers' ``attention_weights``: per
    document an array over the tokens the vectorizer kept, padding excluded.
    Integrated gradients and occlusion give one row, the tokens'
    attributions to the explained class (its centred logit ``z_c - mean_k
    z_k``, or a label's log-odds for a multi-label classifier, see
    :class:`IntegratedGradients` and :class:`Occlusion`); attention gives
    the classifier's rows (heads, streams), whatever the class.

    For a classifier fitted on a 2-D ``y``: with an indicator matrix
    (multi-label), the attributions are to one label per document, by
    default its most probable one (its predicted label when it has any),
    or the label ``target`` names; with one column per task (multi-output),
    to a class of the task ``task``, which must be given.

    Parameters
    ----------
    pipeline : Pipeline
        A fitted pipeline: a :class:`~sklearn_lama.Word2VecVectorizer` or
        :class:`~sklearn_lama.MetaEmbeddingTransformer`, then a classifier of
        this package.
    documents : iterable of str
        Raw documents.
    method : {"attention", "integrated_gradients", "occlusion"}, \
            TokenExplainer or None, default=None
        The explanation: a name, or an :class:`Attention`,
        :class:`IntegratedGradients` or :class:`Occlusion` with its
        parameters. ``None`` is the classifier's default explanation, the
        most faithful one in the deletion benchmark (see the user guide).
    target : label or array-like of shape (n_documents,), default=None
        The class to explain: one label for every document, or one per
        document, from ``classes_`` (from ``classes_[task]`` for a
        multi-output classifier; a label's column index for a multi-label
        one); ``None`` explains each document's most probable class (or
        label). Attention ignores it.
    task : int, default=None
        For a classifier fitted on a multi-output ``y`` (one column per task,
        ``classes_`` a list), the task (column of ``y``) to explain; it must
        be given there, and left ``None`` for any other classifier.

    Returns
    -------
    attributions : list of ndarray of shape (n_rows, n_tokens_i)
        One array per document: ``n_rows`` is 1 for integrated gradients
        and occlusion, the classifier's number of attention rows for
        attention.

    See Also
    --------
    explain : The same values as highlighted text, for notebooks.
    plot_attention : The values over one document as a heat-map.

    Examples
    --------
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn_lama import LAMAClassifier, Word2VecVectorizer
    >>> from sklearn_lama.inspection import token_attributions
    >>> docs = ["a good great film", "a bad awful film"] * 20
    >>> labels = ["pos", "neg"] * 20
    >>> pipe = make_pipeline(
    ...     Word2VecVectorizer(vector_size=8, min_count=1, random_state=0),
    ...     LAMAClassifier(n_heads=2, hidden_size=4, max_epochs=3, random_state=0),
    ... ).fit(docs, labels)
    >>> [a.shape for a in token_attributions(pipe, ["a great film", "bad"], "occlusion")]
    [(1, 3), (1, 1)]
    >>> [a.shape for a in token_attributions(pipe, ["a great film"], "attention")]
    [(2, 3)]
    """
    return attend(pipeline, documents, method, target, targets_name="target", task=task).weights
