"""Saved estimators of earlier releases, read by this one: versions and migrations.

The promise (the Reliability page): a weights file (:func:`~sklearn_lama.save_weights`)
or a pickle (``joblib``, ``pickle``, skops) of an estimator, written by
sklearn_lama 0.9.0 or any later release, loads in every later release and
predicts as it did. Both kinds of file describe an estimator the same way,
as a node::

    {"class": "LAMAClassifier", "params": {...}, "state": {...}}

``params`` are its ``get_params(deep=False)`` as they were when it was
saved, ``state`` (absent for an unfitted estimator) what its
``_export_state()`` returned then, each numeric array as a tensor. Reading
a file upgrades its nodes to what this release writes: every migration
registered with :func:`migration` at or after the version that wrote the
file runs, oldest first, then parameters the file lacks (added since) take
their defaults. A migration is a small function ``node -> node`` for one
change of one release: a renamed parameter mapped to its new name, state
converted to its new layout. A parameter that no migration maps and this
release does not know means the file cannot be read faithfully: it is
refused, as are files of releases before 0.9.0 and of later releases,
with a message naming the versions.
"""

import inspect
import re

from .._version import __version__

__all__ = [
    "OLDEST_READABLE",
    "IncompatibleFileError",
    "check_readable",
    "defaults",
    "migration",
    "release",
    "upgrade",
]

# The first release whose files every later release reads.
OLDEST_READABLE = "0.9.0"

# release tuple of the version a migration upgrades from -> its functions, in order.
_MIGRATIONS = {}


class IncompatibleFileError(ValueError):
    """A saved estimator that this release cannot read as it was saved; the message says why."""


def release(version):
    """``(major, minor, micro)`` of a version string: ``"0.10.0"``, ``"0.10.0.dev0"``, ``"1.2"``.

    Raises ValueError when ``version`` does not start with numbers and dots.
    """
    match = re.match(r"(\d+)\.(\d+)(?:\.(\d+))?", version) if isinstance(version, str) else None
    if match is None:
        raise ValueError(f"{version!r} is not a version number")
    return tuple(int(number or 0) for number in match.groups())


def migration(from_version):
    """Decorator: register ``function(node) -> node``, upgrading nodes of ``from_version``.

    The function receives the node as releases ``from_version`` up to the
    next registered version wrote it and returns it as that next version
    writes it. It must accept the nodes of every class and leave those it
    does not concern unchanged.
    """

    def register(function):
        _MIGRATIONS.setdefault(release(from_version), []).append(function)
        return function

    return register


def check_readable(saved, name):
    """Refuse a file of release ``saved`` that this one does not read.

    An IncompatibleFileError names ``name`` (the file) and the versions.
    """
    try:
        written = release(saved)
    except ValueError:
        raise IncompatibleFileError(
            f"{name} names no valid sklearn_lama version ({saved!r}): it is damaged, or "
            "was not written by sklearn_lama."
        ) from None
    if written < release(OLDEST_READABLE):
        raise IncompatibleFileError(
            f"{name} was saved by sklearn_lama {saved}, and this is sklearn_lama "
            f"{__version__}: files load in later releases from {OLDEST_READABLE} on. Load "
            f"it with sklearn_lama {saved}, or refit the estimator with sklearn_lama "
            f"{__version__} and save it again."
        )
    if written > release(__version__):
        raise IncompatibleFileError(
            f"{name} was saved by sklearn_lama {saved}, a later release than this "
            f"sklearn_lama {__version__}, which cannot know what changed since: upgrade "
            f"sklearn_lama to {saved} or later to load it."
        )


def upgrade(node, saved, cls, name):
    """``node`` of release ``saved`` as this release writes it, for the estimator class ``cls``.

    Runs the migrations (see the module's documentation), then refuses
    with an IncompatibleFileError naming ``name`` and the versions any parameter that
    ``cls`` does not take. Parameters the node lacks are left out: the
    caller gives them their defaults.
    """
    written = release(saved)
    for version in sorted(_MIGRATIONS):
        if version >= written:
            for function in _MIGRATIONS[version]:
                node = function(node)
    taken = set(inspect.signature(cls.__init__).parameters) - {"self"}
    unknown = sorted(set(node["params"]) - taken)
    if unknown:
        raise IncompatibleFileError(
            f"{name}: the {node['class']} saved by sklearn_lama {saved} sets the parameters "
            f"{unknown}, which sklearn_lama {__version__} does not take; it cannot be "
            f"loaded faithfully. Load it with sklearn_lama {saved}."
        )
    return node


def defaults(cls):
    """``{name: default}`` of the parameters of ``cls`` that have a default."""
    signature = inspect.signature(cls.__init__)
    return {
        name: parameter.default
        for name, parameter in signature.parameters.items()
        if name != "self" and parameter.default is not inspect.Parameter.empty
    }
