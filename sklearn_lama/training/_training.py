"""Training: the skorch nets, their callbacks, sample weights and resumable state.

One stack for every estimator: the device and precision checks, the
threads, the callbacks (progress, checkpoints, early stopping, the time
budget) and the state that continued training needs live here, and the
classifiers and the translator train through them.
"""

import copy
import hashlib
import os
import time
import warnings
from numbers import Integral, Real

import numpy as np
import torch
from sklearn.model_selection import StratifiedShuffleSplit
from skorch import NeuralNetClassifier
from skorch.callbacks import Callback, Checkpoint, EarlyStopping, EpochScoring, ProgressBar
from skorch.history import History
from skorch.utils import TeeGenerator
from torch.utils.data import Subset

from ..utils._parameters import Param
from ..utils._persistence import check_writable, save_weights
from ..utils._sklearn_compat import Interval, StrOptions
from ._batching import MAX_BATCH_TOKENS, TrainingView, make_loader

__all__ = [
    "HoldOut",
    "INFERENCE_BATCH",
    "OPTIMIZERS",
    "PRECISIONS",
    "TRAINING_CONSTRAINTS",
    "TRAINING_PARAMETERS",
    "EpochCut",
    "NetMixin",
    "PenalisedNet",
    "RowSplit",
    "TimeBudget",
    "WeightAveraging",
    "WeightsCheckpoint",
    "averaging_decay",
    "build_callbacks",
    "check_device",
    "check_precision",
    "checkpoint_template",
    "fit_key",
    "loading_device",
    "make_net",
    "net_params",
    "restore_training_state",
    "run_precision",
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

#: The training parameters that every estimator shares, with one meaning, each declared once.
TRAINING_PARAMETERS = {
    "max_epochs": Param(
        "int",
        20,
        [Interval(Integral, 1, None, closed="left")],
        "Maximum passes over the training data.",
    ),
    "lr": Param("float", 1e-3, [Interval(Real, 0, None, closed="neither")], "Learning rate."),
    "early_stopping": Param(
        "bool",
        True,
        ["boolean"],
        """Hold out ``validation_fraction`` of the training data (stratified) and
        keep the weights of the epoch with the lowest validation loss, stopping
        after ``patience`` epochs without improvement. Skipped when the data are
        too small for a useful stratified split (a class with one document, or
        fewer than 5 held-out documents per class).""",
    ),
    "validation_fraction": Param(
        "float",
        0.1,
        [Interval(Real, 0, 1, closed="neither")],
        "Share of the training data held out for early stopping.",
    ),
    "patience": Param(
        "int",
        5,
        [Interval(Integral, 1, None, closed="left")],
        "Epochs without improvement before stopping.",
    ),
    "callbacks": Param(
        "list or None",
        None,
        [list, None],
        """skorch callbacks added to the net, as instances or ``(name, callback)``
        pairs (e.g. ``skorch.callbacks.LRScheduler``, ``GradientNormClipping``).
        They are code, so :func:`~sklearn_lama.save_weights` does not store
        them: a loaded estimator has ``callbacks=None``.""",
        identifies_fit=False,
    ),
    "warm_start": Param(
        "bool",
        False,
        ["boolean"],
        """When the estimator is already fitted, ``fit`` continues training the
        current network, weights and optimizer state, for ``max_epochs`` more
        epochs instead of starting over. ``X`` must be of the kind seen in the
        first fit (the same vocabulary, or the same number of tokens) and ``y``
        may only hold labels of ``classes_``; architecture parameters must not
        change. The learning rate and the other optimizer settings are taken
        from the current parameters, the optimizer's moments are kept (unless
        ``optimizer`` changed). Early stopping starts afresh on each call.
        :meth:`partial_fit` always continues, one epoch per call.""",
        identifies_fit=False,
    ),
    "checkpoint": Param(
        "str or path-like",
        None,
        [str, os.PathLike, None],
        """File name for checkpoints in the format of
        :func:`~sklearn_lama.save_weights`, written after each epoch that
        lowers the validation loss (after every epoch when no validation split
        is used), through skorch's :class:`~skorch.callbacks.Checkpoint`.
        Every fit writes its own file: ``{fit}`` in the name is replaced by 12
        hex digits identifying the parameters and the training data (inserted
        before the suffix when absent: ``"run.pt"`` becomes
        ``"run-3f2a9c1b0d4e.pt"``), so the fits of a ``GridSearchCV`` never
        overwrite each other and a rerun of the same fit finds its file again;
        skorch's fields (``{last_epoch[epoch]}``) work too.
        ``checkpoint_path_`` names the file. Each write replaces the file
        atomically, so a killed process loses at most the epoch in progress,
        and ``load_weights(path).set_params(warm_start=True).fit(X, y)``
        resumes. A directory, or a file in a directory that does not exist or
        cannot be written, raises ``ValueError`` before training starts.""",
        identifies_fit=False,
    ),
    "device": Param(
        "str or torch.device",
        "cpu",
        [str, torch.device],
        """Where the network trains and predicts: ``"cpu"``, ``"cuda"``,
        ``"cuda:N"`` or ``"mps"`` (Apple GPUs), where available.""",
        identifies_fit=False,
    ),
    "precision": Param(
        '{"32", "bf16", "16-mixed"}',
        "32",
        [StrOptions(set(PRECISIONS))],
        """Arithmetic of the forward pass. ``"32"``: float32 throughout.
        ``"bf16"``: :func:`torch.autocast` to bfloat16 (on the CPU, and on
        GPUs that support it); ``"16-mixed"``: autocast to float16 with
        gradient scaling (:class:`torch.amp.GradScaler`), CUDA only: on
        another device it raises ``ValueError`` before training (float16 is
        not faster on CPUs; use ``"bf16"`` there). Weights, optimizer state,
        loss and the returned probabilities stay float32. A model trained with
        ``"16-mixed"`` and loaded where CUDA is missing predicts in float32.""",
    ),
    "torch_threads": Param(
        "int or None",
        None,
        [
            Interval(Integral, 1, None, closed="left"),
            Interval(Integral, None, -1, closed="right"),
            None,
        ],
        """torch's intra-op threads during ``fit``, ``predict`` and the other
        methods; the caller's setting is restored afterwards. ``None`` means
        1, as ``n_jobs=None`` does in scikit-learn: on a machine that other
        processes keep busy, threads beyond the idle cores spin waiting for
        each other, and under a parallel search (loky, Dask, Ray) each fit
        then keeps to one core. A positive int asks for that many; a
        negative one counts from the CPUs the process was given
        (``OMP_NUM_THREADS`` if set, else its CPU affinity): -1 is all of
        them. See the user guide's "Scaling out" page.""",
        identifies_fit=False,
    ),
    "max_batch_tokens": Param(
        "int",
        MAX_BATCH_TOKENS,
        [Interval(Integral, 1, None, closed="left")],
        """Budget of padded tokens (documents x longest length) of every batch,
        in training and inference; a longer document is a batch of its own.
        Memory grows linearly with it (the reliability page gives each
        model's bytes per token): raise it on a GPU with memory to spare.""",
    ),
    "verbose": Param(
        "int",
        0,
        ["verbose"],
        """Above 0, print a progress bar and a per-epoch table of training
        loss/accuracy and validation loss/accuracy.""",
        identifies_fit=False,
    ),
    "random_state": Param(
        "int, RandomState instance or None",
        None,
        ["random_state"],
        """Seeds initialisation, shuffling, dropout and the validation split. With
        an int, fits on the same data give the same model, whatever the order
        of the documents.""",
    ),
}

#: scikit-learn's constraints of :data:`TRAINING_PARAMETERS`.
TRAINING_CONSTRAINTS = {name: param.constraints for name, param in TRAINING_PARAMETERS.items()}


def _silent(*args, **kwargs):
    """A sink for skorch messages when ``verbose=0``."""


def check_device(device):
    """``device`` as a ``torch.device`` that exists here, or a ValueError."""
    try:
        resolved = torch.device(device)
    except (RuntimeError, TypeError):
        raise ValueError(
            f"device must be 'cpu', 'cuda', 'cuda:N', 'mps' or a torch.device, got {device!r}."
        ) from None
    available = {
        "cpu": True,
        "cuda": torch.cuda.is_available(),
        "mps": torch.backends.mps.is_available(),
    }
    if resolved.type not in available:
        raise ValueError(
            f"device must be 'cpu', 'cuda', 'cuda:N', 'mps' or a torch.device, got {device!r}."
        )
    if not available[resolved.type]:
        check = (
            "torch.cuda.is_available()"
            if resolved.type == "cuda"
            else ("torch.backends.mps.is_available()")
        )
        raise ValueError(
            f"device={device!r} was requested but {resolved.type.upper()} is not available "
            f"on this machine ({check} is False); use device='cpu'."
        )
    return resolved


def check_precision(precision, device):
    """Refuse a precision that ``device`` cannot run, before any work."""
    if precision == "16-mixed" and device.type != "cuda":
        raise ValueError(
            f"precision='16-mixed' needs a CUDA device (float16 autocast with gradient "
            f"scaling), got device={str(device)!r}; on the CPU use precision='bf16' or '32'."
        )
    if precision == "bf16" and device.type == "cuda" and not torch.cuda.is_bf16_supported():
        raise ValueError(
            f"precision='bf16' was requested but the GPU of device={str(device)!r} does not "
            "support bfloat16; use precision='16-mixed' or '32'."
        )


def loading_device(estimator):
    """The device a loaded estimator runs on: its own, or the CPU (with a warning) when absent."""
    try:
        return check_device(estimator.device)
    except ValueError:
        warnings.warn(
            f"{type(estimator).__name__} was saved with device={estimator.device!r}, which is "
            "not available here; it is loaded on the CPU.",
            UserWarning,
            stacklevel=3,
        )
        return torch.device("cpu")


def run_precision(precision, device):
    """The precision a net runs in: "16-mixed" where CUDA is missing (a loaded model) is "32"."""
    return "32" if precision == "16-mixed" and device.type != "cuda" else precision


class NetMixin:
    """What every skorch net of the package adds to skorch's: precision, devices, stopping.

    ``precision`` (a key of :data:`PRECISIONS`) runs the forward pass under
    :func:`torch.autocast` with that dtype, and ``"16-mixed"`` (CUDA only)
    scales the loss with a :class:`torch.amp.GradScaler` so that small
    float16 gradients do not underflow. Dict batches are moved to the
    device; on CUDA, batches come from pinned memory and are copied without
    blocking. After every training batch the net asks its
    :class:`EpochCut` callbacks whether the epoch ends there (the time
    budget); the epoch is then validated and recorded as usual. A user's
    interruption (``KeyboardInterrupt``) is told apart from the ones that
    early stopping and the time budget raise to stop training:
    ``interrupted_`` says which it was.
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
            x = {k: to_device(v, self.device) for k, v in x.items()}
        with self.autocast():
            return super().infer(x, **fit_params)

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
        # on_train_end), and its EarlyStopping stops training by raising one,
        # as the time budget does. Remember a user's interruption so the
        # estimator can say so.
        self.interrupted_ = False
        try:
            return super().fit_loop(X, y, **fit_params)
        except KeyboardInterrupt:
            self.interrupted_ = not any(_stopped_training(cb) for _, cb in self.callbacks_)
            raise

    def run_single_epoch(self, iterator, training, prefix, step_fn, **fit_params):
        if training and iterator is not None:
            iterator = self._until_cut(iterator)
        return super().run_single_epoch(iterator, training, prefix, step_fn, **fit_params)

    def _until_cut(self, batches):
        """The epoch's training batches, up to the one after which a callback ends the epoch."""
        cuts = [cb for _, cb in self.callbacks_ if isinstance(cb, EpochCut)]
        for batch in batches:
            yield batch
            if any(cb.ends_epoch(self) for cb in cuts):
                return


class PenalisedNet(NetMixin, NeuralNetClassifier):
    """skorch classifier whose module returns ``(logits, penalty)``.

    A batch is ``(X, y)`` with ``X`` a
    :class:`~sklearn_lama.training._batching.WeightedBatch`: the module is
    called on ``X.inputs``, and the loss of the batch is the mean over its
    documents of each document's cross-entropy times its weight in
    ``X.weights`` (``sample_weight`` and ``class_weight``), plus the penalty
    (e.g. LAMA's disagreement term, Eq. 18); prediction uses the logits
    only. Besides skorch's scores, each epoch records
    ``train_acc``, the accuracy on the training batches. See
    :class:`NetMixin` for ``precision``.
    """

    def get_default_callbacks(self):
        # From the predictions made while training (skorch caches them): no extra pass.
        train_acc = EpochScoring(
            "accuracy", name="train_acc", on_train=True, lower_is_better=False
        )
        return [*super().get_default_callbacks(), ("train_acc", train_acc)]

    def infer(self, x, **fit_params):
        logits, penalty = super().infer(x.inputs, **fit_params)
        # The loss, scores and probabilities are computed in float32.
        return logits.float(), penalty.float()

    def get_loss(self, y_pred, y_true, X=None, training=False):
        logits, penalty = y_pred
        losses = self.criterion_(logits, y_true.to(logits.device))
        return (losses * X.weights.to(losses)).mean() + penalty


class EpochCut(Callback):
    """A callback that may end a training epoch before its last batch.

    The nets of the package (:class:`NetMixin`) call :meth:`ends_epoch`
    after every training batch and skip the epoch's remaining training
    batches when it returns True; validation and the epoch's end run as
    usual.
    """

    def ends_epoch(self, net):
        """Whether the current epoch's training ends after the batch just done."""
        return False


class TimeBudget(EpochCut):
    """The training time of a fit, recorded per epoch as ``seconds``, and a budget on it.

    The time counts each epoch from its beginning to the end of its last
    batch, training and validation, plus ``spent`` (work done for the fit
    before training, e.g. starting vectors); the work of the epoch's end
    (scores, checkpoints, a callback that measures something) does not
    count. When a training batch ends past ``max_time``, the epoch's other
    training batches are skipped, the epoch is validated and recorded as
    usual, and training stops as early stopping stops it (the best epoch's
    weights are kept when there is validation). At least one batch is
    trained.

    Parameters
    ----------
    max_time : float or None, default=None
        Budget in seconds; ``None`` records the time without a budget.
    spent : float, default=0.0
        Seconds spent on the fit before training started.
    """

    def __init__(self, max_time=None, spent=0.0):
        self.max_time = max_time
        self.spent = spent

    def initialize(self):
        self.seconds_ = self.spent
        self.exhausted_ = False
        self.epoch_start_ = None
        self.before_epoch_ = self.spent
        return self

    def on_train_begin(self, net, **kwargs):
        self.initialize()

    def on_epoch_begin(self, net, **kwargs):
        self.epoch_start_ = time.perf_counter()
        self.before_epoch_ = self.seconds_

    def on_batch_end(self, net, training=False, **kwargs):
        self.seconds_ = self.before_epoch_ + time.perf_counter() - self.epoch_start_
        net.history.record("seconds", self.seconds_)
        if training and self.max_time is not None and self.seconds_ > self.max_time:
            self.exhausted_ = True

    def ends_epoch(self, net):
        return self.exhausted_

    def on_epoch_end(self, net, **kwargs):
        if self.exhausted_:
            raise KeyboardInterrupt


def _stopped_training(callback):
    """Whether ``callback`` ended training (early stopping, the time budget), not the user."""
    if isinstance(callback, EarlyStopping):
        return callback.misses_ >= callback.patience
    return isinstance(callback, TimeBudget) and callback.exhausted_


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


class RowSplit:
    """skorch ``train_split`` holding out given rows of the training data.

    It keeps row numbers only (never the data), so a pickled net stays its
    size.

    Parameters
    ----------
    train_rows, valid_rows : ndarray of int
        Rows of the training data on each side; batches follow their order.
    """

    def __init__(self, train_rows, valid_rows):
        self.train_rows = train_rows
        self.valid_rows = valid_rows

    def __call__(self, dataset, y=None, groups=None):
        return Subset(dataset, self.train_rows), Subset(dataset, self.valid_rows)


class HoldOut(RowSplit):
    """A stratified hold-out split of the training rows, drawn once.

    The rows are those skorch's ``ValidSplit(fraction, stratified=True,
    random_state=seed)`` would hold out; drawing them up front lets the
    training-set statistics (the Naive Bayes features) leave them out.
    """

    def __init__(self, y, validation_fraction, seed):
        splitter = StratifiedShuffleSplit(test_size=validation_fraction, random_state=seed)
        super().__init__(*next(splitter.split(np.zeros(len(y)), y)))


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


def fit_key(estimator, *arrays):
    """12 hex digits identifying one fit: the estimator's parameters and its training data.

    ``arrays`` are the training data (``None`` entries are skipped). The same
    parameters on the same data give the same key, so a checkpoint file of a
    killed fit is found again under its name; every fit of a search (another
    candidate or another split) gets its own. Parameters declared not to
    identify a fit (where it runs, is written or reported) are left out.
    """
    ignored = {name for name, param in TRAINING_PARAMETERS.items() if not param.identifies_fit}
    params = {k: v for k, v in estimator.get_params(deep=False).items() if k not in ignored}
    digest = hashlib.sha256(f"{type(estimator).__name__}{sorted(params.items())!r}".encode())
    for array in arrays:
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


def build_callbacks(estimator, split, checkpoint, extra, averaging=0.0):
    """The net's callbacks: the user's, progress, averaging, checkpoint, early stopping, ``extra``.

    ``estimator`` has the parameters ``callbacks``, ``verbose`` and
    ``patience``; ``split`` is the net's ``train_split`` (``None``: no
    validation, hence no early stopping); ``extra`` are the estimator's own
    callbacks (e.g. a learning-rate schedule), last. ``averaging`` is the
    per-step decay of the weight average (:class:`WeightAveraging`); 0
    leaves it out.
    """
    callbacks = list(estimator.callbacks or [])
    if estimator.verbose:
        callbacks.append(ProgressBar())
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
    callbacks.extend(extra)
    return callbacks


def net_params(estimator, split, callbacks, device, budget):
    """skorch arguments that every net of the package takes from its estimator.

    Validation split, callbacks, device, ``precision`` (see
    :func:`run_precision`), progress (``verbose``) and data loading: length
    buckets in training, batches within ``budget`` (a
    :class:`~sklearn_lama.training._batching.BatchBudget`), from pinned
    memory on CUDA.
    """
    pinned = device.type == "cuda"
    return {
        "train_split": split,
        "callbacks": callbacks,
        "device": str(device),
        "iterator_train": make_loader,
        "iterator_train__shuffle": True,
        "iterator_train__budget": budget,
        "iterator_train__pin_memory": pinned,
        "iterator_valid": make_loader,
        "iterator_valid__budget": budget,
        "iterator_valid__pin_memory": pinned,
        "precision": run_precision(estimator.precision, device),
        "verbose": int(estimator.verbose),
    }


def make_net(estimator, network, split, callbacks, device, budget):
    """The skorch net that trains ``network`` with the estimator's settings, within ``budget``."""
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
        iterator_valid__batch_size=max(estimator.batch_size, estimator.inference_batch_size),
        **net_params(estimator, split, callbacks, device, budget),
        **optimizer_params,
    )


def _optimizer_name(optimizer):
    return next(k for k, v in OPTIMIZERS.items() if type(optimizer) is v)


def training_state(net):
    """What continued training needs from a fitted net (references, not copies)."""
    return {
        "network": net.module_.state_dict(),
        "optimizer": _optimizer_name(net.optimizer_),
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
    if state["optimizer"] == _optimizer_name(net.optimizer_):
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
