"""The GPU part's bookkeeping, on the CPU: pytest's summary and the report of a run."""

from benchmarks.gpu import cores, device


def test_pytest_summary_reads_the_last_summary_line():
    text = (
        "....s\nFAILED tests/x.py::t - boom\n1 failed, 4 passed, 2 skipped, 3 deselected in 9s\n"
    )
    assert device.pytest_summary(text) == {"failed": 1, "passed": 4, "skipped": 2, "deselected": 3}
    assert device.pytest_summary("1 error in 2s") == {"error": 1}
    assert device.pytest_summary("no summary") == {}


def _fit(model, precision, epoch_s, fit_s):
    return {
        "corpus": "mr",
        "model": model,
        "precision": precision,
        "accuracy": 0.77,
        "fit_s": fit_s,
        "vectorizer_s": 9.0,
        "epochs": 5,
        "epoch_s": epoch_s,
        "docs_per_s": 1e4,
    }


def test_report_divides_the_cpu_epoch_by_the_gpu_epoch_and_the_fit_by_fasttexts():
    payload = {
        "name": "gpu",
        "device": {"gpu": "G", "device": "cuda"},
        "pytest": {"command": "c", "exit": 0, "counts": {"passed": 3}, "failures": []},
        "checks": {"lama": {"checks": 2, "passed": 2, "failed": []}},
        "gpu": [
            _fit("lama", "32", 0.5, 12.0),
            {"corpus": "mr", "model": "lama", "precision": "16-mixed", "error": "E"},
        ],
        "cpu": [
            _fit("lama", "32", 10.0, 60.0),
            {"corpus": "mr", "model": "fasttext", "fit_s": 4.0},
        ],
    }
    rep, plot = device.render(payload)
    (table,) = [b for b in rep.blocks if b[0] == "table" and "epoch x CPU" in b[1]]
    columns, rows = table[1], table[2]
    row = dict(zip(columns, rows[0]))
    assert row["epoch x CPU"] == "20.0"  # 10 s / 0.5 s
    assert row["fit x"] == "3.00"  # 12 s / 4 s
    assert rows[1][2].startswith("failed")


def test_cores_report_divides_each_fit_by_its_one_thread_fit():
    def fit(model, threads, fit_s):
        return {
            "corpus": "mr",
            "model": model,
            "threads": threads,
            "accuracy": 0.7,
            "fit_s": fit_s,
            "epoch_s": fit_s / 4,
        }

    payload = {
        "name": "gpu-cores",
        "config": {"threads": [1, 2, 4]},
        "rows": [
            fit("lama", 1, 12.0),
            fit("lama", 2, 8.0),
            {"corpus": "mr", "model": "lama", "threads": 4, "error": "E"},
            fit("fasttext", 1, 2.0),
            fit("fasttext", 4, 0.5),
        ],
    }
    rep, plot = cores.render(payload)
    (table,) = [b for b in rep.blocks if b[0] == "table"]
    rows = {(r[0], str(r[1])): dict(zip(table[1], r)) for r in table[2]}
    assert rows["LAMA", "2"]["speed-up"] == "1.50"  # 12 s / 8 s
    assert rows["fastText", "4"]["speed-up"] == "4.00"
    assert ("LAMA", "4") not in rows  # a failed cell has no speed-up


def test_cores_section_runs_one_cell_per_model_and_thread_count(monkeypatch):
    calls = []

    def run_cell(target, threads, kwargs, timeout=None):
        calls.append((kwargs["model"], threads, kwargs["threads"], kwargs["profile_docs"]))
        return {"fit_s": 1.0}

    monkeypatch.setattr(cores, "run_cell", run_cell)
    monkeypatch.setattr(cores, "usable_cores", lambda: 5)
    monkeypatch.setattr(cores, "fasttext_status", lambda: None)
    payload = cores.run(dict(cores.SIZES["quick"], models=["duo"]), 1, None, lambda m: None)
    assert payload["config"]["threads"] == [1, 2, 4]
    assert calls == [(m, n, n, 0) for n in (1, 2, 4) for m in ("duo", "fasttext")]
    assert {r["corpus"] for r in payload["rows"]} == {"mr"}
