"""The training driver: the one skeleton of every ``fit``, and the interface models plug into.

:func:`train` runs the steps every estimator's ``fit`` shares, in order:
check the device, precision and checkpoint path; derive the seed; let the
model prepare its data (:meth:`Recipe.prepare`); name the checkpoint file;
seed and fork torch's random state; build the module (:meth:`Recipe.build_module`)
and the net (:meth:`Recipe.make_net`); restore the previous training state
when continuing; train; tell an interruption; the after-fit steps
(:meth:`Recipe.finish`). A model supplies only what differs, as a
:class:`Recipe`; the driver never sees the estimator, only the recipe and
the :class:`~._config.TrainingConfig`.
"""

import dataclasses
import warnings

import torch

from ..utils._random import derive_seed
from ..utils._threads import resolve_threads, torch_threads
from ._callbacks import build_callbacks, checkpoint_template, fit_key
from ._devices import check_device, check_precision, loading_device
from ._net import restore_training_state

__all__ = ["Recipe", "TrainingData", "restore_net", "train"]


@dataclasses.dataclass(frozen=True)
class TrainingData:
    """A model's prepared training data, as :meth:`Recipe.prepare` returns it.

    Attributes
    ----------
    X, y : object
        What the net's ``partial_fit`` receives (``y`` may be ``None`` when
        ``X`` holds the targets).
    split : callable or None
        skorch's ``train_split``: the rows held out for validation, or
        ``None`` for none.
    key : tuple of ndarray or None
        Arrays identifying the training data, for the checkpoint file name.
    previous : dict or None
        The training state to continue from (``training_state`` of the
        fitted net), or ``None`` to start over.
    averaging : float, default=0.0
        The per-step decay of a weight average
        (:class:`~._callbacks.WeightAveraging`); 0 averages nothing.
    """

    X: object
    y: object
    split: object
    key: tuple
    previous: object
    averaging: float = 0.0


class Recipe:
    """What one model supplies to :func:`train`: its data, module and net.

    A recipe belongs to one ``fit`` call of one estimator; its methods are
    called in the order they are listed here. A subclass implements those
    that raise ``NotImplementedError``; the others do nothing by default.
    """

    def prepare(self, seed):
        """Read and check the training data and hold out the validation rows.

        Parameters
        ----------
        seed : int
            The fit's seed (for the hold-out split and anything else drawn
            before training).

        Returns
        -------
        data : TrainingData
        """
        raise NotImplementedError

    def build_module(self, data, seed):
        """The torch module to train, and the seconds spent starting it.

        Called with torch's random state seeded. ``spent`` counts towards
        ``max_time`` (e.g. starting vectors trained here).

        Returns
        -------
        module : torch.nn.Module
        spent : float
        """
        raise NotImplementedError

    def callbacks(self, data):
        """The model's own callbacks (e.g. a learning-rate schedule), after early stopping."""
        return []

    def make_net(self, module, config, split, callbacks, device):
        """The uninitialised skorch net that trains ``module``: a factory of :mod:`._net`."""
        raise NotImplementedError

    def save(self, path):
        """Write the model in training to ``path`` (the checkpoints)."""
        raise NotImplementedError

    def started(self, net, checkpoint_path):
        """The net is built and about to train; ``checkpoint_path`` is its file or ``None``."""

    def finish(self, net, data):
        """The after-fit steps (e.g. calibration), once training ended."""

    def interruption(self, net, data):
        """The warning text when the user interrupted training."""
        raise NotImplementedError


def train(recipe, config, epochs=None):
    """Run one fit: the shared skeleton, with ``recipe``'s steps.

    Parameters
    ----------
    recipe : Recipe
        The model's data, module and net.
    config : TrainingConfig
        The estimator's training parameters.
    epochs : int or None, default=None
        Epochs to train; ``None`` trains ``config.max_epochs``.

    Returns
    -------
    net : skorch.NeuralNet
        The trained net; ``net.interrupted_`` says whether the user
        interrupted it (a warning was then issued).
    """
    device = check_device(config.device)
    check_precision(config.precision, device)
    if config.checkpoint is not None:
        # Refuses an unwritable path before any work.
        checkpoint_template(config.checkpoint, "")
    with torch_threads(resolve_threads(config.torch_threads)):
        seed = derive_seed(config.random_state)
        data = recipe.prepare(seed)
        checkpoint_path = None
        if config.checkpoint is not None:
            checkpoint_path = checkpoint_template(config.checkpoint, fit_key(config, *data.key))
        cuda_devices = [device] if device.type == "cuda" else []
        with torch.random.fork_rng(devices=cuda_devices):
            # Continued training draws new batches and dropout masks: the seed
            # moves on with the number of epochs already trained.
            done = 0 if data.previous is None else len(data.previous["history"])
            torch.manual_seed(seed + done)
            module, spent = recipe.build_module(data, seed)
            callbacks = build_callbacks(
                config,
                data.split,
                checkpoint_path,
                recipe.save,
                recipe.callbacks(data),
                data.averaging,
                spent,
            )
            net = recipe.make_net(module, config, data.split, callbacks, device)
            net.initialize()
            if data.previous is not None:
                restore_training_state(net, data.previous, config.owner)
            recipe.started(net, checkpoint_path)
            net.partial_fit(data.X, data.y, epochs=epochs or config.max_epochs)
        recipe.finish(net, data)
    if net.interrupted_:
        # The caller of the estimator's fit: train <- the estimator's method <- user.
        warnings.warn(recipe.interruption(net, data), UserWarning, stacklevel=4)
    return net


def restore_net(build_module, make_net, config, state):
    """The net of a loaded model, holding the saved training ``state``, ready to predict.

    ``build_module()`` builds the module of the model's current parameters
    and ``make_net`` is the model's :meth:`Recipe.make_net`. The net runs on
    the estimator's device, or on the CPU (with a warning) where that is
    missing. Building draws initial weights, which the state replaces: torch's
    random state is forked, so loading leaves the caller's random numbers as
    they were.
    """
    device = loading_device(config.device, config.owner)
    with torch.random.fork_rng(devices=[]):
        net = make_net(build_module(), config, None, [], device)
        net.initialize()
    restore_training_state(net, state, config.owner)
    return net
