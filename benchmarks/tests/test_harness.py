"""The measurement cells' process boundary: a cell past its time limit is stopped."""

import time

from benchmarks._harness import run_cell


def sleeper(seconds):
    """A cell that outlasts its limit (run in the child process)."""
    time.sleep(seconds)
    return {"slept": seconds}


def test_a_cell_past_its_limit_is_stopped_and_reported():
    start = time.perf_counter()
    result = run_cell("benchmarks.tests.test_harness:sleeper", 1, {"seconds": 120}, timeout=5)
    assert time.perf_counter() - start < 60
    assert result["timed_out"] == 5
    assert "still running after 5 s" in result["error"]


def test_a_cell_within_its_limit_returns_its_result():
    assert (
        run_cell("benchmarks.tests.test_harness:sleeper", 1, {"seconds": 0}, timeout=120)["slept"]
        == 0
    )
