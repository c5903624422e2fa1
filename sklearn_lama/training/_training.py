"""Training: the skorch net, its callbacks, sample weights and resumable state."""

import copy
import hashlib
import os

import numpy as np
import torch
from sklearn.model_selection import StratifiedShuffleSplit
from skorch import NeuralNetClassifier
from skorch.callbacks import Callback, Checkpoint, EarlyStopping, EpochScoring, ProgressBar
from skorch.history import History
from skorch.utils import TeeGenerator
from torch.utils.data import Subset

from ..utils._persistence import check_writable, save_weights
from ._batching import TrainingView, make_loader

__all__ = [
    "HoldOut",
    "INFERENCE_BATCH",
    "OPTIMIZERS",
    "PRECISIONS",
    "PenalisedNet",
    "WeightAveraging",
    "WeightsCheckpoint",
    "averaging_decay",
    "build_callbacks",
    "checkpoint_template",
    "fit_key",
    "make_net",
    "restore_training_state",
    "train_split",
    "training_state",
    "to_device",
    "training_view",
]

OPTIMIZERS = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam}
INFERENCE_BATCH = 256
_MIN_VALID_PER_CLASS = 5
# The autocast dtype of each ``precision`` (None: no autocast, float32 throughout).
PRECISIONS = {"32": None, "bf16": torch.bfloat16, "16-mixed": torch.float16}


def _silent(*args, **kwargs):
    """A sink for skorch messages when ``verbose=0``."""


class PenalisedNet(NeuralNetClassifier):
    """skorch classifier whose module returns ``(logits, penalty)``.

    The loss of a batch is the mean over its documents of each document's
    cross-entropy times its weight (``sample_weight`` and ``class_weight``),
    plus the penalty (e.g. LAMA's disagreement term, Eq. 18); prediction uses
    the logits only. Weights travel in the batch as ``X["weight"]`` and are
    not passed to the module.

    ``precision`` (a key of :data:`PRECISIONS`) runs the forward pass under
    :func:`torch.autocast` with that dtype; its outputs, and so the loss, are
    float32, and ``"16-mixed"`` (CUDA only) scales the loss with a
    :class:`torch.amp.GradScaler` so that small float16 gradients do not
    underflow. On CUDA, batches come from pinned memory and are copied
    without blocking.
    """

    def __init__(self, *args, precision="32", **kwargs):
        super().__init__(*args, **kwargs)
        self.precision = precision

    def initialize(self):
        super().initialize()
        scaled = self.precision == "16-mixed"
        self.scaler_ = torch.amp.GradScaler(torch.device(self.device).type) if scaled else None
        return self

    def autocast(self):
        """The autocast context of the net's ``precision`` on its device."""
        dtype = PRECISIONS[self.precision]
        device_type = torch.device(self.device).type
        return torch.autocast(device_type, dtype=dtype, enabled=dtype is not None)

    def infer(self, x, **fit_params):
        if isinstance(x, dict):
            x = {k: to_device(v, self.device) for k, v in x.items() if k != "weight"}
        with self.autocast():
            logits, penalty = super().infer(x, **fit_params)
        # The loss, scores and probabilities are computed in float32.
        return logits.float(), penalty.float()

    def get_loss(self, y_pred, y_true, X=None, training=False):
        logits, penalty = y_pred
        losses = self.criterion_(logits, y_true.to(logits.device))
        if isinstance(X, dict) and "weight" in X:
            losses = losses * X["weight"].to(losses)
        return losses.mean() + penalty

    def train_step(self, batch, **fit_params):
        if self.scaler_ is None:
            return super().train_step(batch, **fit_params)
        # The scaled loss goes backward; gradients are unscaled before the
        # callbacks see them (e.g. GradientNormClipping) and the step, which
        # the scaler skips when they hold inf or NaN.
        self._zero_grad_optimizer()
        self._set_training(True)
        Xi, yi = batch
        y_pred = self.infer(Xi, **fit_params)
        loss = self.get_loss(y_pred, yi, X=Xi, training=True)
        self.scaler_.scale(loss).backward()
        for name in self._optimizers:
            self.scaler_.unscale_(getattr(self, name + "_"))
        self.notify(
            "on_grad_computed",
            named_parameters=TeeGenerator(self.get_all_learnable_params()),
            batch=batch,
            training=True,
        )
        for name in self._optimizers:
            self.scaler_.step(getattr(self, name + "_"))
        self.scaler_.update()
        return {"loss": loss, "y_pred": y_pred}

    def fit_loop(self, X, y=None, **fit_params):
        # skorch swallows KeyboardInterrupt (then restores the best weights in
        # on_train_end), and its EarlyStopping stops training by raising one.
        # Remember a user's interruption so the estimator can say so.
        self.interrupted_ = False
        try:
            return super().fit_loop(X, y, **fit_params)
        except KeyboardInterrupt:
            self.interrupted_ = not any(
                isinstance(cb, EarlyStopping) and cb.misses_ >= cb.patience
                for _, cb in self.callbacks_
            )
            raise


def to_device(tensor, device):
    """``tensor`` on ``device``; a copy to CUDA does not block (its source is pinned)."""
    device = torch.device(device)
    return tensor.to(device, non_blocking=device.type == "cuda")


def training_view(batches, y, sample_weight, class_weight):
    """The documents one training epoch visits, in a canonical order, with loss weights.

    ``sample_weight`` follows scikit-learn's semantics exactly: a weight
    ``w`` counts the document ``floor(w)`` times, plus once more with its loss
    scaled by ``w - floor(w)``, so an integer weight is the same as repeating
    the document and a weight of 0 the same as leaving it out. Documents are
    put in a canonical order (length, content, label) first, so that the
    training data, and hence the fitted model, do not depend on the order of
    ``X``. ``class_weight`` (one factor per encoded class) scales each
    document's loss, as in :class:`~sklearn.linear_model.LogisticRegression`.
    """
    order = np.lexsort((y, batches.content_keys(), batches.lengths))
    if sample_weight is None:
        index, weights = order, np.ones(len(order))
    else:
        w = sample_weight[order]
        whole = np.floor(w).astype(np.int64)
        part = w - whole
        copies = whole + (part > 0)
        index = np.repeat(order, copies)
        weights = np.ones(len(index))
        # The fractional copy of a document is its last one.
        last = np.cumsum(copies) - 1
        weights[last[part > 0]] = part[part > 0]
    if class_weight is not None:
        weights = weights * class_weight[y[index]]
    return TrainingView(batches, index, y[index], weights.astype(np.float32))


class HoldOut:
    """A stratified hold-out split of the training rows, drawn once.

    The rows are those skorch's ``ValidSplit(fraction, stratified=True,
    random_state=seed)`` would hold out; drawing them up front lets the
    training-set statistics (the Naive Bayes features) leave them out.

    Attributes
    ----------
    train_rows, valid_rows : ndarray of int
        Rows of the training view on each side.
    """

    def __init__(self, y, validation_fraction, seed):
        splitter = StratifiedShuffleSplit(test_size=validation_fraction, random_state=seed)
        self.train_rows, self.valid_rows = next(splitter.split(np.zeros(len(y)), y))

    def __call__(self, dataset, y=None, groups=None):
        return Subset(dataset, self.train_rows), Subset(dataset, self.valid_rows)


def train_split(y, validation_fraction, seed):
    """The stratified :class:`HoldOut` split, or ``None`` when the data are too small."""
    n_valid = int(np.ceil(validation_fraction * len(y)))
    counts = np.bincount(y)
    n_classes = np.count_nonzero(counts)
    # A stratified split needs every class twice and room for each class on
    # both sides, and a held-out set of a few documents per class picks its
    # "best" epoch by chance; on smaller data early stopping is skipped
    # (documented).
    if (
        counts[counts > 0].min() < 2
        or n_valid < _MIN_VALID_PER_CLASS * n_classes
        or len(y) - n_valid < n_classes
    ):
        return None
    return HoldOut(y, validation_fraction, seed)


def fit_key(estimator, batches, y, sample_weight):
    """12 hex digits identifying one fit: the estimator's parameters and its training data.

    The same parameters on the same data give the same key, so a checkpoint
    file of a killed fit is found again under its name; every fit of a
    search (another candidate or another split) gets its own.
    """
    ignored = {"checkpoint", "verbose", "warm_start", "device", "callbacks", "torch_threads"}
    params = {k: v for k, v in estimator.get_params(deep=False).items() if k not in ignored}
    digest = hashlib.sha256(f"{type(estimator).__name__}{sorted(params.items())!r}".encode())
    for array in (batches.ids, batches.offsets, batches.dense, y, sample_weight):
        if array is not None:
            digest.update(np.ascontiguousarray(array).tobytes())
    return digest.hexdigest()[:12]


class WeightAveraging(Callback):
    """An exponential moving average of the weights, validated and kept in their place.

    The average starts from the weights training starts from and, after
    every training step, moves towards the trained weights by ``1 - decay``
    (Polyak averaging). Each epoch's validation runs on the average, and at
    the epoch's end the network holds it: early stopping's choice of the
    best epoch, checkpoints and the weights the estimator keeps are
    averages. The next epoch trains on from the optimiser's own weights.
    Only trainable parameters are averaged.
    """

    def __init__(self, decay):
        self.decay = decay

    def initialize(self):
        self.average_ = None
        self.trained_ = None
        return self

    def _parameters(self, net):
        return [p for p in net.module_.parameters() if p.requires_grad]

    def on_train_begin(self, net, **kwargs):
        self.average_ = [p.detach().clone() for p in self._parameters(net)]
        self.trained_ = None

    def on_epoch_begin(self, net, **kwargs):
        if self.trained_ is not None:
            with torch.no_grad():
                for p, trained in zip(self._parameters(net), self.trained_):
                    p.copy_(trained)
            self.trained_ = None

    def on_batch_begin(self, net, training=False, **kwargs):
        if not training:
            self._swap_in(net)

    def on_batch_end(self, net, training=False, **kwargs):
        if training:
            with torch.no_grad():
                for average, p in zip(self.average_, self._parameters(net)):
                    average.lerp_(p.detach(), 1 - self.decay)

    def on_epoch_end(self, net, **kwargs):
        # Without validation batches the epoch's end is the first place to swap.
        self._swap_in(net)

    def on_train_end(self, net, **kwargs):
        if self.average_ is not None:
            self._swap_in(net)
        # The copies are not part of the model: a pickled estimator stays its size.
        self.average_ = self.trained_ = None

    def _swap_in(self, net):
        """Put the average into the network, keeping the trained weights aside."""
        if self.trained_ is not None:
            return
        parameters = self._parameters(net)
        with torch.no_grad():
            self.trained_ = [p.detach().clone() for p in parameters]
            for p, average in zip(parameters, self.average_):
                p.copy_(average)


def averaging_decay(horizon, n_documents, batch_size):
    """The per-step decay of an average over ``horizon`` epochs of ``n_documents``.

    ``1 - 1 / (horizon * steps)`` with ``ceil(n_documents / batch_size)``
    steps per epoch, so that the average spans the same share of an epoch
    on any corpus; 0 (no averaging) when that spans less than one step.
    """
    steps = -(-n_documents // batch_size)
    return max(0.0, 1.0 - 1.0 / (horizon * steps))


class WeightsCheckpoint(Checkpoint):
    """skorch's :class:`~skorch.callbacks.Checkpoint`, writing weights-only files.

    skorch decides when to write (``monitor``: the epochs that lower the
    validation loss, or every epoch without validation) and formats the file
    name (``{last_epoch[epoch]}`` and the other fields of skorch's
    templates); ``{fit}`` is replaced by :func:`fit_key`, which is inserted
    before the suffix when the path does not contain it, so that every fit of
    a search writes its own file. The file holds the whole estimator, which
    ``estimator.net_`` must be the net in training of.
    """

    def __init__(self, estimator, f_weights, monitor="valid_loss_best", sink=_silent):
        super().__init__(
            monitor=monitor,
            f_params=None,
            f_optimizer=None,
            f_criterion=None,
            f_history=None,
            sink=sink,
        )
        self.estimator = estimator
        self.f_weights = f_weights

    def save_model(self, net):
        save_weights(self.estimator, self._format_target(net, self.f_weights, -1))


def checkpoint_template(path, key):
    """The checkpoint file template of one fit (see :class:`WeightsCheckpoint`)."""
    path = os.fspath(path)
    check_writable(path, "checkpoint")
    if "{fit}" not in path:
        stem, suffix = os.path.splitext(path)
        path = f"{stem}-{{fit}}{suffix}"
    return path.replace("{fit}", key)


def build_callbacks(estimator, split, checkpoint, averaging=0.0):
    """The net's callbacks: the user's, progress, averaging, checkpoint, early stopping, its own.

    ``averaging`` is the per-step decay of the weight average
    (:class:`WeightAveraging`); 0 leaves it out.
    """
    callbacks = list(estimator.callbacks or [])
    if estimator.verbose:
        callbacks.append(ProgressBar())
    # From the predictions made while training (skorch caches them): no extra pass.
    callbacks.append(
        EpochScoring("accuracy", name="train_acc", on_train=True, lower_is_better=False)
    )
    if averaging:
        # Before the checkpoint and early stopping, which must see the average.
        callbacks.append(WeightAveraging(averaging))
    if checkpoint is not None:
        callbacks.append(
            WeightsCheckpoint(
                estimator,
                checkpoint,
                monitor="valid_loss_best" if split is not None else None,
                sink=print if estimator.verbose else _silent,
            )
        )
    if split is not None:
        callbacks.append(
            EarlyStopping(
                monitor="valid_loss",
                patience=estimator.patience,
                load_best=True,
                sink=print if estimator.verbose else _silent,
            )
        )
    callbacks.extend(estimator._extra_callbacks())
    return callbacks


def make_net(estimator, network, split, callbacks, device):
    """The skorch net that trains ``network`` with the estimator's settings.

    A float16 model loaded where CUDA is missing runs in float32.
    """
    precision = estimator.precision
    if precision == "16-mixed" and device.type != "cuda":
        precision = "32"
    pinned = device.type == "cuda"
    optimizer_params = {"optimizer__weight_decay": estimator.weight_decay}
    if estimator.optimizer == "sgd":
        optimizer_params["optimizer__momentum"] = estimator.momentum
    return PenalisedNet(
        module=network,
        criterion=torch.nn.CrossEntropyLoss,
        criterion__reduction="none",
        optimizer=OPTIMIZERS[estimator.optimizer],
        lr=estimator.lr,
        max_epochs=estimator.max_epochs,
        batch_size=estimator.batch_size,
        train_split=split,
        callbacks=callbacks,
        device=str(device),
        iterator_train=make_loader,
        iterator_train__shuffle=True,
        iterator_train__max_tokens=estimator.max_batch_tokens,
        iterator_train__pin_memory=pinned,
        iterator_valid=make_loader,
        iterator_valid__batch_size=max(estimator.batch_size, estimator.inference_batch_size),
        iterator_valid__max_tokens=estimator.max_batch_tokens,
        iterator_valid__pin_memory=pinned,
        precision=precision,
        verbose=int(estimator.verbose),
        **optimizer_params,
    )


def training_state(net):
    """What continued training needs from a fitted net (references, not copies)."""
    return {
        "network": net.module_.state_dict(),
        "optimizer": next(k for k, v in OPTIMIZERS.items() if type(net.optimizer_) is v),
        "optimizer_state": net.optimizer_.state_dict()["state"],
        "history": net.history.to_list(),
    }


def restore_training_state(estimator, net, state):
    """Load a previous training's weights, optimizer state and history into ``net``."""
    try:
        net.module_.load_state_dict(state["network"])
    except RuntimeError as exc:
        raise ValueError(
            f"The trained network does not fit the one {type(estimator).__name__}'s "
            "current parameters build (were architecture parameters changed after "
            f"fitting?): {str(exc).splitlines()[0]}"
        ) from None
    # The state may still belong to another net (warm start): copies keep that
    # net untouched while this one trains.
    if state["optimizer"] == estimator.optimizer:
        # The saved moments, with the param groups (lr, ...) of the current parameters.
        current = net.optimizer_.state_dict()
        net.optimizer_.load_state_dict(
            {**current, "state": copy.deepcopy(state["optimizer_state"])}
        )
    # skorch's LRScheduler resumes a schedule at the epoch count of the
    # history, which torch allows only when each group records its initial lr.
    for group in net.optimizer_.param_groups:
        group.setdefault("initial_lr", group["lr"])
    net.history = History(copy.deepcopy(state["history"]))
