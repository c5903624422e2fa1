"""The seed of one fit, drawn from an estimator's ``random_state``."""

import numpy as np
from sklearn.utils import check_random_state

__all__ = ["derive_seed"]


def derive_seed(random_state):
    """The int seed of one fit, drawn from ``random_state`` (scikit-learn's convention).

    Parameters
    ----------
    random_state : int, RandomState instance or None
        An estimator's ``random_state``: an int gives the same seed every
        time, a ``RandomState`` the next draw, ``None`` a fresh one.

    Returns
    -------
    seed : int
        In ``[0, 2**31 - 1)``.
    """
    return int(check_random_state(random_state).randint(np.iinfo(np.int32).max))
