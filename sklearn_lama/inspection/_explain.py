"""Documents with their words highlighted by an explanation, as HTML for notebooks."""

import html
from functools import partial

import numpy as np

from ._attention import attend
from ._methods import Attention


class Explanation:
    """Documents, their per-token explanation and their predicted class, as highlighted HTML.

    Returned by :func:`explain`; Jupyter displays it through ``_repr_html_``.
    Each token is shaded by its score under the explanation method (see
    :meth:`TokenExplainer.token_scores`): red for tokens that count for the
    explained class, blue for those that count against it (attributions
    only), the shade growing to full colour at the document's largest score
    in size. With attention, tokens at or below the uniform weight ``1 /
    n_tokens`` stay plain. Hovering a token shows its score.

    Attributes
    ----------
    tokens : list of list of str
        The tokens of each document, as the vectorizer kept them.
    weights : list of ndarray of shape (n_rows, n_tokens_i)
        The method's values for each document: the classifier's
        ``attention_weights``, or one row of attributions.
    predicted : ndarray of shape (n_documents,)
        Predicted class of each document: its most probable class (of the
        task explained, for a multi-output classifier; its most probable
        label for a multi-label one), the class the attributions explain.
    probability : ndarray of shape (n_documents,)
        Probability of the predicted class.
    method : TokenExplainer, default=None
        The method that gave ``weights``; ``None`` is :class:`Attention`.
    """

    def __init__(self, tokens, weights, predicted, probability, method=None):
        self.tokens = tokens
        self.weights = weights
        self.predicted = predicted
        self.probability = probability
        self.method = method

    def __len__(self):
        return len(self.tokens)

    def __repr__(self):
        return f"<Explanation of {len(self)} document(s); to_html() shows them highlighted>"

    def _document_html(self, method, tokens, weights, label, probability):
        score = method.token_scores(weights) if weights.size else np.zeros(0)
        # Attention below the uniform weight is not "against" anything: plain.
        shown = score if method.signed else np.clip(score, 0.0, None)
        top = np.abs(shown).max(initial=0.0)
        shade = shown / top if top > 0 else shown * 0
        spans = " ".join(
            f'<span style="background-color: {_colour(s)}; padding: 0 1px" '
            f'title="{v:.4f}">{html.escape(token)}</span>'
            for token, v, s in zip(tokens, score, shade)
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
            probability, then the tokens shaded by their scores.
        """
        method = Attention() if self.method is None else self.method
        parts = map(
            partial(self._document_html, method),
            self.tokens,
            self.weights,
            self.predicted,
            self.probability,
        )
        return f'<div class="sklearn-lama-explanation">{"".join(parts)}</div>'

    def _repr_html_(self):
        return self.to_html()


def _colour(shade):
    """Red for a shade in (0, 1], blue for one in [-1, 0), its opacity the size."""
    rgb = "220, 40, 30" if shade >= 0 else "30, 90, 220"
    return f"rgba({rgb}, {abs(shade):.3f})"


def explain(pipeline, documents, method=None, *, task=None):
    """Show which words led a fitted pipeline to its prediction.

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
        What shades the words: the attention, or the tokens' attributions to
        the predicted class. ``None`` is the classifier's default
        explanation, the most faithful one in the deletion benchmark (see
        the user guide). Attributions explain each document's most probable
        class; for a multi-label classifier, its most probable label (see
        :func:`token_attributions` to explain another label).
    task : int, default=None
        For a classifier fitted on a multi-output ``y`` (one column per task,
        ``classes_`` a list), the task (column of ``y``) whose prediction is
        explained; it must be given there, and left ``None`` for any other
        classifier.

    Returns
    -------
    explanation : Explanation
        Displayed in Jupyter as the documents with their words highlighted,
        each with its predicted class and probability;
        :meth:`Explanation.to_html` gives the HTML.

    See Also
    --------
    plot_attention : The same values over one document, row by row.
    token_attributions : The values as arrays.

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
    >>> explanation = explain(pipe, ["a great film"], method="occlusion")
    >>> explanation.tokens, explanation.weights[0].shape
    ([['a', 'great', 'film']], (1, 3))
    >>> explanation.to_html().startswith('<div class="sklearn-lama-explanation">')
    True
    """
    attended = attend(pipeline, documents, method, task=task)
    best = attended.targets
    return Explanation(
        tokens=attended.tokens,
        weights=attended.weights,
        predicted=attended.classes[best],
        probability=attended.proba[np.arange(len(best)), best],
        method=attended.method,
    )
