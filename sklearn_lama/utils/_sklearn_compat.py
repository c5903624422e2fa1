"""scikit-learn's private helpers that this package builds on, imported in one place.

``_param_validation`` (parameter constraints and ``validate_params``),
``_fit_context``, ``_BaseComposition`` and ``_check_sample_weight`` are private to scikit-learn but
used, unchanged since 1.3, by its own estimators and by third-party libraries (imbalanced-learn
vendors ``_param_validation``). The package keeps importing them rather than
copying about 900 lines, and states the supported range instead of a blind
pin: CI (and ``tox -e py3,floors``) runs the suite on scikit-learn 1.6.1, the
floor of setup.py, and on the newest release. A scikit-learn release that
moves one of them breaks this module only.
"""

from sklearn.base import _fit_context
from sklearn.utils._param_validation import Interval, Options, StrOptions, validate_params
from sklearn.utils.metaestimators import _BaseComposition
from sklearn.utils.validation import _check_sample_weight

__all__ = [
    "Interval",
    "Options",
    "StrOptions",
    "_BaseComposition",
    "_check_sample_weight",
    "_fit_context",
    "validate_params",
]
