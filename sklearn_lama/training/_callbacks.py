"""The callbacks of the training stack: time budget, weight averaging, checkpoints."""

import hashlib
import os
import sys
import time
from copy import deepcopy

import numpy as np
import torch
from skorch.callbacks import Callback, Checkpoint, EarlyStopping
from torch.optim.swa_utils import get_ema_multi_avg_fn
from tqdm import tqdm

from ..utils._persistence import check_writable

__all__ = [
    "EpochCut",
    "GROUP_SAMPLES",
    "HoldOutStopping",
    "SCORES",
    "SampleProgressBar",
    "TimeBudget",
    "WeightAveraging",
    "WeightsCheckpoint",
    "averaging_decay",
    "build_callbacks",
    "checkpoint_file",
    "checkpoint_template",
    "fit_key",
    "group_decay",
]


def _silent(*args, **kwargs):
    """A sink for skorch messages when ``verbose=0``."""


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

    def may_end_epochs(self):
        """Whether :meth:`ends_epoch` can be True in this fit; the workers agree on it if so."""
        return True


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

    def may_end_epochs(self):
        return self.max_time is not None

    def on_epoch_end(self, net, **kwargs):
        if net.workers is not None and self.may_end_epochs():
            # Every worker stops when one's budget is spent.
            self.exhausted_ = net.workers.any(self.exhausted_)
        if self.exhausted_:
            raise KeyboardInterrupt


#: The key of a training batch's history holding the step's samples over every worker
#: (recorded by a net that trains over several, whose batches are its shares).
GROUP_SAMPLES = "group_samples"


class SampleProgressBar(Callback):
    """A progress bar over each epoch that counts its samples rather than its batches.

    A batch holds as many documents as the token budget allows
    (:class:`~._batching.BatchBudget`), so an epoch's number of batches is
    known only once its shuffled batches are drawn. The samples (documents,
    or sentence pairs) of the training and validation sets are known when the
    epoch begins: the bar's total is their sum, and each batch advances it by
    the samples it holds (the length of its targets), a training step over
    several workers by the samples of every worker's share
    (:data:`GROUP_SAMPLES`). Its postfix shows the
    last batch's ``train_loss`` or ``valid_loss``, and it is erased when the
    epoch ends. In a Jupyter notebook it is tqdm's notebook bar, or tqdm's
    text bar where ipywidgets, which the notebook bar draws with, is missing.
    """

    #: The keys of a batch's history shown in the postfix, when the batch has them.
    POSTFIX_KEYS = ("train_loss", "valid_loss")

    def in_notebook(self):
        """Whether the fit runs in a Jupyter notebook: in IPython's kernel shell."""
        # A notebook's kernel has imported IPython; elsewhere it is not imported here.
        ipython = sys.modules.get("IPython")
        shell = ipython.get_ipython() if ipython is not None else None
        return type(shell).__name__ == "ZMQInteractiveShell"

    def on_epoch_begin(self, net, dataset_train=None, dataset_valid=None, **kwargs):
        total = sum(len(data) for data in (dataset_train, dataset_valid) if data is not None)
        bar = tqdm
        if self.in_notebook():
            # Imported here, as it imports IPython; without ipywidgets it cannot draw
            # (it raises), and the text bar stands in.
            from tqdm import notebook

            if notebook.IProgress is not None:
                bar = notebook.tqdm
        self.pbar_ = bar(total=total, leave=False, unit="sample")

    def on_batch_end(self, net, batch=None, **kwargs):
        last = net.history[-1, "batches", -1]
        postfix = {key: last[key] for key in self.POSTFIX_KEYS if key in last}
        self.pbar_.set_postfix(postfix, refresh=False)
        self.pbar_.update(last.get(GROUP_SAMPLES, len(batch[1])))

    def on_epoch_end(self, net, **kwargs):
        self.pbar_.close()

    def __getstate__(self):
        # A bar is drawn anew each epoch: a pickled net (one interrupted in an epoch
        # too) does not carry it, nor its output stream.
        state = self.__dict__.copy()
        state.pop("pbar_", None)
        return state


#: The hold-out score each ``scoring`` of early stopping monitors, and whether
#: lower is better.
SCORES = {"loss": ("valid_loss", True), "accuracy": ("valid_acc", False)}


class HoldOutStopping(EarlyStopping):
    """Early stopping on a hold-out score with a ``tol``, keeping the best score's weights.

    An epoch improves when its hold-out score (``scoring``: the validation
    loss, or the validation accuracy) is better than the best so far by
    more than ``tol``; training stops after ``patience`` epochs in a row that
    do not. The weights restored at the end are those of the best score
    (the first epoch that reached it), even when it was better by less than
    ``tol`` (skorch's ``threshold`` would restore the last epoch that
    improved by more). Over several workers every net records every
    validation batch (each worker validates its share, the workers exchange
    them), so that all stop at the same epoch with the same weights.

    Parameters
    ----------
    scoring : {"loss", "accuracy"}
        The hold-out score: ``"loss"`` (``valid_loss``, lower is better) or
        ``"accuracy"`` (``valid_acc``, higher is better).
    tol : float
        Least gain of the score that counts as an improvement.
    patience : int
        Epochs in a row without improvement before training stops.
    sink : callable, default=print
        Where the stopping message goes.
    """

    def __init__(self, scoring, tol, patience, sink=print):
        monitor, lower_is_better = SCORES[scoring]
        super().__init__(
            monitor=monitor,
            lower_is_better=lower_is_better,
            patience=patience,
            load_best=True,
            sink=sink,
        )
        self.scoring = scoring
        self.tol = tol

    def get_params(self, deep=True):
        """The parameters of ``__init__``: ``scoring``, ``tol``, ``patience`` and ``sink``.

        skorch's callbacks take their parameters from their attributes, which
        here also hold those fixed for :class:`~skorch.callbacks.EarlyStopping`
        (``monitor``, ``load_best``, ...): ``clone`` and the net's
        ``set_params`` see this class's own.
        """
        return {
            "scoring": self.scoring,
            "tol": self.tol,
            "patience": self.patience,
            "sink": self.sink,
        }

    def on_train_begin(self, net, **kwargs):
        super().on_train_begin(net, **kwargs)
        self.best_ = -np.inf

    def on_epoch_end(self, net, **kwargs):
        score = net.history[-1, self.monitor]
        # Higher is better from here on.
        score = -score if self.lower_is_better else score
        self.misses_ = 0 if score > self.best_ + self.tol else self.misses_ + 1
        if score > self.best_:
            self.best_ = score
            self.best_epoch_ = net.history[-1, "epoch"]
            self.best_model_weights_ = deepcopy(net.module_.state_dict())
        if self.misses_ == self.patience:
            change = "fallen" if self.lower_is_better else "risen"
            self.sink(
                f"Stopping since {self.monitor} has not {change} by more than {self.tol:g} "
                f"in the last {self.patience} epochs."
            )
            raise KeyboardInterrupt


def _stopped_training(callback):
    """Whether ``callback`` ended training (early stopping, the time budget), not the user."""
    if isinstance(callback, EarlyStopping):
        return callback.misses_ >= callback.patience
    return isinstance(callback, TimeBudget) and callback.exhausted_


def fit_key(config, *arrays):
    """12 hex digits identifying one fit: the estimator's parameters and its training data.

    ``config`` is the fit's :class:`~._config.TrainingConfig`, whose
    ``identity`` names the estimator's class and the parameters that
    identify a fit (not those that only say where it runs, is written or
    reported); ``arrays`` are the training data (``None`` entries are
    skipped). The same parameters on the same data give the same key, so a
    checkpoint file of a killed fit is found again under its name; every
    fit of a search (another candidate or another split) gets its own.
    """
    digest = hashlib.sha256(config.identity.encode())
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
        self.parameters_ = None
        self.update_ = None
        return self

    def _trainable(self, net):
        return [p for p in net.module_.parameters() if p.requires_grad]

    def on_train_begin(self, net, **kwargs):
        self.parameters_ = [p.detach() for p in self._trainable(net)]
        self.average_ = [p.clone() for p in self.parameters_]
        # torch's fused update of all the averages: the same lerp as a loop of them.
        self.update_ = get_ema_multi_avg_fn(self.decay)
        self.trained_ = None

    def on_epoch_begin(self, net, **kwargs):
        if self.trained_ is not None:
            with torch.no_grad():
                for p, trained in zip(self._trainable(net), self.trained_):
                    p.copy_(trained)
            self.trained_ = None

    def on_batch_begin(self, net, training=False, **kwargs):
        if not training:
            self._swap_in(net)

    def on_batch_end(self, net, training=False, **kwargs):
        if training:
            self.update_(self.average_, self.parameters_, None)

    def on_epoch_end(self, net, **kwargs):
        # Without validation batches the epoch's end is the first place to swap.
        self._swap_in(net)

    def on_train_end(self, net, **kwargs):
        if self.average_ is not None:
            self._swap_in(net)
        # The copies are not part of the model: a pickled estimator stays its size.
        self.average_ = self.trained_ = self.parameters_ = self.update_ = None

    def _swap_in(self, net):
        """Put the average into the network, keeping the trained weights aside."""
        if self.trained_ is not None:
            return
        parameters = self._trainable(net)
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


def group_decay(decay, n_workers):
    """The per-step decay over ``n_workers`` workers of an average of per-step ``decay`` alone.

    One step of ``k`` workers trains ``k`` batches, so an epoch takes ``k``
    times fewer steps: ``1 - k (1 - decay)`` keeps the average over the same
    share of an epoch (:func:`averaging_decay`); 0 (no averaging) when that
    spans less than one step, or when ``decay`` is 0.
    """
    return max(0.0, 1.0 - n_workers * (1.0 - decay)) if decay else 0.0


class WeightsCheckpoint(Checkpoint):
    """skorch's :class:`~skorch.callbacks.Checkpoint`, writing weights-only files.

    skorch decides when to write (``monitor``: the epochs that lower the
    validation loss, or every epoch without validation) and formats the file
    name (``{last_epoch[epoch]}`` and the other fields of skorch's
    templates); ``{fit}`` is replaced by :func:`fit_key`, which is inserted
    before the suffix when the path does not contain it, so that every fit of
    a search writes its own file. ``save(net, path)`` writes the file: the
    whole estimator in training (``net`` the net it trains), in the format
    of :func:`~sklearn_lama.save_weights`.
    """

    def __init__(self, save, f_weights, monitor="valid_loss_best", sink=_silent):
        super().__init__(
            monitor=monitor,
            f_params=None,
            f_optimizer=None,
            f_criterion=None,
            f_history=None,
            sink=sink,
        )
        self.save = save
        self.f_weights = f_weights

    def save_model(self, net):
        # skorch formats every ``f_*`` template, ``f_weights`` included.
        self.save(net, self.get_formatted_files(net)["f_weights"])


def checkpoint_template(path, key):
    """The checkpoint file template of one fit (see :class:`WeightsCheckpoint`)."""
    path = os.fspath(path)
    check_writable(path, "checkpoint")
    if "{fit}" not in path:
        stem, suffix = os.path.splitext(path)
        path = f"{stem}-{{fit}}{suffix}"
    return path.replace("{fit}", key)


def checkpoint_file(config, *arrays):
    """The checkpoint file template of the fit of ``config`` on ``arrays``, or ``None``.

    ``None`` when ``config.checkpoint`` is ``None``; otherwise the path with
    the fit's key (:func:`fit_key` of ``config`` and the training data
    ``arrays``) in place of ``{fit}``.
    """
    if config.checkpoint is None:
        return None
    return checkpoint_template(config.checkpoint, fit_key(config, *arrays))


def build_callbacks(
    config, split, checkpoint, save, extra, averaging=0.0, spent=0.0, progress=True
):
    """The net's callbacks: the user's, progress, averaging, checkpoint, early stopping, ``extra``.

    ``config`` is the :class:`~._config.TrainingConfig` (``callbacks``,
    ``verbose``, ``scoring``, ``patience``, ``tol`` and ``max_time``: a :class:`TimeBudget`, the
    last callback, to which ``spent`` seconds of work before training
    already count); ``split`` is the net's ``train_split`` (``None``: no
    validation, hence no early stopping); ``checkpoint`` the file of the
    checkpoints (``None``: none), which ``save(net, path)`` writes; ``extra`` are
    the model's own callbacks (e.g. a learning-rate schedule), before the
    budget. ``averaging`` is the per-step decay of the weight average
    (:class:`WeightAveraging`); 0 leaves it out. ``progress=False`` (every
    training worker but the first) reports nothing, whatever ``verbose``.
    """
    verbose = config.verbose and progress
    sink = print if verbose else _silent
    callbacks = list(config.callbacks or [])
    if verbose:
        callbacks.append(SampleProgressBar())
    if averaging:
        # Before the checkpoint and early stopping, which must see the average.
        callbacks.append(WeightAveraging(averaging))
    if checkpoint is not None:
        callbacks.append(
            WeightsCheckpoint(
                save,
                checkpoint,
                monitor=f"{SCORES[config.scoring][0]}_best" if split is not None else None,
                sink=sink,
            )
        )
    if split is not None:
        callbacks.append(
            HoldOutStopping(config.scoring, tol=config.tol, patience=config.patience, sink=sink)
        )
    callbacks.extend(extra)
    callbacks.append(TimeBudget(config.max_time, spent))
    return callbacks
