"""Documents with their words highlighted by attention, as HTML for notebooks."""

import html

import numpy as np

from ._attention import attend


class Explanation:
    """Documents, their attention and their predicted class, shown as highlighted HTML.

    Returned by :func:`explain`; Jupyter displays it through ``_repr_html_``.
    Each token is shaded by its attention, averaged over the attention rows
    (heads or streams): tokens at or below the uniform weight ``1 / n_tokens``
    stay plain, and the shade grows to full colour at the document's most
    attended token. Hovering a token shows its weight.

    Attributes
    ----------
    tokens : list of list of str
        The tokens of each document, as the vectorizer kept them.
    weights : list of ndarray of shape (n_rows, n_tokens_i)
        The classifier's ``attention_weights`` of each document.
    predicted : ndarray of shape (n_documents,)
        Predicted class of each document.
    probability : ndarray of shape (n_documents,)
        Probability of the predicted class.
    """

    def __init__(self, tokens, weights, predicted, probability):
        self.tokens = tokens
        self.weights = weights
        self.predicted = predicted
        self.probability = probability

    def __len__(self):
        return len(self.tokens)

    def __repr__(self):
        return f"<Explanation of {len(self)} document(s); to_html() shows them highlighted>"

    def _document_html(self, tokens, weights, label, probability):
        weight = weights.mean(axis=0) if weights.size else np.zeros(0)
        # Only attention above the uniform 1 / n_tokens is shaded: a model that
        # spreads its attention evenly leaves the text plain.
        uniform = 1.0 / max(len(tokens), 1)
        top = weight.max(initial=0.0)
        shade = (
            np.clip((weight - uniform) / (top - uniform), 0.0, 1.0)
            if top > uniform
            else weight * 0
        )
        spans = " ".join(
            f'<span style="background-color: rgba(220, 40, 30, {s:.3f}); padding: 0 1px" '
            f'title="{w:.4f}">{html.escape(token)}</span>'
            for token, w, s in zip(tokens, weight, shade)
        )
        return (
            '<div style="margin: 0 0 0.8em 0; line-height: 1.7">'
            f"<div><b>{html.escape(str(label))}</b> "
            f'<span style="color: #555">(p = {probability:.3f})</span></div>'
            f"<div>{spans}</div></div>"
        )

    def to_html(self):
        """The documents as an HTML fragment (every word and label escaped).

        Returns
        -------
        html : str
            One ``<div>`` per document: the predicted class with its
            probability, then the tokens shaded by attention.
        """
        parts = map(
            self._document_html, self.tokens, self.weights, self.predicted, self.probability
        )
        return f'<div class="sklearn-lama-explanation">{"".join(parts)}</div>'

    def _repr_html_(self):
        return self.to_html()


def explain(pipeline, documents):
    """Show which words led a fitted pipeline to its prediction.

    Parameters
    ----------
    pipeline : Pipeline
        A fitted pipeline: a :class:`~sklearn_lama.Word2VecVectorizer` or
        :class:`~sklearn_lama.MetaEmbeddingTransformer`, then a classifier of
        this package.
    documents : iterable of str
        Raw documents.

    Returns
    -------
    explanation : Explanation
        Displayed in Jupyter as the documents with their words highlighted by
        attention, each with its predicted class and probability;
        :meth:`Explanation.to_html` gives the HTML.

    See Also
    --------
    plot_attention : The attention over one document, head by head.

    Examples
    --------
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn_lama import LAMAClassifier, Word2VecVectorizer
    >>> from sklearn_lama.inspection import explain
    >>> docs = ["a good great film", "a bad awful film"] * 20
    >>> labels = ["pos", "neg"] * 20
    >>> pipe = make_pipeline(
    ...     Word2VecVectorizer(vector_size=8, min_count=1, random_state=0),
    ...     LAMAClassifier(n_heads=2, hidden_size=4, max_epochs=3, random_state=0),
    ... ).fit(docs, labels)
    >>> explanation = explain(pipe, ["a great film"])
    >>> explanation.tokens
    [['a', 'great', 'film']]
    >>> explanation.to_html().startswith('<div class="sklearn-lama-explanation">')
    True
    """
    attended = attend(pipeline, documents)
    best = attended.proba.argmax(axis=1)
    return Explanation(
        tokens=attended.tokens,
        weights=attended.weights,
        predicted=attended.classes[best],
        probability=attended.proba[np.arange(len(best)), best],
    )
