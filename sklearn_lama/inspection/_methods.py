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

    def _check_documents(self, classifier, X):
        """Refuse ``X`` that the method would not explain, before any work on it."""

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
    #: What explaining a document of ``T`` tokens costs, and the cheaper method, for the
    #: error past ``max_tokens``.
    _cost = None
    _instead = None
    #: ``max_tokens="auto"``: the limit for a classifier linear in the length, and
    #: for one whose self-attention scores every pair of tokens.
    _auto_tokens = None
    _auto_tokens_pairs = None

    def _check(self):
        max_tokens = self.max_tokens
        if not (isinstance(max_tokens, str) and max_tokens == "auto") and (
            max_tokens is not None
            and (
                not isinstance(max_tokens, Integral)
                or isinstance(max_tokens, bool)
                or max_tokens < 1
            )
        ):
            raise ValueError(
                f"{type(self).__name__}'s max_tokens must be a positive int, None or 'auto'; "
                f"got {max_tokens!r}."
            )

    def _limit(self, classifier):
        """``max_tokens`` for ``classifier``, ``"auto"`` resolved by what its batches bound."""
        if not (isinstance(self.max_tokens, str) and self.max_tokens == "auto"):
            return self.max_tokens
        pairs = classifier._batch_budget().max_pairs is not None
        return self._auto_tokens_pairs if pairs else self._auto_tokens

    def _check_documents(self, classifier, X):
        """A ValueError naming the first document of ``X`` longer than ``max_tokens``.

        And a TypeError for a classifier from outside this package, which
        only offers attention.
        """
        if getattr(classifier, "_per_token", None) is None:
            raise TypeError(
                f"method={self.name!r} needs a classifier of sklearn_lama (LAMAClassifier, "
                f"FCSRClassifier, DuoClassifier); {type(classifier).__name__} only offers "
                "attention: use method='attention'."
            )
        self._check()
        limit = self._limit(classifier)
        if limit is None or not len(X):
            return
        lengths = classifier._read(X)[1].lengths
        longest = np.flatnonzero(lengths > limit)
        if len(longest):
            i = int(longest[0])
            name = type(self).__name__
            limit_is = (
                f"{name}(max_tokens={limit}) explains"
                if limit == self.max_tokens
                else f"{name}(max_tokens='auto') explains for {type(classifier).__name__} "
                f"({limit:,})"
            )
            raise ValueError(
                f"document {i} has {int(lengths[i]):,} tokens, more than {limit_is}: "
                f"{self._cost}. "
                f"Use method={self._instead!r}, cut the documents (the vectorizer's "
                f"max_len), or pass {type(self).__name__}(max_tokens=...) with a higher "
                "limit, or None for no limit."
            )

    def attribute(self, classifier, X, targets, task=None):
        self._check_documents(classifier, X)
        hook = classifier._per_token
        class_scores = classifier.target_encoder_.class_scores
        targets = np.asarray(targets)
        values = [None] * len(targets)
        # The budget of predict_proba's batches bounds each pass of the method too.
        budget = classifier._inference_budget(classifier._batch_budget())
        # One pass per explained class: the batches' rows then share their target.
        for target in np.unique(targets):
            rows = np.flatnonzero(targets == target)

            def score(logits, target=int(target)):
                return class_scores(logits.float(), task)[:, target]

            part = hook(X[rows], partial(self._compute, score=score, budget=budget))
            for row, v in zip(rows, part):
                values[row] = np.asarray(v, dtype=np.float64)
        return values

    def _compute(self, network, inputs, score, budget):
        """The ``(B, 1, T)`` attributions of one padded batch to ``score(logits)``, ``(B,)``.

        ``budget`` (a :class:`~sklearn_lama.training._batching.BatchBudget`)
        bounds the padded tokens of every forward pass the method runs.
        """
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
    one backward pass of the model per step. The steps run as the rows of
    batches within the classifier's ``max_batch_tokens``, as many copies of
    a batch of documents as it holds (all ``n_steps`` at once for short
    documents), so the cost is linear in the documents' length, and a
    document longer than ``max_tokens`` is refused before any work.

    Parameters
    ----------
    n_steps : int, default=32
        Quadrature points along the path from the baseline to the document.
    max_tokens : int, None or "auto", default="auto"
        Longest document explained: a document of more tokens raises a
        ``ValueError`` naming it before anything is computed (its ``n_steps``
        forward and backward passes cost about a hundred times its
        ``predict_proba``: minutes for a document of 100,000 tokens on two CPU
        cores). ``"auto"`` is 10,000 tokens, and 1,000 for a classifier whose
        self-attention scores every pair of tokens
        (``DuoClassifier(n_layers>=1)``, whose work grows with the square of
        the length). Explain long documents with :class:`Attention`, one
        forward pass, or cut them with the vectorizer's ``max_len``. ``None``
        explains every document, whatever its length.

        .. versionadded:: 0.11.0

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

    _instead = "attention"
    _auto_tokens = 10_000
    _auto_tokens_pairs = 1_000

    def __init__(self, n_steps=32, max_tokens="auto"):
        self.n_steps = n_steps
        self.max_tokens = max_tokens

    @property
    def _cost(self):
        return (
            f"its integrated gradients run {self.n_steps} forward and backward passes "
            "over it, about a hundred times the cost of predict_proba"
        )

    def _check(self):
        if (
            not isinstance(self.n_steps, Integral)
            or isinstance(self.n_steps, bool)
            or self.n_steps < 1
        ):
            raise ValueError(
                f"IntegratedGradients' n_steps must be a positive int; got {self.n_steps!r}."
            )
        super()._check()

    def _compute(self, network, inputs, score, budget):
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
            rows, width = mask.shape
            # As many points of the path per pass as the budget holds copies of the
            # batch: the points are the rows of one batch, which pays the per-step
            # cost of a recurrence once for all of them.
            per_pass = max(_rows(budget, width) // rows, 1)
            for start in range(0, len(nodes), per_pass):
                at = torch.tensor(nodes[start : start + per_pass], dtype=torch.float32)
                by = torch.tensor(weights[start : start + per_pass], dtype=torch.float32)
                at, by = at.to(mask.device), by.to(mask.device)
                point = tuple(_path(b, d, at).requires_grad_() for b, d in zip(baseline, delta))
                logits, _ = network.classify(
                    point if streams else point[0], mask.repeat(len(at), 1)
                )
                # Rows are independent: the gradient of their sum is each row's gradient.
                grads = torch.autograd.grad(score(logits).sum(), point)
                for total, grad in zip(integral, grads):
                    grad = grad.float().unflatten(0, (len(at), rows))
                    total.add_((grad * by[:, None, None, None]).sum(dim=0))
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
    the class.

    A document of ``T`` tokens costs ``T`` forward passes over ``T - 1``
    tokens: work grows with the square of the length. The shorter copies
    are run as the rows of batches within the classifier's
    ``max_batch_tokens``, as many per batch as it holds, and a document
    longer than ``max_tokens`` is refused before any work.

    Parameters
    ----------
    max_tokens : int, None or "auto", default="auto"
        Longest document explained: a document of more tokens raises a
        ``ValueError`` naming it before anything is computed (its occlusion
        would cost ``T`` squared token positions, against ``T`` for
        :meth:`~sklearn_lama.LAMAClassifier.predict_proba`). ``"auto"`` is
        1,000 tokens, and 250 for a classifier whose self-attention scores
        every pair of tokens (``DuoClassifier(n_layers>=1)``, whose occlusion
        grows with the cube of the length). Explain long documents with
        :class:`IntegratedGradients`, whose cost is linear in the length, or
        cut them with the vectorizer's ``max_len``. ``None`` explains every
        document, whatever its length.

        .. versionadded:: 0.11.0

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
    _cost = (
        "occluding a document of T tokens runs T forward passes over it, T squared token positions"
    )
    _instead = "integrated_gradients"
    _auto_tokens = 1_000
    _auto_tokens_pairs = 250

    def __init__(self, max_tokens="auto"):
        self.max_tokens = max_tokens

    def _compute(self, network, inputs, score, budget):
        key = "ids" if "ids" in inputs else "x"
        values, lengths = inputs[key], inputs["lengths"]
        full = score(network(**inputs)[0])
        width = values.shape[1]
        steps = torch.arange(width, device=values.device)
        # One shorter copy per (document, token), run as the rows of batches
        # within the budget: token t out, padding in at the end, so that every
        # copy keeps the batch's width. An empty document (one padding token)
        # gives one copy, whose value is cut off with the padding.
        document, position = (steps < lengths[:, None]).nonzero(as_tuple=True)
        drops = full.new_zeros(values.shape[0], width)
        rows = _rows(budget, width)
        for start in range(0, len(document), rows):
            d, t = document[start : start + rows], position[start : start + rows]
            source = steps + (steps >= t[:, None]).to(steps.dtype)
            removed = values[d[:, None], source.clamp(max=width - 1)]
            removed[source == width] = 0
            copies = {**inputs, key: removed, "lengths": (lengths[d] - 1).clamp_min(1)}
            if "side" in inputs:
                copies["side"] = inputs["side"][d]
            drops[d, t] = full[d] - score(network(**copies)[0])
        return drops.unsqueeze(1)


def _path(baseline, delta, at):
    """The points ``baseline + a * delta`` for each ``a`` of ``at``, stacked as rows."""
    points = baseline.unsqueeze(0) + at[:, None, None, None] * delta.unsqueeze(0)
    return points.flatten(0, 1)


def _rows(budget, width):
    """The most rows of padded length ``width`` that one batch within ``budget`` holds (>= 1)."""
    width = max(int(width), 1)
    rows = budget.max_tokens // width
    if budget.max_pairs is not None:
        rows = min(rows, budget.max_pairs // width**2)
    return max(rows, 1)


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
