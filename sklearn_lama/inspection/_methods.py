"""How much each token counts: attention, integrated gradients and occlusion.

Each method turns a fitted classifier and its input into one array per
document over its tokens, the shape of ``attention_weights``. The
attributions (integrated gradients, occlusion) explain one class per
document, its *target*, through the class's score that moves its
probability (``target_encoder_.class_scores``): the centred logit ``z_c -
mean_k z_k`` of a softmax over the classes (or over one task's classes of a
multi-output classifier), since the softmax is the same whatever constant
is added to every logit; a label's log-odds ``z_c`` for a multi-label
classifier, one sigmoid per label.
"""

from functools import partial
from numbers import Integral

import numpy as np
import torch

__all__ = ["Attention", "IntegratedGradients", "Occlusion", "TokenExplainer", "resolve_method"]


class TokenExplainer:
    """Base class of the explanation methods; not for direct use.

    A method gives each document an array of shape ``(n_rows, n_tokens)``
    (:meth:`attribute`), reduces it to one signed score per token
    (:meth:`token_scores`, 0 = no effect) and tells the plots which value of
    the rows means "no effect" (:meth:`centre`).
    """

    #: The ``method=`` string that selects the method.
    name = None
    #: Whether negative scores mean something (shown in their own colour).
    signed = True
    #: What the values of the rows are, for colour bars.
    value_label = None

    def attribute(self, classifier, X, targets, task=None):
        """One array ``(n_rows, n_tokens_i)`` per document of ``X``.

        Parameters
        ----------
        classifier : estimator
            A fitted classifier of this package.
        X : TokenSequences or ndarray
            Documents in the form the classifier takes.
        targets : ndarray of shape (n_documents,)
            The index in ``classes_`` (in ``classes_[task]`` for a
            multi-output classifier; the label's column for a multi-label
            one) of the class to explain for each document; methods that do
            not explain a class ignore it.
        task : int, default=None
            The task of a multi-output classifier whose classes ``targets``
            index; ``None`` for any other classifier.

        Returns
        -------
        values : list of ndarray of shape (n_rows, n_tokens_i)
        """
        raise NotImplementedError

    def token_scores(self, rows):
        """One signed score per token from a document's ``rows``: 0 is no effect."""
        return np.asarray(rows[0], dtype=np.float64)

    def centre(self, n_tokens):
        """The value of a row that means "no effect", in a document of ``n_tokens``."""
        return 0.0

    def row_labels(self, classifier, n_rows):
        """Names of the rows of :meth:`attribute`'s arrays."""
        return [self.name.replace("_", " ")][:n_rows]

    def __repr__(self):
        params = ", ".join(f"{k}={v!r}" for k, v in vars(self).items())
        return f"{type(self).__name__}({params})"


class Attention(TokenExplainer):
    """The classifier's attention weights (``attention_weights``), unchanged.

    One row per head (LAMA), per direction (Duo) or the one pooled row
    (FCSR), each a distribution over the tokens. A token's score is its
    weight averaged over the rows, times the number of tokens, minus 1: 0 for
    a token weighted as a uniform average would weigh it, positive above.
    Attention says where the model pooled, not what the prediction depends
    on, and is the same whatever class is explained.

    Examples
    --------
    >>> from sklearn_lama.inspection import Attention
    >>> Attention().token_scores([[0.5, 0.25, 0.25]])
    array([ 0.5 , -0.25, -0.25])
    """

    name = "attention"
    signed = False
    value_label = "attention weight"

    def attribute(self, classifier, X, targets, task=None):
        return [np.asarray(w, dtype=np.float64) for w in classifier.attention_weights(X)]

    def token_scores(self, rows):
        rows = np.asarray(rows, dtype=np.float64)
        return rows.mean(axis=0) * rows.shape[1] - 1.0

    def centre(self, n_tokens):
        return 1.0 / max(n_tokens, 1)

    def row_labels(self, classifier, n_rows):
        labels = getattr(classifier, "_attention_row_labels", None)
        if labels is not None:
            return list(labels())
        # A classifier from outside this package has no names for its rows.
        if n_rows == 1:
            return ["attention"]
        return [f"row {j + 1}" for j in range(n_rows)]


class _ClassAttribution(TokenExplainer):
    """A method that explains one class per document, one row per document."""

    value_label = "attribution to the explained class"

    def attribute(self, classifier, X, targets, task=None):
        hook = getattr(classifier, "_per_token", None)
        if hook is None:
            raise TypeError(
                f"method={self.name!r} needs a classifier of sklearn_lama (LAMAClassifier, "
                f"FCSRClassifier, DuoClassifier); {type(classifier).__name__} only offers "
                "attention: use method='attention'."
            )
        class_scores = classifier.target_encoder_.class_scores
        targets = np.asarray(targets)
        values = [None] * len(targets)
        # One pass per explained class: the batches' rows then share their target.
        for target in np.unique(targets):
            rows = np.flatnonzero(targets == target)

            def score(logits, target=int(target)):
                return class_scores(logits.float(), task)[:, target]

            part = hook(X[rows], partial(self._compute, score=score))
            for row, v in zip(rows, part):
                values[row] = np.asarray(v, dtype=np.float64)
        return values

    def _compute(self, network, inputs, score):
        """The ``(B, 1, T)`` attributions of one padded batch to ``score(logits)``, ``(B,)``."""
        raise NotImplementedError


class IntegratedGradients(_ClassAttribution):
    """Integrated gradients of the explained class on the token vectors.

    A token's attribution is ``sum_d (x_td - x'_td) * integral_0^1 dF/dx_td
    (x' + a (x - x')) da``, summed over the dimensions ``d`` of every vector
    the model's core reads for the token, with ``F`` the explained class's
    score, ``x`` the document's vectors and ``x'`` the baseline. The score
    is the class's centred logit ``z_c - mean_k z_k`` (over one task's
    classes for a multi-output classifier), the part of its logit that
    moves its probability; for a multi-label classifier, the label's
    log-odds ``z_c``. By the method's completeness, a document's
    attributions add up to ``F(x) - F(x')``.

    The baseline is the zero vector at every token of the document, with the
    document's length and mask unchanged: the padding row of the
    vectorizers' tables, so ``F(x')`` is the score of a document of as many
    padding tokens. The Naive Bayes columns (``nb_unigram_weight``,
    ``nb_bigram_weight``) are part of each token's vector and go to zero with
    it, zero being no evidence for any class: a token's attribution includes
    its log-count ratios and those of the word pair that ends at it. Duo's
    two embeddings are interpolated together and their attributions added.

    The integral is computed by Gauss-Legendre quadrature: one forward and
    one backward pass of the model per step.

    Parameters
    ----------
    n_steps : int, default=32
        Quadrature points along the path from the baseline to the document.

    References
    ----------
    .. [1] M. Sundararajan, A. Taly and Q. Yan, "Axiomatic Attribution for
       Deep Networks", ICML 2017.

    Examples
    --------
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn_lama import FCSRClassifier, Word2VecVectorizer
    >>> from sklearn_lama.inspection import IntegratedGradients, token_attributions
    >>> docs = ["a good great film", "a bad awful film"] * 20
    >>> labels = ["pos", "neg"] * 20
    >>> pipe = make_pipeline(
    ...     Word2VecVectorizer(vector_size=8, min_count=1, random_state=0),
    ...     FCSRClassifier(max_epochs=3, random_state=0),
    ... ).fit(docs, labels)
    >>> [a.shape for a in token_attributions(pipe, docs[:2], IntegratedGradients(16))]
    [(1, 4), (1, 4)]
    """

    name = "integrated_gradients"

    def __init__(self, n_steps=32):
        self.n_steps = n_steps

    def _check(self):
        if (
            not isinstance(self.n_steps, Integral)
            or isinstance(self.n_steps, bool)
            or self.n_steps < 1
        ):
            raise ValueError(
                f"IntegratedGradients' n_steps must be a positive int; got {self.n_steps!r}."
            )

    def attribute(self, classifier, X, targets, task=None):
        self._check()
        return super().attribute(classifier, X, targets, task)

    def _compute(self, network, inputs, score):
        # Gauss-Legendre nodes and weights, moved from [-1, 1] to [0, 1].
        nodes, weights = np.polynomial.legendre.leggauss(self.n_steps)
        nodes, weights = (nodes + 1) / 2, weights / 2
        with torch.enable_grad():
            embedded, mask = network.embed(**inputs)
            streams = isinstance(embedded, tuple)
            vectors = tuple(v.detach().float() for v in (embedded if streams else (embedded,)))
            real = mask.unsqueeze(-1)
            # Padded positions keep their vectors along the path: masked, they count for nothing.
            baseline = tuple(v.masked_fill(real, 0.0) for v in vectors)
            delta = tuple(v - b for v, b in zip(vectors, baseline))
            integral = [torch.zeros_like(v) for v in vectors]
            for node, weight in zip(nodes.tolist(), weights.tolist()):
                point = tuple((b + node * d).requires_grad_() for b, d in zip(baseline, delta))
                logits, _ = network.classify(point if streams else point[0], mask)
                # Rows are independent: the gradient of their sum is each row's gradient.
                grads = torch.autograd.grad(score(logits).sum(), point)
                for total, grad in zip(integral, grads):
                    total.add_(grad.float(), alpha=weight)
        attribution = sum((total * d).sum(dim=-1) for total, d in zip(integral, delta))
        return attribution.unsqueeze(1)


class Occlusion(_ClassAttribution):
    """How much the explained class's score falls when one token is removed.

    A token's attribution is ``F(x) - F(x without the token)``, ``F`` the
    explained class's score as for :class:`IntegratedGradients` (the
    centred logit, or a label's log-odds): the token is deleted from the document
    (the tokens after it move up one place, the word pair across the gap
    becomes a pair of its own), as the deletion test of the faithfulness
    benchmark deletes tokens. A positive attribution means the token raised
    the class. A document of ``T`` tokens costs ``T`` forward passes, run on
    the batches of ``predict_proba``, one position at a time.

    References
    ----------
    .. [1] M. D. Zeiler and R. Fergus, "Visualizing and Understanding
       Convolutional Networks", ECCV 2014.
    .. [2] J. Li, W. Monroe and D. Jurafsky, "Understanding Neural Networks
       through Representation Erasure", arXiv:1612.08220, 2016.

    Examples
    --------
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn_lama import FCSRClassifier, Word2VecVectorizer
    >>> from sklearn_lama.inspection import token_attributions
    >>> docs = ["a good great film", "a bad awful film"] * 20
    >>> labels = ["pos", "neg"] * 20
    >>> pipe = make_pipeline(
    ...     Word2VecVectorizer(vector_size=8, min_count=1, random_state=0),
    ...     FCSRClassifier(max_epochs=3, random_state=0),
    ... ).fit(docs, labels)
    >>> [a.shape for a in token_attributions(pipe, ["a good film", ""], "occlusion")]
    [(1, 3), (1, 0)]
    """

    name = "occlusion"

    def _compute(self, network, inputs, score):
        key = "ids" if "ids" in inputs else "x"
        values, lengths = inputs[key], inputs["lengths"]
        full = score(network(**inputs)[0])
        gap = torch.zeros_like(values[:, :1])
        drops = []
        for t in range(values.shape[1]):
            # Token t out, padding in at the end: the batch keeps its shape. A
            # document left empty is one padding token, as the batches give it.
            removed = torch.cat([values[:, :t], values[:, t + 1 :], gap], dim=1)
            shorter = (lengths - (lengths > t).to(lengths.dtype)).clamp_min(1)
            logits = network(**{**inputs, key: removed, "lengths": shorter})[0]
            drops.append(full - score(logits))
        return torch.stack(drops, dim=1).unsqueeze(1)


METHODS = {m.name: m for m in (Attention, IntegratedGradients, Occlusion)}


def resolve_method(method, classifier):
    """The :class:`TokenExplainer` that ``method`` names, or the classifier's default.

    ``None`` takes the classifier's ``_default_explanation`` (attention for a
    classifier from outside this package).
    """
    if method is None:
        method = getattr(classifier, "_default_explanation", Attention.name)
    if isinstance(method, TokenExplainer):
        return method
    if isinstance(method, str) and method in METHODS:
        return METHODS[method]()
    raise ValueError(
        f"method must be one of {sorted(METHODS)}, an instance of Attention, "
        f"IntegratedGradients or Occlusion, or None (the classifier's default); got {method!r}."
    )
