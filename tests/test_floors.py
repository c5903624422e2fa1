"""setup.py's floors are the releases that CI's floor job installs and tests.

``.ci/floors.txt`` pins the oldest release of each requirement; ``.ci/run``
installs it as constraints on the oldest Python that setup.py admits and
runs the suite there. These tests keep the three in step: a floor raised
or lowered in one place only fails here.
"""

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SETUP = ROOT / "setup.py"
FLOORS = ROOT / ".ci" / "floors.txt"
CI = ROOT / ".ci" / "run"

pytestmark = pytest.mark.skipif(
    not (SETUP.exists() and FLOORS.exists() and CI.exists()),
    reason="setup.py and .ci/ live in the source checkout, not in an installed package",
)


def _setup_keywords():
    """The keyword arguments of setup.py's ``setup(...)`` call that are literals."""
    tree = ast.parse(SETUP.read_text(encoding="utf-8"))
    call = next(
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "setup"
    )
    keywords = {}
    for keyword in call.keywords:
        try:
            keywords[keyword.arg] = ast.literal_eval(keyword.value)
        except ValueError:
            continue
    return keywords


def _normalized(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def setup_floors():
    """``{name: floor}`` of setup.py's install_requires; each must have a ``>=`` floor."""
    floors = {}
    for requirement in _setup_keywords()["install_requires"]:
        match = re.fullmatch(r"([A-Za-z0-9_.-]+)>=([0-9][0-9.]*)", requirement.replace(" ", ""))
        assert match, f"{requirement!r}: every requirement states a floor, and only a floor"
        floors[_normalized(match[1])] = match[2]
    return floors


def pinned_floors(text):
    """``{name: version}`` of the ``name==version`` lines of a constraints file."""
    pins = {}
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        match = re.fullmatch(r"([A-Za-z0-9_.-]+)==([0-9][0-9.]*)", line)
        assert match, f"{line!r}: .ci/floors.txt pins releases as name==version"
        pins[_normalized(match[1])] = match[2]
    return pins


def test_every_floor_of_setup_py_is_the_release_ci_tests():
    assert setup_floors() == pinned_floors(FLOORS.read_text(encoding="utf-8"))


def test_the_floor_job_runs_the_oldest_python_setup_py_admits():
    python = re.fullmatch(r">=(\d+\.\d+)", _setup_keywords()["python_requires"])
    assert python, "python_requires states a floor"
    ci = CI.read_text(encoding="utf-8")
    assert f"FLOOR_PYTHON={python[1]}\n" in ci
    assert "-c .ci/floors.txt" in ci


def test_a_floor_out_of_step_is_found():
    assert pinned_floors("# a comment\nnumpy==1.24.4  # why\n\nscikit_learn==1.6.1\n") == {
        "numpy": "1.24.4",
        "scikit-learn": "1.6.1",
    }
    with pytest.raises(AssertionError, match="name==version"):
        pinned_floors("numpy>=1.24\n")
