"""Session set-up of the test suite, and options that change float32 rounding.

The suite must pass whatever order the CPU's kernels give float32 sums, so
three options run it under conditions that change that order (none is set by
default; each prints in pytest's header)::

    python -m pytest --torch-threads=2          # intra-op threads of the estimators and tests
    python -m pytest --no-mkldnn                # torch.backends.mkldnn.enabled = False
    python -m pytest --inference-batch-size=37  # other documents share a prediction batch

The suite runs with one torch thread unless ``--torch-threads=N`` says
otherwise: ``OMP_NUM_THREADS`` is set to that number, so that the estimators'
``torch_threads=None`` (the CPUs the process was given) means it too, and the
tests' own torch operations run with it. ``--inference-batch-size=N`` sets the estimators' default
``inference_batch_size``: a prediction batch holds at most ``N`` documents, so
documents are predicted beside other documents, at other padded widths, than
with the default 256. The tests that check those defaults themselves are
skipped under the option that replaces them (``_CHECKS_THE_DEFAULT``), and
only those. The rounding bounds the tolerances are derived from are in
``tests/_tolerances.py``.
"""

import inspect
import os

# scikit-learn's array-API check runs (instead of skipping) only when SciPy is
# imported with this flag set.
os.environ.setdefault("SCIPY_ARRAY_API", "1")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402


def pytest_addoption(parser):
    group = parser.getgroup("rounding", "conditions that change float32 rounding")
    group.addoption(
        "--torch-threads",
        type=int,
        default=None,
        help="torch intra-op threads of the tests and of the estimators' torch_threads=None",
    )
    group.addoption(
        "--no-mkldnn",
        action="store_true",
        help="run with torch.backends.mkldnn.enabled = False",
    )
    group.addoption(
        "--inference-batch-size",
        type=int,
        default=None,
        help="the estimators' default inference_batch_size",
    )


def pytest_configure(config):
    # Two cores in CI: one intra-op thread per test process unless asked,
    # which keeps the suite's time and float results independent of the
    # machine's cores; loky's workers inherit the variable.
    threads = config.getoption("torch_threads") or 1
    os.environ["OMP_NUM_THREADS"] = str(threads)
    torch.set_num_threads(threads)
    if config.getoption("no_mkldnn"):
        torch.backends.mkldnn.enabled = False
    size = config.getoption("inference_batch_size")
    if size is not None:
        _default_inference_batch_size(size)


# The tests that check a default an option replaces: skipped under that option.
_CHECKS_THE_DEFAULT = {
    "inference_batch_size": (
        "test_the_source_docstring_documents_every_parameter[",  # the docstrings say 256
    ),
}


def pytest_collection_modifyitems(config, items):
    for option, names in _CHECKS_THE_DEFAULT.items():
        if config.getoption(option) is None:
            continue
        flag = "--" + option.replace("_", "-")
        skip = pytest.mark.skip(reason=f"checks the default that {flag} replaces")
        for item in items:
            if item.name.startswith(names):
                item.add_marker(skip)


def pytest_report_header(config):
    return (
        f"rounding: torch threads {torch.get_num_threads()}, "
        f"mkldnn {torch.backends.mkldnn.enabled}, "
        f"inference_batch_size {config.getoption('inference_batch_size') or 'default'}"
    )


def _default_inference_batch_size(size):
    """Set the ``inference_batch_size`` default of every public estimator to ``size``."""
    import sklearn_lama

    for name in sklearn_lama.__all__:
        cls = getattr(sklearn_lama, name)
        if inspect.isclass(cls):
            defaults = getattr(cls.__init__, "__kwdefaults__", None) or {}
            if "inference_batch_size" in defaults:
                defaults["inference_batch_size"] = size


@pytest.fixture(scope="session")
def toy_corpus():
    """A small two-class corpus whose classes differ by vocabulary.

    Separable by construction: every document holds three words of its
    class's seven and none of the other's. The tests' accuracy thresholds on
    it (0.8 to 0.9, chance 0.5) sit well below the 1.0 a fit reaches, so no
    seed or CPU's rounding decides them; the seeds fix the rest.
    """
    rng = np.random.RandomState(0)
    pos = ["good", "great", "excellent", "fine", "nice", "happy", "love"]
    neg = ["bad", "awful", "poor", "terrible", "sad", "hate", "worst"]
    filler = ["the", "a", "movie", "film", "plot", "was", "is", "and"]
    texts, labels = [], []
    for i in range(120):
        words = pos if i % 2 else neg
        n = rng.randint(3, 15)
        tokens = list(rng.choice(words, size=3)) + list(rng.choice(filler, size=n))
        rng.shuffle(tokens)
        texts.append(" ".join(tokens))
        labels.append("pos" if i % 2 else "neg")
    return texts, np.array(labels)


@pytest.fixture(autouse=True)
def _no_other_load(monkeypatch):
    """Tests see a machine without other work, whatever else runs beside the suite.

    The estimators' ``torch_threads=None`` leaves out cores other work keeps
    busy (``busy_cpus``, tested on its own with given counts); without this,
    thread counts would depend on what else the machine runs.
    """
    from sklearn_lama.utils import _threads

    monkeypatch.setattr(_threads, "runnable_threads", lambda: 1)
