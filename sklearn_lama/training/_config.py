"""The training configuration: the estimator's training parameters as one frozen value."""

import dataclasses

from ._parameters import TRAINING_PARAMETERS

__all__ = ["TrainingConfig", "training_config"]


@dataclasses.dataclass(frozen=True)
class TrainingConfig:
    """What the training layer reads of an estimator: its training parameters, fixed for one fit.

    The fields are the parameters of
    :data:`~sklearn_lama.training._parameters.TRAINING_PARAMETERS` (one
    meaning in every estimator; see their documentation), plus:

    Attributes
    ----------
    owner : str
        The estimator's class name, for messages.
    identity : str
        The estimator's class name and the parameters that identify a fit,
        for the checkpoint file name (:func:`~._callbacks.fit_key`).
    """

    owner: str
    identity: str
    max_epochs: int
    max_time: object
    lr: float
    early_stopping: bool
    validation_fraction: float
    patience: int
    callbacks: object
    warm_start: bool
    checkpoint: object
    device: object
    precision: str
    torch_threads: object
    max_batch_tokens: int
    verbose: int
    random_state: object


def training_config(owner, params, declarations):
    """The :class:`TrainingConfig` of one fit.

    Parameters
    ----------
    owner : str
        The estimator's class name.
    params : dict
        Its ``get_params(deep=False)``.
    declarations : dict of str to Param
        Its parameter declarations: those with ``identifies_fit=False`` are
        left out of the fit's identity.

    Returns
    -------
    config : TrainingConfig
    """
    identifying = {
        name: value for name, value in params.items() if declarations[name].identifies_fit
    }
    return TrainingConfig(
        owner=owner,
        identity=f"{owner}{sorted(identifying.items())!r}",
        **{name: params[name] for name in TRAINING_PARAMETERS},
    )
