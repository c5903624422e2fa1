"""What a classifier predicts: one label, several labels, or one label per task.

``fit`` chooses one target encoding from ``y`` (:func:`learn_target`) and
the estimator keeps it; it owns everything that depends on the kind of
``y``: its validation and encoding, the per-element loss weights
(``class_weight``), the loss module, the width of the network's output, how
the logits become scores, probabilities and labels, and the temperatures of
calibration, and which documents may share a training batch. Every other
layer sees encoded targets and weights only.

- :class:`SingleLabel`: a 1-D ``y``, one class per document, softmax.
- :class:`MultiLabel`: a binary indicator matrix ``(n_documents,
  n_labels)``, one sigmoid per label (as :class:`~sklearn.neural_network.MLPClassifier`).
- :class:`MultiOutput`: a 2-D ``y`` with one column per task, each task its
  own classes and softmax (as :class:`~sklearn.ensemble.RandomForestClassifier`
  with a 2-D ``y``), ``-1`` (numeric ``y``) or ``None`` (object ``y``)
  marking a missing label.
"""

import warnings
from functools import partial

import numpy as np
import torch
from scipy.optimize import minimize_scalar
from scipy.special import expit, log_expit, logsumexp
from sklearn.exceptions import DataConversionWarning
from sklearn.preprocessing import LabelEncoder
from sklearn.utils.class_weight import compute_class_weight
from sklearn.utils.multiclass import check_classification_targets, type_of_target

from ..modules import LabelwiseBCE, TaskwiseCrossEntropy

__all__ = ["MultiLabel", "MultiOutput", "SingleLabel", "learn_target", "restore_target"]

# The missing-label markers of a multi-output y: -1 in a numeric array, None in an object one.
MISSING_NUMBER = -1


def learn_target(y, classes=None):
    """The target encoding of ``y`` (validated as scikit-learn does), learned from it.

    A column vector is read as a 1-D ``y``, with scikit-learn's
    :class:`~sklearn.exceptions.DataConversionWarning`; a 2-D ``y`` of 0s
    and 1s is a multi-label indicator matrix; any other 2-D ``y`` holds one
    task per column. ``classes`` are those of ``partial_fit``.
    """
    y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 1:
        warnings.warn(
            "A column-vector y was passed when a 1d array was expected. Please change "
            "the shape of y to (n_samples, ), for example using ravel().",
            DataConversionWarning,
            stacklevel=4,
        )
        y = y[:, 0]
    if y.ndim == 1:
        check_classification_targets(y)
        return SingleLabel.learn(y, classes)
    if y.ndim != 2:
        raise ValueError(f"y must be 1-D or 2-D; got {y.ndim} dimensions.")
    if y.dtype.kind != "O" and type_of_target(y) == "multilabel-indicator":
        return MultiLabel.learn(y, classes)
    return MultiOutput.learn(y, classes)


def restore_target(state):
    """The target encoding that ``export()`` described."""
    kinds = {kind.__name__: kind for kind in (SingleLabel, MultiLabel, MultiOutput)}
    return kinds[state["kind"]].restore(state)


def _classes_state(classes):
    return {"dtype": classes.dtype.str, "values": classes.tolist()}


def _classes_from_state(state):
    return np.array(state["values"], dtype=np.dtype(state["dtype"]))


def _two_classes(labels, where):
    """The sorted classes of ``labels``, refused when fewer than two."""
    classes = LabelEncoder().fit(labels).classes_
    if len(classes) < 2:
        raise ValueError(
            f"{where} contains only one class ({classes[0]!r}); a classifier "
            "needs samples of at least 2 classes."
        )
    return classes


def _balanced_or_dict(weights, classes, codes, where):
    """One loss factor per class of ``classes``: ``weights`` a dict or ``"balanced"``.

    ``codes`` are the encoded labels present; a class absent from them keeps 1.
    """
    if isinstance(weights, dict):
        unknown = set(weights) - set(classes.tolist())
        if unknown:
            raise ValueError(
                f"class_weight{where} names labels {sorted(unknown, key=repr)!r} that "
                f"are not in y (classes {classes.tolist()!r})."
            )
    present = np.unique(codes)
    factors = np.ones(len(classes))
    factors[present] = compute_class_weight(weights, classes=classes[present], y=classes[codes])
    return factors


def _fit_temperature(nll, logits):
    """The temperature ``T > 0`` minimising ``nll(logits / T)``, searched over ``log T``."""
    result = minimize_scalar(
        lambda log_t: nll(logits / np.exp(log_t)), bounds=(-4.0, 4.0), method="bounded"
    )
    return float(np.exp(result.x))


def _softmax_nll(logits, codes):
    """Mean negative log-likelihood of ``codes`` under the softmax of ``logits``."""
    rows = np.arange(len(codes))
    return float(np.mean(logsumexp(logits, axis=1) - logits[rows, codes]))


def _softmax(logits):
    proba = np.exp(logits - logits.max(axis=1, keepdims=True))
    return proba / proba.sum(axis=1, keepdims=True)


def _binary_scores(logits):
    """scikit-learn's decision function of softmax logits: one column for two classes."""
    return logits[:, 1] - logits[:, 0] if logits.shape[1] == 2 else logits


class SingleLabel:
    """One class per document: a softmax over ``classes_``, cross-entropy.

    Parameters
    ----------
    classes : ndarray of shape (n_classes,)
        The sorted class labels.
    """

    def __init__(self, classes):
        self.classes = classes

    @classmethod
    def learn(cls, y, classes=None):
        return cls(_two_classes(y if classes is None else classes, "y"))

    # ----------------------------------------------------------- shapes
    @property
    def classes_(self):
        """The estimator's ``classes_``."""
        return self.classes

    @property
    def n_outputs(self):
        """Width of the network's logits."""
        return len(self.classes)

    @property
    def nb_sizes(self):
        """Classes of each problem the Naive Bayes ratios count: one problem."""
        return (len(self.classes),)

    def same_classes(self, classes):
        """Whether ``classes`` (of ``partial_fit``) are the fitted ones."""
        return np.array_equal(np.unique(classes), self.classes)

    def describe_classes(self):
        return repr(self.classes.tolist())

    # ---------------------------------------------------------- training
    def encode(self, y):
        """``y`` as class indices, shape ``(n_documents,)``."""
        y = np.asarray(y)
        if y.ndim == 2 and y.shape[1] == 1:
            y = y[:, 0]
        if y.ndim == 1:
            check_classification_targets(y)
        else:
            raise ValueError(
                f"y has shape {y.shape} but the estimator was fitted with one label per "
                "document (a 1-D y): refit with warm_start=False to change the kind of y."
            )
        unseen = set(np.unique(y).tolist()) - set(self.classes.tolist())
        if unseen:
            raise ValueError(
                f"y holds labels {sorted(unseen, key=repr)!r} that are not in classes_ "
                f"{self.classes.tolist()!r}. Continued training (warm_start, "
                "partial_fit) keeps the classes of the first fit: refit with "
                "warm_start=False, or pass every label as classes to the first "
                "partial_fit call."
            )
        return np.searchsorted(self.classes, y)

    def element_weights(self, codes, class_weight):
        """Each document's loss factor from ``class_weight``, shape ``(n_documents,)``."""
        if class_weight is None:
            return np.ones(len(codes))
        if isinstance(class_weight, list):
            raise ValueError(
                "class_weight is a list (one dict per column of a 2-D y), but y has one "
                "label per document: pass a dict {label: weight} or 'balanced'."
            )
        return _balanced_or_dict(class_weight, self.classes, codes, "")[codes]

    def strata(self, codes):
        """What the held-out split is stratified on: the class."""
        return codes

    def batch_groups(self, codes):
        """Which documents may share a training batch: any (``None``)."""
        return None

    def nb_problems(self, codes):
        """``(rows, labels, n_classes)`` of each problem the Naive Bayes ratios count."""
        return [(np.arange(len(codes)), codes, len(self.classes))]

    def loss(self):
        """The loss module: one loss per document, unreduced."""
        return torch.nn.CrossEntropyLoss(reduction="none")

    def accuracy(self, logits, codes):
        """The fraction of documents whose class is the most probable."""
        return float(np.mean(logits.argmax(axis=1) == codes))

    # ---------------------------------------------------------- calibration
    def fit_temperatures(self, logits, codes):
        """One temperature, shape ``(1,)``, minimising the log-loss of ``codes``."""
        return np.array([_fit_temperature(lambda z: _softmax_nll(z, codes), logits)])

    def _scaled(self, logits, temperatures):
        return logits if temperatures is None else logits / temperatures[0]

    # ---------------------------------------------------------- prediction
    def decision(self, logits):
        return _binary_scores(logits)

    def proba(self, logits, temperatures=None):
        return _softmax(self._scaled(logits, temperatures))

    def predict(self, logits):
        return self.classes[np.argmax(logits, axis=1)]

    # ---------------------------------------------------------- inspection
    def class_scores(self, logits, task=None):
        """The score of each class that explanations attribute: its centred logit.

        ``z_c - mean_k z_k`` of a batch's logits (a torch tensor ``(B,
        n_classes)``): the softmax is the same whatever constant is added to
        every logit, so this is the part of the class's score that moves
        its probability; with two classes, half the log-odds of the class.
        ``task`` is for :class:`MultiOutput` and unused here.
        """
        return logits - logits.mean(dim=1, keepdim=True)

    # ---------------------------------------------------------- persistence
    def export(self):
        return {"kind": type(self).__name__, "classes": _classes_state(self.classes)}

    @classmethod
    def restore(cls, state):
        return cls(_classes_from_state(state["classes"]))


class MultiLabel:
    """Any number of labels per document: one sigmoid per label, binary cross-entropy.

    ``classes_`` is ``arange(n_labels)``, the column indices of the
    indicator matrix (as :class:`~sklearn.neural_network.MLPClassifier`).
    A label that is never (or always) on in ``y`` is learned as such.

    Parameters
    ----------
    n_labels : int
        Columns of the indicator matrix.
    """

    def __init__(self, n_labels):
        self.n_labels = int(n_labels)

    @classmethod
    def learn(cls, y, classes=None):
        target = cls(y.shape[1])
        if classes is not None and not target.same_classes(classes):
            raise ValueError(
                f"classes={np.unique(classes).tolist()!r}: for an indicator matrix y, "
                f"classes are its column indices {target.describe_classes()}."
            )
        return target

    @property
    def classes_(self):
        return np.arange(self.n_labels)

    @property
    def n_outputs(self):
        return self.n_labels

    @property
    def nb_sizes(self):
        """One two-class problem per label."""
        return (2,) * self.n_labels

    def same_classes(self, classes):
        return np.array_equal(np.unique(np.asarray(classes)), self.classes_)

    def describe_classes(self):
        return f"0..{self.n_labels - 1}"

    def encode(self, y):
        """``y`` as a ``(n_documents, n_labels)`` int indicator matrix."""
        y = np.asarray(y)
        if y.ndim != 2 or y.shape[1] != self.n_labels:
            raise ValueError(
                f"y has shape {y.shape} but the estimator was fitted on an indicator "
                f"matrix of {self.n_labels} labels."
            )
        if not np.isin(y, (0, 1)).all():
            raise ValueError("an indicator matrix y holds 0s and 1s only.")
        return y.astype(np.int64)

    def element_weights(self, codes, class_weight):
        """The loss factor of each document and label, shape ``(n_documents, n_labels)``.

        ``class_weight``: ``"balanced"`` weighs each label's 1s and 0s by
        ``n_documents / (2 * count)``, that label's own balance; a list of
        one dict ``{0: w0, 1: w1}`` per label gives them explicitly.
        """
        weights = np.ones(codes.shape)
        if class_weight is None:
            return weights
        per_label = _per_column(class_weight, self.n_labels, "label")
        for j, factors in enumerate(per_label):
            weights[:, j] = _balanced_or_dict(factors, np.array([0, 1]), codes[:, j], f"[{j}]")[
                codes[:, j]
            ]
        return weights

    def strata(self, codes):
        """Not stratified: label sets are too many to stratify on."""
        return None

    def batch_groups(self, codes):
        """Which documents may share a training batch: any (``None``)."""
        return None

    def nb_problems(self, codes):
        rows = np.arange(len(codes))
        return [(rows, codes[:, j], 2) for j in range(self.n_labels)]

    def loss(self):
        return LabelwiseBCE()

    def accuracy(self, logits, codes):
        """Subset accuracy: the fraction of documents with every label right."""
        return float(np.mean(((logits > 0) == codes.astype(bool)).all(axis=1)))

    def fit_temperatures(self, logits, codes):
        """One temperature for all labels, shape ``(1,)``, minimising their mean log-loss."""

        def nll(z):
            return float(np.mean(-codes * log_expit(z) - (1 - codes) * log_expit(-z)))

        return np.array([_fit_temperature(nll, logits)])

    def decision(self, logits):
        """Each label's log-odds, ``(n_documents, n_labels)``."""
        return logits

    def proba(self, logits, temperatures=None):
        return expit(logits if temperatures is None else logits / temperatures[0])

    def predict(self, logits):
        """The labels of probability above 0.5, as an int indicator matrix."""
        return (logits > 0).astype(np.int64)

    def class_scores(self, logits, task=None):
        """Each label's log-odds, the logits themselves: one sigmoid per label."""
        return logits

    def export(self):
        return {"kind": type(self).__name__, "n_labels": self.n_labels}

    @classmethod
    def restore(cls, state):
        return cls(state["n_labels"])


def _per_column(class_weight, n_columns, what):
    """``class_weight`` of a 2-D y as one entry per column: ``"balanced"`` or a list of dicts."""
    if class_weight == "balanced":
        return ["balanced"] * n_columns
    if not isinstance(class_weight, list) or len(class_weight) != n_columns:
        raise ValueError(
            f"class_weight for a 2-D y must be 'balanced' or a list of one dict per "
            f"{what} ({n_columns}); got {class_weight!r:.80}."
        )
    if not all(isinstance(w, dict) for w in class_weight):
        raise ValueError(f"class_weight must be a list of dicts, one per {what}.")
    return class_weight


def _is_missing(column):
    """Where a multi-output column marks a missing label."""
    if column.dtype.kind == "O":
        return np.array([v is None for v in column], dtype=bool)
    return column == MISSING_NUMBER


class MultiOutput:
    """One label per task, several tasks: a softmax over each task's classes.

    The network's logits hold the tasks' blocks side by side, one head per
    task over one shared encoder. A document without a label for a task
    (``-1`` in a numeric ``y``, ``None`` in an object ``y``) adds nothing to
    that task's loss.

    Parameters
    ----------
    classes : list of ndarray
        The sorted classes of each task.
    """

    def __init__(self, classes):
        self.classes = list(classes)

    @classmethod
    def learn(cls, y, classes=None):
        if classes is not None:
            if not isinstance(classes, (list, tuple)) or len(classes) != y.shape[1]:
                raise ValueError(
                    f"classes for a y of {y.shape[1]} tasks must be a list of one array "
                    "of labels per task."
                )
            learned = [np.unique(c) for c in classes]
        else:
            learned = []
            for k in range(y.shape[1]):
                column = y[:, k]
                labels = column[~_is_missing(column)]
                if not len(labels):
                    raise ValueError(
                        f"y column {k} has no label: every entry is the missing-label "
                        f"marker ({MISSING_NUMBER} in a numeric y, None in an object y). "
                        "Each task needs labelled documents."
                    )
                if labels.dtype.kind == "O":
                    labels = np.array(labels.tolist())
                check_classification_targets(labels)
                learned.append(_two_classes(labels, f"y column {k}"))
        return cls(learned)

    @property
    def classes_(self):
        return self.classes

    @property
    def sizes(self):
        return tuple(len(c) for c in self.classes)

    @property
    def n_outputs(self):
        return sum(self.sizes)

    @property
    def nb_sizes(self):
        return self.sizes

    def same_classes(self, classes):
        return len(classes) == len(self.classes) and all(
            np.array_equal(np.unique(c), fitted) for c, fitted in zip(classes, self.classes)
        )

    def describe_classes(self):
        return repr([c.tolist() for c in self.classes])

    def encode(self, y):
        """``y`` as class indices per task, ``(n_documents, n_tasks)``, ``-1`` where missing."""
        y = np.asarray(y)
        if y.ndim != 2 or y.shape[1] != len(self.classes):
            raise ValueError(
                f"y has shape {y.shape} but the estimator was fitted on {len(self.classes)} tasks."
            )
        codes = np.full(y.shape, -1, dtype=np.int64)
        for k, classes in enumerate(self.classes):
            column = y[:, k]
            present = ~_is_missing(column)
            labels = column[present]
            if labels.dtype.kind == "O" and classes.dtype.kind != "O":
                labels = np.array(labels.tolist(), dtype=classes.dtype)
            unseen = set(np.unique(labels).tolist()) - set(classes.tolist())
            if unseen:
                raise ValueError(
                    f"y column {k} holds labels {sorted(unseen, key=repr)!r} that are not "
                    f"in classes_[{k}] {classes.tolist()!r}."
                )
            codes[present, k] = np.searchsorted(classes, labels)
        return codes

    def element_weights(self, codes, class_weight):
        """The loss factor of each document and task, 0 where the label is missing.

        ``class_weight``: ``"balanced"`` balances each task's classes over
        its labelled documents; a list of one dict ``{label: weight}`` per
        task gives them explicitly.
        """
        weights = (codes >= 0).astype(np.float64)
        if class_weight is None:
            return weights
        per_task = _per_column(class_weight, len(self.classes), "task")
        for k, (factors, classes) in enumerate(zip(per_task, self.classes)):
            present = codes[:, k] >= 0
            column = codes[present, k]
            weights[present, k] = _balanced_or_dict(factors, classes, column, f"[{k}]")[column]
        return weights

    def strata(self, codes):
        return None

    def batch_groups(self, codes):
        """One group per set of labelled tasks, ``(n_documents,)``.

        Documents labelled for the same tasks (in the multi-task setting,
        those of one corpus) share training batches, and no others: a batch
        then pads to lengths of one corpus only, and each step updates the
        heads of the tasks its batch is labelled for, as training alternates
        between tasks in multi-task learning.
        """
        return np.unique(codes >= 0, axis=0, return_inverse=True)[1].reshape(-1)

    def nb_problems(self, codes):
        problems = []
        for k, classes in enumerate(self.classes):
            rows = np.flatnonzero(codes[:, k] >= 0)
            problems.append((rows, codes[rows, k], len(classes)))
        return problems

    def loss(self):
        return TaskwiseCrossEntropy(self.sizes)

    def _blocks(self, logits):
        return np.split(logits, np.cumsum(self.sizes)[:-1], axis=1)

    def accuracy(self, logits, codes):
        """The fraction of the labelled (document, task) pairs predicted right."""
        right = [
            block.argmax(axis=1) == codes[:, k] for k, block in enumerate(self._blocks(logits))
        ]
        labelled = codes >= 0
        return float(np.sum(np.stack(right, axis=1) & labelled) / max(labelled.sum(), 1))

    def fit_temperatures(self, logits, codes):
        """One temperature per task, shape ``(n_tasks,)``, each on its labelled documents."""
        temperatures = []
        for k, block in enumerate(self._blocks(logits)):
            rows = codes[:, k] >= 0
            labels = codes[rows, k]
            if rows.any():
                t = _fit_temperature(partial(_softmax_nll, codes=labels), block[rows])
            else:
                t = 1.0
            temperatures.append(t)
        return np.array(temperatures)

    def decision(self, logits):
        """One array of scores per task, as :class:`SingleLabel` gives them."""
        return [_binary_scores(block) for block in self._blocks(logits)]

    def proba(self, logits, temperatures=None):
        """One ``(n_documents, n_classes_k)`` array per task."""
        blocks = self._blocks(logits)
        if temperatures is not None:
            blocks = [block / t for block, t in zip(blocks, temperatures)]
        return [_softmax(block) for block in blocks]

    def predict(self, logits):
        """``(n_documents, n_tasks)`` labels, of the classes' dtype when the tasks share one."""
        dtypes = {c.dtype for c in self.classes}
        dtype = dtypes.pop() if len(dtypes) == 1 else object
        labels = np.empty((len(logits), len(self.classes)), dtype=dtype)
        for k, block in enumerate(self._blocks(logits)):
            labels[:, k] = self.classes[k][block.argmax(axis=1)]
        return labels

    def class_scores(self, logits, task=None):
        """The centred logits of task ``task``'s classes, ``(B, n_classes_task)``.

        As :meth:`SingleLabel.class_scores`, within the task's block of the
        logits (a torch tensor ``(B, n_outputs)``).
        """
        start = sum(self.sizes[:task])
        block = logits[:, start : start + self.sizes[task]]
        return block - block.mean(dim=1, keepdim=True)

    def export(self):
        return {
            "kind": type(self).__name__,
            "classes": [_classes_state(c) for c in self.classes],
        }

    @classmethod
    def restore(cls, state):
        return cls([_classes_from_state(c) for c in state["classes"]])
