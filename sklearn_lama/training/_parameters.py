"""What the estimators' training parameters accept, and the values some of them name.

The constraints are scikit-learn's ``_parameter_constraints`` entries of the
training parameters that every estimator shares; each estimator reuses them
in its own ``_parameter_constraints`` and documents the parameters in its
docstring.
"""

import os
from numbers import Integral, Real

import torch

from ..utils._sklearn_compat import Interval, StrOptions

__all__ = [
    "Adam",
    "INFERENCE_BATCH",
    "OPTIMIZERS",
    "PRECISIONS",
    "TRAINING_CONSTRAINTS",
]


def _host_checked(name):
    """torch Adam's graph-capture check ``name``, skipped when every parameter is on the CPU."""
    check = getattr(torch.optim.Adam, name)

    def guarded(self):
        if any(p.device.type != "cpu" for group in self.param_groups for p in group["params"]):
            check(self)

    return guarded


class Adam(torch.optim.Adam):
    """torch's Adam, whose step leaves CUDA alone when every parameter is on the CPU.

    At every step torch's Adam asks whether a CUDA graph is being captured,
    which initialises CUDA on a machine that has it, for CPU parameters too:
    every CPU fit would hold a CUDA context, and a training worker forked
    from a process that had used CUDA (``n_workers``) would fail at its
    first step. No CPU step can be captured, so the check is skipped there;
    the update is torch's.
    """


# The check under its older name and its newer one, whichever this torch has.
for _name in ("_cuda_graph_capture_health_check", "_accelerator_graph_capture_health_check"):
    if hasattr(torch.optim.Adam, _name):
        setattr(Adam, _name, _host_checked(_name))
del _name


OPTIMIZERS = {"sgd": torch.optim.SGD, "adam": Adam}


INFERENCE_BATCH = 256


# The autocast dtype of each ``precision`` (None: no autocast, float32 throughout).
PRECISIONS = {"32": None, "bf16": torch.bfloat16, "16-mixed": torch.float16}


#: scikit-learn's constraints of the training parameters that every estimator
#: shares, with one meaning (the fields of ``TrainingConfig``).
TRAINING_CONSTRAINTS = {
    "max_epochs": [Interval(Integral, 1, None, closed="left")],
    "max_time": [Interval(Real, 0, None, closed="neither"), None],
    "lr": [Interval(Real, 0, None, closed="neither")],
    "early_stopping": ["boolean"],
    "validation_fraction": [Interval(Real, 0, 1, closed="neither")],
    "patience": [Interval(Integral, 1, None, closed="left")],
    "tol": [Interval(Real, 0, None, closed="left")],
    "callbacks": [list, None],
    "warm_start": ["boolean"],
    "checkpoint": [str, os.PathLike, None],
    "device": [str, torch.device],
    "precision": [StrOptions(set(PRECISIONS))],
    "torch_threads": [
        Interval(Integral, 1, None, closed="left"),
        Interval(Integral, None, -1, closed="right"),
        None,
    ],
    "n_workers": [
        Interval(Integral, 1, None, closed="left"),
        Interval(Integral, None, -1, closed="right"),
    ],
    "max_batch_tokens": [Interval(Integral, 1, None, closed="left")],
    "verbose": ["verbose"],
    "random_state": ["random_state"],
}
