"""One fit of a classifier, as the training driver's :class:`~..training._driver.Recipe`."""

import numpy as np

from ..training._batching import training_view
from ..training._callbacks import averaging_decay
from ..training._driver import Recipe, TrainingData
from ..training._net import training_state
from ..training._splits import train_split
from ..utils._persistence import save_weights
from ..utils._sklearn_compat import _check_sample_weight
from ._targets import learn_target

__all__ = ["ClassifierTraining"]


class ClassifierTraining(Recipe):
    """The steps of one ``fit`` or ``partial_fit`` that are a classifier's own.

    Shared by every classifier: a concrete classifier differs only by its
    hooks (``_build_core`` and the optional ones of
    :class:`~._base.BaseSequenceClassifier`).

    Parameters
    ----------
    classifier : BaseSequenceClassifier
        The estimator being fitted; it receives its fitted attributes.
    X, y, sample_weight, classes
        As given to ``fit`` or ``partial_fit``.
    resume : bool
        Continue from the fitted net (``warm_start``, ``partial_fit``).
    epochs : int or None
        ``None``: ``fit`` (``max_epochs`` with the validation split); an
        int: ``partial_fit`` (that many epochs on all of ``X``).
    """

    def __init__(self, classifier, X, y, sample_weight, classes, resume, epochs):
        self.classifier = classifier
        self.X, self.y, self.sample_weight, self.classes = X, y, sample_weight, classes
        self.resume = resume
        self.epochs = epochs

    def prepare(self, seed):
        clf = self.classifier
        # X's path: validated and read through its adapter into batches, then
        # the training view, then the network over the adapter's lookup.
        adapter, batches, y, budget = clf._read(self.X, self.y, reset=not self.resume)
        sample_weight = self.sample_weight
        if sample_weight is not None:
            sample_weight = _check_sample_weight(
                sample_weight, np.empty((len(y), 0)), dtype=np.float64, ensure_non_negative=True
            )
        previous = None
        if self.resume:
            if self.classes is not None and not clf.target_encoder_.same_classes(self.classes):
                raise ValueError(
                    f"classes={self.classes!r} differs from the classes "
                    f"of the first fit, {clf.target_encoder_.describe_classes()}."
                )
            previous = training_state(clf.net_)
        else:
            clf.target_encoder_ = learn_target(y, self.classes)
            clf.classes_ = clf.target_encoder_.classes_
            clf.input_adapter_ = adapter
        y_encoded = clf.target_encoder_.encode(y)
        label_weight = clf.target_encoder_.element_weights(y_encoded, clf.class_weight)
        view = training_view(
            batches,
            y_encoded,
            sample_weight,
            label_weight,
            clf.target_encoder_.batch_groups(y_encoded),
        )
        split = (
            train_split(
                clf.target_encoder_.strata(view.y), clf.validation_fraction, seed, len(view)
            )
            if self.epochs is None and clf.early_stopping
            else None
        )
        if self.epochs is None and clf.calibration is not None and split is None:
            raise ValueError(
                f"calibration={clf.calibration!r} fits on the validation split that fit "
                "holds out, and this fit holds none out: it needs early_stopping=True and "
                "enough documents (at least 5 held out per class, a validation_fraction "
                f"of {clf.validation_fraction} of {len(view)} rows). Set calibration=None."
            )
        averaging = 0.0
        if self.epochs is None and clf.ema_horizon > 0:
            n_train = len(view) if split is None else len(split.train_rows)
            averaging = averaging_decay(clf.ema_horizon, n_train, clf.batch_size)
        self.batches, self.budget, self.view = batches, budget, view
        key = (batches.ids, batches.offsets, batches.dense, y_encoded, sample_weight)
        return TrainingData(view, view.y, split, key, previous, averaging)

    def build_module(self, data, seed):
        if self.resume:
            # Only the shapes matter: the trained weights are restored later.
            return self.classifier._build_network(), 0.0
        # The ratios count the rows trained on, the held-out ones left out.
        counted = self.view if data.split is None else self.view.subset(data.split.train_rows)
        return self.classifier._build_network(counted), 0.0

    def callbacks(self, data):
        return self.classifier._extra_callbacks()

    def make_net(self, module, config, split, callbacks, device):
        return self.classifier._make_net(module, config, split, callbacks, device)

    def save(self, path):
        save_weights(self.classifier, path)

    def started(self, net, checkpoint_path):
        clf = self.classifier
        clf.checkpoint_path_ = checkpoint_path
        # Checkpoints written while training hold the uncalibrated net.
        clf.temperature_ = None
        # Set before training so that checkpoints written during it export this net.
        clf.net_ = net

    def finish(self, net, data):
        clf = self.classifier
        clf.n_epochs_ = len(net.history)
        if self.epochs is None and clf.calibration is not None:
            clf.temperature_ = clf._fit_temperatures(
                self.batches, self.budget, self.view.subset(data.split.valid_rows)
            )

    def interruption(self, net, data):
        kept = (
            "the weights of the finished epoch with the lowest validation loss "
            "(the current weights if no epoch finished)"
            if data.split is not None
            else "the weights reached when it stopped"
        )
        method = "fit" if self.epochs is None else "partial_fit"
        return (
            f"{type(self.classifier).__name__}.{method} was interrupted (KeyboardInterrupt) "
            f"during epoch {self.classifier.n_epochs_}; the estimator is usable and keeps "
            f"{kept}; fit with warm_start=True continues from there."
        )
