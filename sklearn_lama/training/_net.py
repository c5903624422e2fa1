"""The skorch nets and their resumable state."""

import copy

import numpy as np
import torch
from skorch import NeuralNetClassifier
from skorch.callbacks import EpochScoring
from skorch.history import History
from skorch.utils import TeeGenerator

from ._batching import make_loader
from ._callbacks import GROUP_SAMPLES, EpochCut, _stopped_training
from ._devices import run_precision, to_device
from ._parameters import OPTIMIZERS, PRECISIONS

# Devices whose optimizer step runs as one fused kernel per parameter: the same
# update, up to float rounding, without a loop of small ops over every parameter
# (the embedding table above all) at every step.
_FUSED_DEVICES = ("cpu", "cuda")

__all__ = [
    "NetMixin",
    "PenalisedNet",
    "make_classifier_net",
    "net_params",
    "restore_training_state",
    "training_state",
]


def _detached(y_pred):
    """``y_pred`` (a tensor or a tuple of tensors) without its autograd graph."""
    if isinstance(y_pred, tuple):
        return tuple(part.detach() for part in y_pred)
    return y_pred.detach()


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

    With ``workers`` (a :class:`~._distributed.Workers`), the net is one of
    several that train one model on shares of every batch: after each
    backward pass the gradients are replaced by the workers' mean, each
    weighed by the net's ``batch_weight(batch)`` (what its loss is a mean
    over); the workers agree on where an epoch is
    cut, and each validates its share of the validation batches, the
    workers exchanging their losses and predictions (:meth:`validation_record`).
    """

    def __init__(self, *args, precision="32", workers=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.precision = precision
        self.workers = workers

    def initialize(self):
        super().initialize()
        # skorch pickles the tensors of its device-dependent attributes apart and maps them
        # to a device that exists where they are loaded. The ``module`` parameter is the
        # trained network itself (the same object as ``module_``): pickled as a plain object,
        # its CUDA tensors could not be unpickled where CUDA is absent.
        if "module" not in self.cuda_dependent_attributes_:
            self.cuda_dependent_attributes_ = [*self.cuda_dependent_attributes_, "module"]
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

    def train_step_single(self, batch, **fit_params):
        if self.scaler_ is None:
            step = super().train_step_single(batch, **fit_params)
        else:
            # The scaled loss goes backward; gradients are unscaled before the
            # callbacks see them (e.g. GradientNormClipping) and the step.
            self.module_.train()
            self.criterion_.train()
            Xi, yi = batch
            y_pred = self.infer(Xi, **fit_params)
            loss = self.get_loss(y_pred, yi, X=Xi, training=True)
            self.scaler_.scale(loss).backward()
            self.scaler_.unscale_(self.optimizer_)
            step = {"loss": loss, "y_pred": y_pred}
        # The train_acc score keeps every training batch's predictions until the
        # epoch ends: detached, they no longer keep each batch's autograd graph
        # (a node per operation, thousands per recurrence) alive with them.
        return {**step, "y_pred": _detached(step["y_pred"])}

    def train_step(self, batch, **fit_params):
        if self.scaler_ is None:
            return super().train_step(batch, **fit_params)
        # skorch's train_step would call optimizer_.step(); the scaler's step
        # skips it when the gradients hold inf or NaN, then adapts the scale.
        self.optimizer_.zero_grad()
        step = self.train_step_single(batch, **fit_params)
        self.notify(
            "on_grad_computed",
            named_parameters=TeeGenerator(self.get_all_learnable_params()),
            batch=batch,
            training=True,
        )
        self.scaler_.step(self.optimizer_)
        self.scaler_.update()
        return step

    def on_grad_computed(self, net, named_parameters, batch=None, training=False, **kwargs):
        # The net is notified before its callbacks: gradient clipping sees the mean.
        if self.workers is not None and training:
            samples = self.workers.average_gradients(
                self.module_.parameters(), self.batch_weight(batch), len(batch[1])
            )
            self.history.record_batch(GROUP_SAMPLES, samples)

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
        elif iterator is not None and self.workers is not None:
            # Each worker validates its share of the batches, and every worker records
            # all of them: the same losses and scores everywhere, so they stop together.
            iterator = list(iterator)
            step_fn = self._shared_steps(iterator, step_fn, **fit_params)
        super().run_single_epoch(iterator, training, prefix, step_fn, **fit_params)

    def _shared_steps(self, batches, step_fn, **fit_params):
        """A step function returning, batch after batch, the workers' steps of ``batches``.

        Worker ``r`` of ``k`` runs ``step_fn`` on batches ``r``, ``r + k``, ...;
        the workers then exchange what :meth:`validation_record` keeps of them.
        The steps run at the first batch's step, after the callbacks' start of
        that batch, as one worker's steps do (there the weight average is
        swapped in: :class:`~._callbacks.WeightAveraging`).
        """
        rank, size = self.workers.rank, self.workers.size
        steps = {}
        order = iter(range(len(batches)))

        def shared_step(current, **_):
            if not steps:
                mine = {
                    i: self.validation_record(step_fn(batch, **fit_params))
                    for i, batch in enumerate(batches)
                    if i % size == rank
                }
                for part in self.workers.gathered(mine):
                    steps.update(part)
            return steps[next(order)]

        return shared_step

    def validation_record(self, step):
        """What the other workers get of a validation ``step``: loss and predictions, on the CPU.

        The predictions are what the epoch's scores (``valid_acc``) read.
        """
        y_pred = _detached(step["y_pred"])
        y_pred = tuple(p.cpu() for p in y_pred) if isinstance(y_pred, tuple) else y_pred.cpu()
        return {"loss": step["loss"].detach().cpu(), "y_pred": y_pred}

    def _until_cut(self, batches):
        """The epoch's training batches, up to the one after which a callback ends the epoch."""
        cuts = [cb for _, cb in self.callbacks_ if isinstance(cb, EpochCut)]
        cuts = [cb for cb in cuts if cb.may_end_epochs()]
        if not cuts:
            # Nothing can cut the epoch: the workers need not agree after every batch.
            yield from batches
            return
        for batch in batches:
            yield batch
            ends = any(cb.ends_epoch(self) for cb in cuts)
            if self.workers is not None:
                ends = self.workers.any(ends)
            if ends:
                return


def _accuracy(net, X, y):
    """The accuracy of ``net``'s predictions of ``X`` against the encoded targets ``y``.

    As its target encoding counts it (``net.target.accuracy``); from the
    predictions skorch cached while training or validating, with no extra pass.
    """
    logits = torch.cat([out[0] for out in net.forward_iter(X, training=False)])
    return net.target.accuracy(logits.detach().cpu().numpy(), np.asarray(y))


class PenalisedNet(NetMixin, NeuralNetClassifier):
    """skorch classifier whose module returns ``(logits, penalty)``.

    A batch is ``(X, y)`` with ``X`` a
    :class:`~sklearn_lama.training._batching.WeightedBatch`: the module is
    called on ``X.inputs``, and the loss of the batch is the mean over its
    documents of each document's loss times its weight in ``X.weights``
    (``sample_weight`` and ``class_weight``), plus the penalty (e.g. LAMA's
    disagreement term, Eq. 18); prediction uses the logits only.

    ``target`` is the estimator's target encoding: its ``loss()`` is the
    criterion, which gives one loss per document, or per document and label
    (or task), shaped as ``X.weights``; a document's loss is the sum of
    those. Its ``accuracy(logits, y)`` scores each epoch as ``train_acc``
    (on the training batches) and ``valid_acc``. See :class:`NetMixin` for
    ``precision``.
    """

    def __init__(self, *args, target=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.target = target

    def get_default_callbacks(self):
        def scoring(name, on_train):
            return EpochScoring(_accuracy, name=name, on_train=on_train, lower_is_better=False)

        callbacks = [
            (name, scoring(name, False) if name == "valid_acc" else callback)
            for name, callback in super().get_default_callbacks()
        ]
        return [*callbacks, ("train_acc", scoring("train_acc", True))]

    def batch_weight(self, batch):
        """What the loss of ``batch`` is a mean over: its documents."""
        return len(batch[0].weights)

    def infer(self, x, **fit_params):
        logits, penalty = super().infer(x.inputs, **fit_params)
        # The loss, scores and probabilities are computed in float32.
        return logits.float(), penalty.float()

    def get_loss(self, y_pred, y_true, X=None, training=False):
        logits, penalty = y_pred
        losses = self.criterion_(logits, y_true.to(logits.device)) * X.weights.to(logits)
        return losses.reshape(len(losses), -1).sum(dim=1).mean() + penalty


def net_params(config, split, callbacks, device, budget):
    """skorch arguments that every net of the package takes from the training configuration.

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
        "precision": run_precision(config.precision, device),
        "verbose": int(config.verbose),
        "lr": config.lr,
        "max_epochs": config.max_epochs,
    }


def make_classifier_net(
    module,
    config,
    split,
    callbacks,
    device,
    *,
    target,
    budget,
    optimizer,
    momentum,
    weight_decay,
    batch_size,
    inference_batch_size,
):
    """The :class:`PenalisedNet` that trains a classifier's ``module``, within ``budget``.

    ``target`` is the estimator's target encoding (see :class:`PenalisedNet`);
    ``optimizer`` a key of :data:`OPTIMIZERS` (``momentum`` is SGD's).
    """
    optimizer_params = {
        "optimizer__weight_decay": weight_decay,
        "optimizer__fused": torch.device(device).type in _FUSED_DEVICES,
    }
    if optimizer == "sgd":
        optimizer_params["optimizer__momentum"] = momentum
    return PenalisedNet(
        module=module,
        criterion=target.loss(),
        target=target,
        optimizer=OPTIMIZERS[optimizer],
        batch_size=batch_size,
        iterator_valid__batch_size=max(batch_size, inference_batch_size),
        **net_params(config, split, callbacks, device, budget),
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


def restore_training_state(net, state, owner):
    """Load a previous training's weights, optimizer state and history into ``net``.

    ``owner`` is the estimator's class name, for the message of a state that
    does not fit the net.
    """
    try:
        net.module_.load_state_dict(state["network"])
    except RuntimeError as exc:
        raise ValueError(
            f"The trained network does not fit the one {owner}'s "
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
