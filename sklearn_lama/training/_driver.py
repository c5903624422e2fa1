"""The training driver: the one training loop of every estimator, called with explicit arguments.

An estimator's ``fit`` enters :func:`fitting` (the configuration checked
before any work, the estimator's torch threads, the fit's seed), prepares
its data and the hold-out split itself, and calls :func:`train` once with
everything the training needs: the data, the split, a factory of the
module and one of the net, its own callbacks, the training state to
continue from and a function that writes the model in training (the
checkpoints). :func:`train` returns a :class:`TrainingResult`, from which
the estimator sets its fitted attributes. The driver never sees the
estimator.
"""

import contextlib
import dataclasses

import torch
from skorch.callbacks import EarlyStopping

from ..utils._random import derive_seed
from ..utils._threads import resolve_threads, torch_threads
from ._callbacks import build_callbacks, checkpoint_template, group_decay
from ._devices import check_device, check_precision, loading_device
from ._distributed import check_workers, joined_workers, run_workers
from ._net import restore_training_state, training_state

__all__ = ["TrainingResult", "continues", "fitting", "restore_net", "train"]


@contextlib.contextmanager
def fitting(config):
    """The context of one fit; yields its seed.

    Refuses a device, precision or checkpoint path of ``config`` (a
    :class:`~._config.TrainingConfig`) that cannot work, before any work;
    runs the fit with ``config.torch_threads``; draws the fit's seed from
    ``config.random_state``.
    """
    check_precision(config.precision, check_device(config.device))
    if config.checkpoint is not None:
        checkpoint_template(config.checkpoint, "")
    with torch_threads(resolve_threads(config.torch_threads)):
        yield derive_seed(config.random_state)


def continues(config, fitted, partial=False):
    """Whether a fit continues training the fitted net instead of starting over.

    It does when the estimator is ``fitted`` and it is a ``partial_fit``
    (``partial``) or ``config.warm_start`` is set.
    """
    return fitted and (partial or config.warm_start)


@dataclasses.dataclass(frozen=True)
class TrainingResult:
    """What :func:`train` returns.

    Attributes
    ----------
    net : skorch.NeuralNet
        The trained net.
    interrupted : bool
        Whether the user interrupted training (``KeyboardInterrupt``); the
        net then holds the weights early stopping kept, or those reached.
    n_epochs : int
        Epochs in the net's history, over every fit it continued.
    best_epoch : int
        The epoch whose weights the net holds: early stopping's best, or
        the last.
    """

    net: object
    interrupted: bool
    n_epochs: int
    best_epoch: int


def train(
    X,
    y,
    *,
    config,
    seed,
    build_module,
    make_net,
    split=None,
    previous=None,
    callbacks=(),
    averaging=0.0,
    checkpoint=None,
    save=None,
    epochs=None,
):
    """Build a net and train it on ``X`` and ``y``.

    Seeds torch (``seed`` plus the epochs already trained, under a forked
    random state), builds the module and the net, restores ``previous``
    and trains the net for ``epochs`` epochs: in this process, or, with
    ``config.n_workers`` above 1, in that many processes forked from it
    (:func:`~._distributed.run_workers`), or over the processes of the
    :mod:`torch.distributed` group this one belongs to
    (:func:`~._distributed.joined_workers`), each training the same net on
    its share of every batch (:class:`~._distributed.Workers`). Over several
    workers, the net returned holds rank 0's training state (weights,
    optimizer state, history), in every process.

    Parameters
    ----------
    X, y : object
        What the net's ``partial_fit`` receives (``y`` may be ``None`` when
        ``X`` holds the targets).
    config : TrainingConfig
        The estimator's training parameters.
    seed : int
        The fit's seed (from :func:`fitting`).
    build_module : callable
        ``build_module() -> (module, spent)``: the torch module to train and
        the seconds spent starting it, which count towards ``max_time``;
        called with torch's random state seeded.
    make_net : callable
        ``make_net(module, config, split, callbacks, device)``: the
        uninitialised skorch net, a factory of :mod:`._net` or
        :mod:`._seq2seq`.
    split : RowSplit or None, default=None
        skorch's ``train_split`` (from :func:`~._splits.hold_out`); ``None``
        validates nothing and so does not stop early.
    previous : dict or None, default=None
        The training state to continue from (:func:`~._net.training_state`
        of the fitted net), or ``None`` to start over.
    callbacks : list, default=()
        The model's own callbacks (e.g. a learning-rate schedule), after
        early stopping.
    averaging : float, default=0.0
        The per-step decay of a weight average
        (:class:`~._callbacks.WeightAveraging`) over one worker's steps (of
        one batch each); over ``k`` workers, whose steps each train ``k``
        batches, the decay spans the same share of an epoch
        (:func:`~._callbacks.group_decay`); 0 averages nothing.
    checkpoint : str or None, default=None
        The checkpoint file template (:func:`~._callbacks.checkpoint_file`);
        ``None`` writes no checkpoint.
    save : callable or None, default=None
        ``save(net, path)`` writes the model that ``net`` trains to
        ``path`` (the checkpoints).
    epochs : int or None, default=None
        Epochs to train; ``None`` trains ``config.max_epochs``.

    Returns
    -------
    result : TrainingResult
    """
    joined = joined_workers()
    if joined is not None and config.n_workers != 1:
        raise ValueError(
            f"n_workers={config.n_workers} starts workers on this machine, but this process "
            f"is one of {joined.size} of a torch.distributed group, over which fit trains; "
            "set n_workers=1."
        )
    n_workers = joined.size if joined is not None else resolve_threads(config.n_workers)
    device = check_device(config.device)
    check_workers(n_workers, config.precision, len(X), device, forked=joined is None)
    averaging = group_decay(averaging, n_workers)
    cuda_devices = [device] if device.type == "cuda" else []
    with torch.random.fork_rng(devices=cuda_devices):
        # Continued training draws new batches and dropout masks: the seed
        # moves on with the number of epochs already trained.
        done = 0 if previous is None else len(previous["history"])
        torch.manual_seed(seed + done)
        module, spent = build_module()

        def fit(workers=None):
            """Train a net of ``module`` here, as one of ``workers`` (``None``: alone)."""
            lead = workers is None or workers.rank == 0
            net = make_net(
                module,
                config,
                split,
                build_callbacks(
                    config,
                    split,
                    checkpoint if lead else None,
                    save,
                    list(callbacks),
                    averaging,
                    spent,
                    progress=lead,
                ),
                device,
            )
            if workers is not None:
                net.set_params(workers=workers, iterator_train__workers=workers)
                if not lead:
                    net.set_params(verbose=0)
            net.initialize()
            if previous is not None:
                restore_training_state(net, previous, config.owner)
            net.partial_fit(X, y, epochs=epochs or config.max_epochs)
            return net

        if joined is None and n_workers == 1:
            net = fit()
            return _result(net, net.interrupted_, _kept_epoch(net))

        def work(workers):
            trained = fit(workers)
            return _outcome(trained) if workers.rank == 0 else None

        # Every process ends with rank 0's model, in a net of its own. Built before the
        # workers start, it imports what an optimizer needs (seconds) once, for them all.
        net = make_net(module, config, None, [], device)
        net.initialize()
        if joined is not None:
            outcome = joined.shared(work(joined))
        else:
            threads = max(torch.get_num_threads() // n_workers, 1)
            outcome = run_workers(n_workers, work, threads)[0]
        restore_training_state(net, outcome["state"], config.owner)
        return _result(net, outcome["interrupted"], outcome["best_epoch"])


def _outcome(net):
    """What a worker's trained ``net`` hands back: its state and how training ended."""
    return {
        "state": training_state(net),
        "interrupted": net.interrupted_,
        "best_epoch": _kept_epoch(net),
    }


def _result(net, interrupted, best_epoch):
    return TrainingResult(
        net=net, interrupted=interrupted, n_epochs=len(net.history), best_epoch=best_epoch
    )


def _kept_epoch(net):
    """The epoch whose weights ``net`` holds after training: early stopping's best, or the last."""
    for _, callback in net.callbacks_:
        if isinstance(callback, EarlyStopping) and callback.best_epoch_:
            return int(callback.best_epoch_)
    return int(net.history[-1, "epoch"])


def restore_net(build_module, make_net, config, state):
    """The net of a loaded model, holding the saved training ``state``, ready to predict.

    ``build_module()`` builds the module of the model's current parameters
    and ``make_net`` is the net factory the model trains with (see
    :func:`train`). The net runs on the estimator's device, or on the CPU
    (with a warning) where that is missing. Building draws initial weights,
    which the state replaces: torch's random state is forked, so loading
    leaves the caller's random numbers as they were.
    """
    device = loading_device(config.device, config.owner)
    with torch.random.fork_rng(devices=[]):
        net = make_net(build_module(), config, None, [], device)
        net.initialize()
    restore_training_state(net, state, config.owner)
    return net
