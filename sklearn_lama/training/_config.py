"""The training configuration: the estimator's training parameters as one frozen value."""

import dataclasses

from ._parameters import TRAINING_CONSTRAINTS

__all__ = ["NOT_IDENTIFYING", "OPTIONAL_FIELDS", "TrainingConfig", "training_config"]

#: The fields of :class:`TrainingConfig` that only some estimators have as
#: parameters; the others take the field's default.
OPTIONAL_FIELDS = ("scoring",)


@dataclasses.dataclass(frozen=True)
class TrainingConfig:
    """What the training layer reads of an estimator: its training parameters, fixed for one fit.

    The fields are the parameters of
    :data:`~sklearn_lama.training._parameters.TRAINING_CONSTRAINTS` (one
    meaning in every estimator; see their documentation), the classifiers'
    ``scoring`` (what early stopping monitors; an estimator without it, the
    translator, stops on the validation loss), plus:

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
    tol: float
    callbacks: object
    warm_start: bool
    checkpoint: object
    device: object
    precision: str
    torch_threads: object
    n_workers: int
    max_batch_tokens: int
    verbose: int
    random_state: object
    scoring: str = "loss"


# The parameters that say where a fit runs, is written or is reported, not what
# it learns: left out of a fit's identity (the checkpoint file name).
NOT_IDENTIFYING = {
    "callbacks",
    "checkpoint",
    "device",
    "n_workers",
    "torch_threads",
    "verbose",
    "warm_start",
}


def training_config(owner, params):
    """The :class:`TrainingConfig` of one fit.

    Parameters
    ----------
    owner : str
        The estimator's class name.
    params : dict
        Its ``get_params(deep=False)``; those of :data:`NOT_IDENTIFYING` are
        left out of the fit's identity.

    Returns
    -------
    config : TrainingConfig
    """
    identifying = {name: value for name, value in params.items() if name not in NOT_IDENTIFYING}
    return TrainingConfig(
        owner=owner,
        identity=f"{owner}{sorted(identifying.items())!r}",
        **{name: params[name] for name in TRAINING_CONSTRAINTS},
        **{name: params[name] for name in OPTIONAL_FIELDS if name in params},
    )
