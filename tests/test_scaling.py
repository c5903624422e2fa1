"""Scaling parameters: torch threads per call, batch budgets, Duo's attention budget."""

import io
import os
import sys
import threading
import time
import types

import numpy as np
import pytest
import torch
from skorch.callbacks import Callback

from sklearn_lama import DuoClassifier, TokenSequences
from sklearn_lama.classification import _base
from sklearn_lama.utils import _threads
from sklearn_lama.utils._threads import busy_cpus, resolve_threads, torch_threads
from tests._tolerances import assert_differ, chained_bound

from .conftest import make_classifier, probability_bound

_RUNNABLE_THREADS = _threads.runnable_threads


class RecordThreads(Callback):
    """Reads torch's thread count at every epoch of a fit."""

    def __init__(self):
        self.threads = []

    def on_epoch_begin(self, net, **kwargs):
        self.threads.append(torch.get_num_threads())


@pytest.fixture
def caller_threads():
    """The caller runs torch with 3 threads; the original setting comes back after the test."""
    before = torch.get_num_threads()
    torch.set_num_threads(3)
    yield 3
    torch.set_num_threads(before)


def _sequences(lengths, dim=8):
    rng = np.random.RandomState(0)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    table = rng.randn(40, dim).astype(np.float32)
    return TokenSequences(rng.randint(1, 40, offsets[-1]), offsets, (table,), "toy")


@pytest.mark.parametrize("torch_threads, expected", [(None, 2), (1, 1)])
def test_fit_uses_torch_threads_and_restores_the_callers(
    kind, caller_threads, torch_threads, expected, monkeypatch
):
    # None: the CPUs the process was given (here through OMP_NUM_THREADS).
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    X = np.random.RandomState(0).randint(1, 30, size=(40, 10))
    y = np.arange(40) % 2
    record = RecordThreads()
    clf = make_classifier(kind, max_epochs=2, torch_threads=torch_threads, callbacks=[record])
    clf.fit(X, y)
    assert record.threads == [expected, expected]
    assert torch.get_num_threads() == caller_threads

    # The threads of every prediction batch, whichever path computes it
    # (Duo's folded head does not call the network's forward).
    seen = []
    run_sorted = _base.run_sorted

    def recording(*args, **kwargs):
        for pair in run_sorted(*args, **kwargs):
            seen.append(torch.get_num_threads())
            yield pair

    monkeypatch.setattr(_base, "run_sorted", recording)
    clf.predict_proba(X)
    assert seen and set(seen) == {expected}
    assert torch.get_num_threads() == caller_threads


def test_threads_are_restored_when_fit_fails(caller_threads):
    with pytest.raises(ValueError):
        make_classifier("lama").fit(np.zeros((4, 3)), [0, 0, 0, 0])
    assert torch.get_num_threads() == caller_threads


def test_overlapping_calls_share_the_threads_and_restore_the_callers(caller_threads):
    # A second Python thread entering torch_threads(4) while the first is
    # inside (joblib's threading backend) runs 4 // 2 threads; the first
    # keeps its 4, also in a nested call, and each gets its setting back.
    inside, release, seen, other_seen = threading.Event(), threading.Event(), [], []

    def other():
        torch.set_num_threads(5)
        with torch_threads(4):
            other_seen.append(torch.get_num_threads())
            inside.set()
            release.wait()
        other_seen.append(torch.get_num_threads())

    worker = threading.Thread(target=other)
    with torch_threads(4):
        worker.start()
        inside.wait()
        seen.append(torch.get_num_threads())
        with torch_threads(1):
            seen.append(torch.get_num_threads())
        release.set()
        worker.join()
    assert seen == [4, 4] and other_seen == [2, 5]
    assert torch.get_num_threads() == caller_threads


def test_negative_torch_threads_count_from_the_given_cpus(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "4")
    assert [resolve_threads(n) for n in (None, 3, -1, -2, -9)] == [4, 3, 4, 3, 1]
    with pytest.raises(ValueError, match="torch_threads"):
        make_classifier("fcsr", torch_threads=0).fit(np.ones((4, 3), int), [0, 1, 0, 1])


@pytest.mark.parametrize(
    "cpus, given, runnable, expected",
    [
        (2, "2", 1, 2),  # only the calling thread runs
        (2, "2", 2, 1),  # one other busy thread: its core is left out
        (2, "2", 9, 1),  # never fewer than one
        (64, "2", 31, 2),  # the other work fits on the 62 CPUs outside the share
        (64, "2", 63, 2),
        (64, "2", 64, 1),  # and one more: a core of the share is busy
    ],
)
def test_none_leaves_out_the_cores_other_work_keeps_busy(
    monkeypatch, cpus, given, runnable, expected
):
    monkeypatch.setenv("OMP_NUM_THREADS", given)
    monkeypatch.setattr(os, "cpu_count", lambda: cpus)
    monkeypatch.setattr(_threads, "runnable_threads", lambda: runnable)
    assert resolve_threads(None) == expected
    assert resolve_threads(2) == 2 and resolve_threads(-1) == int(given)  # asked for: kept
    assert min(busy_cpus(), int(given) - 1) == int(given) - expected


def test_busy_cpus_is_zero_where_the_runnable_count_is_unknown(monkeypatch):
    monkeypatch.setattr(_threads, "runnable_threads", lambda: None)
    assert busy_cpus() == 0


def test_runnable_threads_reads_the_kernels_count_and_terminates(monkeypatch):
    # One short read of /proc/loadavg per reading; a malformed or oversized
    # file gives None at once (the suite's fixture replaces the function, so
    # the module's own is called).
    opened = []

    def serving(text):
        def opener(path, *args, **kwargs):
            opened.append(path)
            return io.StringIO(text)

        return opener

    start = time.perf_counter()
    for text, expected in [
        ("0.50 0.40 0.30 3/123 4567\n", 3),
        ("garbage", None),
        ("", None),
        ("1 2 3 x/9 1", None),
        ("9" * 10**6, None),
    ]:
        monkeypatch.setattr("builtins.open", serving(text))
        assert _RUNNABLE_THREADS(readings=3, interval=0) == expected
    monkeypatch.undo()
    assert set(opened) == {"/proc/loadavg"}
    assert time.perf_counter() - start < 5
    if os.path.exists("/proc/loadavg"):
        assert _RUNNABLE_THREADS() >= 1  # this thread, at least


def test_none_is_one_thread_in_a_task_of_a_dask_worker(monkeypatch):
    # A Dask worker runs one task per thread it was given, whatever
    # OMP_NUM_THREADS its environment passes on; outside a task, None is
    # every given CPU. (tests/test_dask.py checks it on a real cluster.)
    monkeypatch.setenv("OMP_NUM_THREADS", "4")

    def outside():
        raise ValueError("No worker found")

    monkeypatch.setitem(sys.modules, "distributed", types.SimpleNamespace(get_worker=outside))
    assert resolve_threads(None) == 4
    monkeypatch.setitem(sys.modules, "distributed", types.SimpleNamespace(get_worker=object))
    assert [resolve_threads(n) for n in (None, 2, -1)] == [1, 2, 4]


def test_max_batch_tokens_is_honoured_in_training_and_inference(kind, batch_shapes):
    X = _sequences([30] * 40)
    y = np.arange(40) % 2
    clf = make_classifier(kind, max_epochs=1, max_batch_tokens=100, batch_size=32)
    clf.fit(X, y)
    training = list(batch_shapes)
    batch_shapes.clear()
    clf.predict_proba(X)
    # 100 tokens hold 3 documents of 30: every batch, training and inference.
    assert {size for size, _ in training + batch_shapes} == {3, 1}
    assert max(size for size, _ in batch_shapes) == 3


def test_inference_batch_size_is_honoured(kind, monkeypatch):
    X = _sequences([5] * 50)
    clf = make_classifier(kind, max_epochs=1, inference_batch_size=8).fit(X, np.arange(50) % 2)
    # Documents per batch (a small batch also repeats its last document, for rounding).
    sizes = []
    run_sorted = _base.run_sorted

    def recording(*args, **kwargs):
        for rows, output in run_sorted(*args, **kwargs):
            sizes.append(len(rows))
            yield rows, output

    monkeypatch.setattr(_base, "run_sorted", recording)
    clf.predict_proba(X)
    assert sizes == [8] * 6 + [2]


def test_duo_max_attention_bytes_is_honoured(batch_shapes):
    X = _sequences([5, 5] + [60] * 20)
    clf = DuoClassifier(
        n_layers=1,
        n_heads=2,
        d_ff=16,
        max_epochs=1,
        early_stopping=False,
        max_attention_bytes=2**16,
        random_state=0,
    ).fit(X[:2], [0, 1])
    batch_shapes.clear()
    clf.predict_proba(X)
    # 2**16 bytes / (4 bytes x 2 heads) = 8,192 token pairs: 2 documents of 60.
    assert max(size for size, length in batch_shapes if length == 60) == 2
    with pytest.raises(ValueError, match=r"91 tokens.*max_attention_bytes=65536.*90 tokens"):
        clf.predict_proba(_sequences([91]))


def test_bigru_chunks_only_documents_longer_than_chunk_length():
    from sklearn_lama.modules import BiGRUEncoder

    torch.manual_seed(0)
    exact = BiGRUEncoder(6, 4)
    chunked = BiGRUEncoder(6, 4, chunk_length=16)
    chunked.load_state_dict(exact.state_dict())
    lengths = [10, 16, 50, 37]
    mask = torch.arange(50)[None] < torch.tensor(lengths)[:, None]
    x = torch.randn(4, 50, 6) * mask[..., None]
    # A GRU step's gate sums: 6 inputs, 4 states in (-1, 1) and two biases;
    # 16 steps of rounding, each carried on by gates and tanh (1-Lipschitz).
    gates = max(
        w.abs().sum(1).max().item() * (x.abs().max().item() if "ih" in name else 1.0)
        for name, w in exact.named_parameters()
        if "weight" in name
    )
    biases = sum(b.abs().max().item() for name, b in exact.named_parameters() if "bias" in name)
    bound = chained_bound(gates + biases, 6 + 4 + 2, depth=16)
    with torch.no_grad():
        full, parts = exact(x, mask), chunked(x, mask)
        for row, length in enumerate(lengths):
            alone = chunked(x[row : row + 1, :length], mask[row : row + 1, :length])[0]
            # A document's annotations do not depend on its batch...
            torch.testing.assert_close(alone, parts[row, :length])
            difference = (full[row, :length] - parts[row, :length]).abs().max()
            # ...and are exact up to chunk_length tokens (to rounding), approximate beyond.
            assert (difference <= bound) == (length <= 16)


def test_lama_chunk_length_none_is_the_exact_recurrence():
    X = _sequences([40] * 6 + [300] * 2)
    y = np.arange(8) % 2
    clf = make_classifier("lama", max_epochs=1, chunk_length=64).fit(X, y)
    chunked = clf.predict_proba(X)
    clf.net_.module_.core.encoder.chunk_length = None
    exact = clf.predict_proba(X)
    bound = probability_bound("lama", clf, X[:6])
    np.testing.assert_allclose(chunked[:6], exact[:6], rtol=0, atol=bound)
    assert_differ(chunked[6:], exact[6:])
