"""The parameters every classifier shares, each declared once.

A classifier declares all its parameters in ``_parameters`` (name ->
:class:`~sklearn_lama.utils._parameters.Param`): its own, and the shared ones
of :func:`shared_parameters`, which are the classifiers' own
(:data:`CLASSIFIER_PARAMETERS`) and the training stack's
(:data:`~sklearn_lama.training._parameters.TRAINING_PARAMETERS`). The base
class derives ``_parameter_constraints`` and the docstring's Parameters
section from them.
"""

from numbers import Integral, Real

from ..training._parameters import OPTIMIZERS, TRAINING_PARAMETERS
from ..utils._parameters import Param
from ..utils._sklearn_compat import Interval, Options, StrOptions

__all__ = ["ADDITIONS_OFF", "CLASSIFIER_PARAMETERS", "shared_parameters"]

INFERENCE_BATCH_DESCRIPTION = """Most documents per batch in ``predict``, ``predict_proba``,
        ``decision_function``, ``attention_weights`` and validation (at
        least ``batch_size``), within ``max_batch_tokens``."""


def inference_batch_description(tokens):
    """``inference_batch_size``'s description where a CPU prediction batch holds ``tokens``."""
    return (
        INFERENCE_BATCH_DESCRIPTION
        + f"""
        On the CPU, a batch of the prediction methods (not of validation) also
        holds at most {tokens:,} padded tokens, whose activations then stay in
        the processor's caches."""
    )


CLASSIFIER_PARAMETERS = {
    "embedding_dim": Param(
        "int",
        [Interval(Integral, 1, None, closed="left")],
        """Embedding size learned from scratch when ``X`` is an integer id array
        (unused otherwise: the tables or vectors of ``X`` set the size).""",
    ),
    "freeze_embeddings": Param(
        "bool",
        ["boolean"],
        "Keep the embedding tables fixed instead of fine-tuning them.",
    ),
    "embedding_dropout": Param(
        "float",
        [Interval(Real, 0, 1, closed="left")],
        "Dropout on the token vectors while training (the papers have none: 0).",
    ),
    "nb_unigram_weight": Param(
        "float",
        [Interval(Real, 0, None, closed="left")],
        """Weight of the Naive Bayes features of single tokens, appended to every
        token vector when ``X`` comes with embedding tables (the vectorizers'
        output): the token's log-count ratio, how much more often the
        documents of a class hold it than the others (Wang & Manning, 2012;
        one column for two classes, else one per class), computed on the
        training documents only (never on the held-out validation ones),
        cross-fitted (``nb_folds``), standardised and scaled to
        ``nb_unigram_weight`` times the spread of the table's vectors (divided
        by the square root of the number of columns), and kept fixed. Word
        vectors trained on a small corpus barely separate "good" from "bad";
        these columns carry what TF-IDF + LogisticRegression learns from such
        a corpus. ``0`` leaves them out: the papers' inputs (word vectors
        only).

        .. versionchanged:: 0.8.0
           Renamed from ``nb_features``, a name that read as a count.
           Cross-fitted and kept fixed: they were fine-tuned columns of the
           tables, counted on every training document.""",
    ),
    "nb_bigram_weight": Param(
        "float",
        [Interval(Real, 0, None, closed="left")],
        """Weight of the Naive Bayes features of word pairs, appended to every
        token vector after those of ``nb_unigram_weight`` (same tables, same
        scaling): the log-count ratio of the pair the token ends (Wang &
        Manning, 2012, whose bigram features give a linear model most of its
        edge on sentiment), for the pairs held by at least two training
        documents (0 for the others and the first token); computed on the
        training documents only, cross-fitted (``nb_folds``) and kept fixed.
        ``0`` leaves them out.

        .. versionchanged:: 0.8.0
           Renamed from ``nb_bigrams``, a name that read as a count.""",
    ),
    "nb_folds": Param(
        "int",
        [Interval(Integral, 2, None, closed="left"), Options(Integral, {0})],
        """Cross-fitting of the Naive Bayes ratios (``nb_unigram_weight``,
        ``nb_bigram_weight``): while training, each document reads the ratios
        counted without the documents of its fold (one of ``nb_folds``, a hash
        of its tokens), as target encoding is cross-fitted, so that a token or
        pair held by few training documents is not a cue that gives their
        labels away; predictions use the ratios of all training documents.
        ``0`` counts every training document for every row: a document's own
        label then reaches its features while training (a label leak).

        .. versionchanged:: 0.8.0
           Applies to the token ratios too.""",
    ),
    "batch_size": Param(
        "int",
        [Interval(Integral, 1, None, closed="left")],
        """Documents per training batch (batches also keep within a budget of
        padded tokens, so a batch of long documents holds fewer).""",
    ),
    "optimizer": Param(
        '{"sgd", "adam"}',
        [StrOptions(set(OPTIMIZERS))],
        '``"sgd"`` uses ``momentum``.',
    ),
    "momentum": Param(
        "float",
        [Interval(Real, 0, 1, closed="left")],
        'SGD momentum, used with ``optimizer="sgd"``.',
    ),
    "weight_decay": Param(
        "float",
        [Interval(Real, 0, None, closed="left")],
        "L2 penalty applied by the optimiser.",
    ),
    "ema_horizon": Param(
        "float",
        [Interval(Real, 0, None, closed="left")],
        """Horizon, in epochs, of an exponential moving average of the weights
        (Polyak averaging): after every training step the average moves
        towards the weights by ``1 / (ema_horizon * steps_per_epoch)``, with
        ``ceil(n_training_documents / batch_size)`` steps per epoch. It starts
        from the initial weights, so the first epoch's average still leans
        towards them. Validation, early stopping, checkpoints and the fitted
        model use the average; training goes on from the optimiser's own
        weights. ``0`` trains as the papers do, on the last weights (the
        documentation's results page compares the two). ``partial_fit`` does
        not average (one epoch, often of a few steps, per call), nor does a
        fit whose horizon is under one step; continued training
        (``warm_start``) starts a new average from the fitted weights.""",
    ),
    "class_weight": Param(
        'dict, list of dict, "balanced" or None',
        [dict, list, StrOptions({"balanced"}), None],
        """Weights of the classes in the loss, as in scikit-learn's linear
        models: a dict ``{label: weight}``, ``"balanced"`` for
        ``n_documents / (n_classes * np.bincount(y))``, or ``None`` for 1 each.
        Multiplied with ``sample_weight`` when both are given. With a 2-D
        ``y``, ``"balanced"`` balances each label's 1s and 0s (indicator
        matrix) or each task's classes over its labelled documents
        (multi-output), and a list holds one dict per column: ``{0: w0, 1:
        w1}`` per label, ``{label: weight}`` per task.""",
    ),
    "calibration": Param(
        '{"temperature"} or None',
        [StrOptions({"temperature"}), None],
        """``"temperature"`` divides the logits by temperatures fitted, after
        training, to minimise the log-loss of the validation split that
        ``fit`` holds out (temperature scaling, reference [4]): one for a label per document,
        one for all labels of an indicator matrix, one per task. It changes
        ``predict_proba`` only, never ``predict`` (a positive temperature
        keeps every argmax and every sign); ``decision_function`` stays the
        network's raw scores. It needs the held-out split, so
        ``early_stopping=True`` and enough documents, else ``fit`` raises a
        ValueError before training; ``partial_fit`` holds nothing out and
        resets ``temperature_`` to ``None``.""",
    ),
    "inference_batch_size": Param(
        "int",
        [Interval(Integral, 1, None, closed="left")],
        INFERENCE_BATCH_DESCRIPTION,
    ),
}


# The library's additions to every paper, switched off: the Naive Bayes
# features, the dropout on the token vectors and the weight average.
ADDITIONS_OFF = {
    "nb_unigram_weight": 0.0,
    "nb_bigram_weight": 0.0,
    "embedding_dropout": 0.0,
    "ema_horizon": 0.0,
}


def shared_parameters(**changes):
    """The shared declarations, with one classifier's changes.

    Parameters
    ----------
    **changes : dict
        For a parameter name, the fields of its declaration that differ for
        this classifier, e.g. ``lr={"description": "..."}`` (defaults are the
        ``__init__`` signature's).

    Returns
    -------
    parameters : dict of str to Param
        :data:`CLASSIFIER_PARAMETERS` and
        :data:`~sklearn_lama.training._parameters.TRAINING_PARAMETERS`, changed.
    """
    shared = {**CLASSIFIER_PARAMETERS, **TRAINING_PARAMETERS}
    unknown = set(changes) - set(shared)
    if unknown:
        raise ValueError(f"{sorted(unknown)} are not shared parameters.")
    return {name: param.but(**changes.get(name, {})) for name, param in shared.items()}
