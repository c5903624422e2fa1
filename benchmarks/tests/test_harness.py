"""The shared harness: the cells' process boundary, the reports, and the results' layout."""

import glob
import os
import re
import time

import pytest
from matplotlib.figure import Figure

from benchmarks._env import ROOT
from benchmarks._harness import run_cell
from benchmarks._parts import RESULTS, part_of, read, render, write_docs
from benchmarks._report import Report

JSON = sorted(glob.glob(os.path.join(RESULTS, "*.json")))


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
    # A results file per part and corpus, not per run: the folder stays a page's worth
    # (32 results of at most three files each).
    assert len(files) <= 96
    for name in files:
        stem, ext = os.path.splitext(name)
        assert ext in (".json", ".rst", ".png"), name
        assert "log" not in stem and "before" not in stem, name
        assert part_of(stem) is not None, name
    # Every table and plot has the measurements it was written from.
    for path in glob.glob(os.path.join(RESULTS, "*.rst")) + glob.glob(
        os.path.join(RESULTS, "*.png")
    ):
        assert os.path.exists(os.path.splitext(path)[0] + ".json"), path


def test_a_results_file_belongs_to_the_benchmark_with_the_longest_name_it_starts_with():
    assert part_of("cost")[:2] == ("cost", "pipelines")
    assert part_of("cost-r8-long")[:2] == ("cost", "pipelines")
    assert part_of("scaling-mr")[:2] == ("cost", "corpus-size")
    assert part_of("scaling-length")[:2] == ("cost", "doc-length")
    assert part_of("runtime_vs_length")[:2] == ("cost", "paper-length")
    assert part_of("gpu-cores")[:2] == ("gpu", "cores")
    assert part_of("gpu")[:2] == ("gpu", "device")
    assert part_of("default-select-r8")[:2] == ("select", None)
    assert part_of("nothing") is None


@pytest.mark.parametrize("path", JSON, ids=os.path.basename)
def test_every_committed_result_renders_with_its_part(path):
    meta, payload = read(path)
    _, _, module = part_of(payload["name"])
    report, plot = module.render(dict(payload, meta=meta))
    assert report.name == os.path.basename(path)[: -len(".json")]
    assert report.blocks
    plot(Figure(figsize=(11, 4.6)))


@pytest.mark.parametrize("path", JSON, ids=os.path.basename)
def test_every_committed_table_is_what_its_part_renders_from_its_json(path):
    """The committed ``.rst`` cannot drift from its figures: rewrite it with ``--render-only``."""
    with open(path[: -len(".json")] + ".rst") as fh:
        assert fh.read() == render(path)[0]


def test_the_results_page_shows_every_committed_result_once(tmp_path):
    with open(os.path.join(ROOT, "docs", "results.rst")) as fh:
        page = fh.read()
    included = re.findall(r"^\.\. include:: /_build/results/(\S+)\.rst$", page, re.M)
    images = re.findall(r"^\.\. image:: /_build/results/(\S+)\.png$", page, re.M)
    stems = sorted(os.path.basename(p)[: -len(".json")] for p in JSON)
    assert sorted(included) == stems
    figures = [s for s in stems if os.path.exists(os.path.join(RESULTS, s + ".png"))]
    assert sorted(images) == figures
    # What docs/conf.py writes for the page: every result's tables, and its figure if kept.
    written = write_docs(str(tmp_path), RESULTS)
    assert sorted(written) == stems
    assert sorted(p.stem for p in tmp_path.glob("*.png")) == figures
    text = (tmp_path / "cost.rst").read_text()
    assert text.splitlines()[1] == "~" * len(text.splitlines()[0])
