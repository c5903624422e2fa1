"""The shared harness: the cells' process boundary, the reports, and the results' layout."""

import glob
import json
import os
import time

import pytest

from benchmarks.__main__ import PARTS, _part_of
from benchmarks._env import ROOT
from benchmarks._harness import run_cell
from benchmarks._report import Report

RESULTS = os.path.join(ROOT, "benchmarks", "results")


def sleeper(seconds):
    """A cell that outlasts its limit (run in the child process)."""
    time.sleep(seconds)
    return {"slept": seconds}


def failing():
    """A cell that raises (run in the child process)."""
    raise ValueError("broken cell")


def test_a_cell_past_its_limit_is_stopped_and_reported():
    start = time.perf_counter()
    result = run_cell("benchmarks.tests.test_harness:sleeper", 1, {"seconds": 120}, timeout=5)
    assert time.perf_counter() - start < 60
    assert result["timed_out"] == 5
    assert "still running after 5 s" in result["error"]


def test_a_cell_within_its_limit_returns_its_result_and_thread_count():
    result = run_cell("benchmarks.tests.test_harness:sleeper", 1, {"seconds": 0}, timeout=120)
    assert result["slept"] == 0
    assert result["torch_threads"] == 1


def test_a_failing_cell_returns_its_error_instead_of_stopping_the_suite():
    result = run_cell("benchmarks.tests.test_harness:failing", 1, {})
    assert result["error"].startswith("exit 1: ValueError: broken cell")


def test_a_report_renders_its_table_as_aligned_rst():
    rep = Report("x", "Title")
    rep.text("Some text.")
    rep.table(["model", "s"], [["LAMA", "1.5"], ["Duo (GloVe)", "10"]])
    lines = rep.rst(["stamp"]).splitlines()
    assert lines[:2] == ["Title", "-----"]
    rule = "===========  ==="  # each column as wide as its widest cell
    assert lines.count(rule) == 3
    assert "Duo (GloVe)  10" in lines


def test_every_committed_result_is_a_parts_json_rst_or_png_and_no_log():
    files = sorted(f for f in os.listdir(RESULTS) if os.path.isfile(os.path.join(RESULTS, f)))
    assert len(files) <= 60
    for name in files:
        stem, ext = os.path.splitext(name)
        assert ext in (".json", ".rst", ".png"), name
        assert "log" not in stem and "before" not in stem, name
        assert _part_of(stem) in PARTS.values(), name
    # Every table and plot has the measurements it was written from.
    for path in glob.glob(os.path.join(RESULTS, "*.rst")):
        assert os.path.exists(path[: -len(".rst")] + ".json"), path


@pytest.mark.parametrize(
    "path", sorted(glob.glob(os.path.join(RESULTS, "*.json"))), ids=os.path.basename
)
def test_every_committed_result_renders_with_its_part(path):
    stem = os.path.basename(path)[: -len(".json")]
    with open(path) as fh:
        payload = json.load(fh)
    payload.pop("meta")
    payload.setdefault("name", stem)
    report, plot = _part_of(stem).render(payload)
    assert report.name == stem
    assert report.blocks and callable(plot)
