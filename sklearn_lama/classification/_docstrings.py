"""One source for the docstring text that several estimators share.

A classifier's docstring holds ``%(parameters)s``, ``%(fitted_attributes)s``
and ``%(shared_references)s`` fields that :func:`classifier_docstring` fills:
the first with the entries of its parameter declarations
(:mod:`._parameters`), the others with the texts below, so every class
documents every parameter and each text exists once.
"""

from ..utils._parameters import parameter_entries

__all__ = ["classifier_docstring"]


FITTED_ATTRIBUTES = """classes_ : ndarray of shape (n_classes,) or list of ndarray
        Class labels; with an indicator matrix ``y``, the column indices
        ``arange(n_labels)``; with a multi-output ``y``, one array per task.
    target_encoder_ : object
        The encoding of ``y`` chosen in ``fit`` from its kind (one label per
        document, an indicator matrix, one column per task): it validates
        and encodes ``y``, gives the loss and turns the logits into scores,
        probabilities and labels.
    temperature_ : ndarray of shape (n_temperatures,) or None
        The temperatures of ``calibration="temperature"`` (one, or one per
        task), ``None`` without calibration.
    net_ : skorch.NeuralNetClassifier
        The trained skorch net; ``net_.history`` holds per-epoch metrics and
        ``net_.module_`` the torch network.
    n_epochs_ : int
        Epochs trained, over all ``fit`` calls that continued training
        (``warm_start``, ``partial_fit``).
    input_adapter_ : InputAdapter
        How ``X`` is read: the :class:`~sklearn_lama.InputAdapter` of its kind
        (``TokenSequences``, token ids, a 2-D or 3-D float array), holding
        what ``fit`` learned about it (vocabulary fingerprint and size, vector
        sizes); later inputs must match.
    n_features_in_ : int
        Number of tokens per document, when fitted on a plain array.
    checkpoint_path_ : str or None
        The file the last fit wrote its checkpoints to (``checkpoint``)."""

# References [2] to [4] of every classifier (each has its paper as [1]).
SHARED_REFERENCES = """.. [2] Wang, S. and Manning, C. D. "Baselines and Bigrams: Simple, Good
       Sentiment and Topic Classification." ACL 2012 (the Naive Bayes
       log-count ratios of ``nb_unigram_weight`` and ``nb_bigram_weight``).
    .. [3] Polyak, B. T. and Juditsky, A. B. "Acceleration of Stochastic
       Approximation by Averaging." SIAM Journal on Control and Optimization
       30(4), 1992 (the weight average of ``ema_horizon``).
    .. [4] Guo, C., Pleiss, G., Sun, Y. and Weinberger, K. Q. "On Calibration
       of Modern Neural Networks." ICML 2017 (the temperature scaling of
       ``calibration``)."""


def classifier_docstring(doc, parameters, defaults):
    """``doc`` with its fields filled; a docstring without them is returned unchanged.

    Parameters
    ----------
    doc : str or None
        A class docstring.
    parameters : dict of str to Param
        The class's parameter declarations.
    defaults : dict of str to object
        The parameters' defaults, in the order of the signature, which the
        Parameters section follows.
    """
    if doc is None:
        return None
    texts = {
        "parameters": parameter_entries(parameters, defaults),
        "fitted_attributes": FITTED_ATTRIBUTES,
        "shared_references": SHARED_REFERENCES,
    }
    for field, text in texts.items():
        doc = doc.replace(f"%({field})s", text)
    return doc
