"""The GPU driver's bookkeeping, on the CPU: summaries, targets, reports, memory probe, reloads."""

import numpy as np
import pytest
import torch

from benchmarks import gpu

_META = {
    "date": "d",
    "size": "full",
    "wall_s": 1.0,
    "command": "x",
    "git_commit": "c",
    "loadavg_start": 1,
    "loadavg_end": 1,
    "torch_threads": 1,
    "machine": {"cpu": "cpu", "cores": 16, "platform": "p", "device": "cuda"},
    "versions": {"torch": "t"},
}


def _fit_row(model, precision, epoch_s, fit_s, vectorizer_s, accuracy, corpus="mr"):
    return {
        "corpus": corpus,
        "model": model,
        "precision": precision,
        "epoch_s": epoch_s,
        "fit_s": fit_s,
        "vectorizer_s": vectorizer_s,
        "classifier_s": fit_s - vectorizer_s,
        "vectorizer_share": vectorizer_s / fit_s,
        "accuracy": accuracy,
        "epochs": 5,
        "train_tokens_per_s": 1e5,
        "docs_per_s": 1e4,
    }


def _parts():
    gpu_rows, cpu_rows, seeds = [], [], []
    for model in gpu.OURS:
        cpu_rows.append(_fit_row(model, "32", 10.0, 60.0, 9.0, 0.77))
        gpu_rows.append(_fit_row(model, "32", 0.5, 12.0, 9.0, 0.77))
        gpu_rows.append(_fit_row(model, "bf16", 2.0, 20.0, 9.0, 0.80))
        gpu_rows.append({"corpus": "mr", "model": model, "precision": "16-mixed", "error": "E"})
        for seed, acc in ((1, 0.76), (2, 0.78)):
            seeds.append({"model": model, "precision": "32", "seed": seed, "accuracy": acc})
            seeds.append({"model": model, "precision": "bf16", "seed": seed, "accuracy": acc})
    cpu_rows.append({"corpus": "mr", "model": "fasttext", "fit_s": 5.0, "accuracy": 0.75})
    cpu_rows[-1]["docs_per_s"] = 1e5
    return {"pipelines": gpu_rows, "cpu": cpu_rows, "seeds": seeds}


def test_pytest_summary_reads_the_last_summary_line():
    text = (
        "....s\nFAILED tests/x.py::t - boom\n1 failed, 4 passed, 2 skipped, 3 deselected in 9s\n"
    )
    assert gpu.pytest_summary(text) == {"failed": 1, "passed": 4, "skipped": 2, "deselected": 3}
    assert gpu.pytest_summary("1 error in 2s") == {"error": 1}
    assert gpu.pytest_summary("no summary") == {}


def test_targets_judge_each_model_on_mr():
    found = gpu.targets(_parts())
    assert len(found) == 3 * len(gpu.OURS)
    speed, fit, bf16 = found[:3], found[3:6], found[6:]
    # Epoch: 10 s on the CPU against 0.5 s in float32 (the fastest precision): 20x.
    assert all(met for _, met in speed) and "20.0x" in speed[0][0]
    # Fit: 12 s against fastText's 5 s, the 9 s vectorizer alone over it.
    assert not any(met for _, met in fit)
    assert "the vectorizer alone takes longer" in fit[0][0]
    # bf16: mean of 0.80, 0.76, 0.78 = 0.78 within float32's 0.76-0.78.
    assert all(met for _, met in bf16)


def test_targets_missing_measurements_are_unjudged():
    parts = _parts()
    parts["cpu"] = []
    parts["seeds"] = []
    found = gpu.targets(parts)
    assert [met for _, met in found] == [None] * len(found)


def test_a_bf16_mean_outside_the_float32_range_is_missed():
    parts = _parts()
    for row in parts["seeds"]:
        if row["precision"] == "bf16":
            row["accuracy"] = 0.70
    assert not any(met for _, met in gpu.targets(parts)[6:])


def test_report_renders_every_part_with_failures_and_skips(tmp_path):
    payload = {
        "name": "gpu",
        "meta": _META,
        "config": {**gpu.SIZES["full"], "precisions": list(gpu.PRECISIONS)},
        "gpu": {
            "device": "cuda",
            "torch": "t",
            "cuda": "13",
            "name": "H100",
            "memory_gib": 79.2,
            "capability": "9.0",
            "multiprocessors": 132,
        },
        "cpu": {"logical_cpus": 16},
        "parts": {
            **_parts(),
            "pytest": {
                "command": "c",
                "exit": 1,
                "counts": {"failed": 1},
                "failures": ["FAILED x"],
                "skips": [],
            },
            "checks": [
                {
                    "model": "lama",
                    "checks": 2,
                    "passed": 1,
                    "failed": [{"check": "c", "error": "e"}],
                },
                {"model": "fcsr", "skipped": "deadline"},
                {"model": "duo", "error": "exit 1: boom"},
            ],
            "translation": [
                {"device": "cuda", "skipped": "deadline"},
                {
                    "device": "cpu",
                    "updates": 10,
                    "train_s": 5.0,
                    "updates_per_s": 2.0,
                    "epochs": 1,
                    "valid_perplexity": 9.0,
                    "test_bleu": 1.0,
                },
            ],
            "numerics": {"lama_gru_output_dtype": {"32": ["torch.float32"]}},
            "persistence": {"error": "E"},
            "gridsearch": {
                "grid": gpu.GRID,
                "documents": 10,
                "cv": 2,
                "max_epochs": 1,
                "n_fits": 1,
                "wall_s": 1.0,
                "fits": [
                    {
                        "params": {"n_heads": 4},
                        "allocated_at_start_mib": 1.0,
                        "peak_mib": 2.0,
                        "allocated_at_end_mib": 1.0,
                    }
                ],
            },
        },
    }
    gpu.write(payload, str(tmp_path), figure=False)
    text = (tmp_path / "gpu.md").read_text()
    assert "FAILED x" in text and "deadline" in text and "exit 1: boom" in text
    assert "Persistence**: failed: E" in text and "missed" in text
    assert (tmp_path / "gpu.rst").exists() and (tmp_path / "gpu.json").exists()


class _FakeCuda:
    """Stands in for the torch.cuda memory counters: a fit allocates 5 MiB at its peak."""

    def __init__(self):
        self.allocated = 0
        self.peak = 0

    def synchronize(self):
        pass

    def reset_peak_memory_stats(self):
        self.peak = self.allocated

    def memory_allocated(self):
        return self.allocated

    def max_memory_allocated(self):
        return self.peak + 5 * 2**20


class _CudaNamedCpu:
    """A device the driver takes for CUDA (probe on) that the estimators run as the CPU."""

    type = "cuda"

    def __str__(self):
        return "cpu"


def test_gridsearch_probe_records_every_fit_in_order(monkeypatch, tmp_path):
    fake = _FakeCuda()
    for name in ("synchronize", "reset_peak_memory_stats", "memory_allocated"):
        monkeypatch.setattr(torch.cuda, name, getattr(fake, name))
    monkeypatch.setattr(torch.cuda, "max_memory_allocated", fake.max_memory_allocated)
    monkeypatch.setattr(gpu, "GRID", {"n_heads": [2, 3]})
    rng = np.random.RandomState(0)
    Z = rng.randint(1, 30, size=(40, 6))
    y = (Z[:, 0] > 15).astype(int)
    cfg = {"grid": {"documents": 40, "max_epochs": 1, "cv": 2}}
    run = gpu.Run(str(tmp_path), {"parts": {}, "meta": {}}, float("inf"))
    monkeypatch.setattr(gpu.Run, "flush", lambda self: None)
    gpu.run_gridsearch(run, cfg, (None, y), (None, Z, 0.0), _CudaNamedCpu())
    result = run.payload["parts"]["gridsearch"]
    assert result["n_fits"] == 2 * 2 + 1 == len(result["fits"])
    assert [f["params"].get("n_heads") for f in result["fits"][:4]] == [2, 2, 3, 3]
    assert result["fits"][-1]["params"]["refit"] is True
    assert all(f["peak_mib"] == 5.0 for f in result["fits"])


def test_models_saved_three_ways_reload_in_a_process_without_cuda(tmp_path):
    pytest.importorskip("onnxruntime")
    from sklearn_lama._main._pipelines import default_pipeline

    texts = [f"good film {i}" if i % 2 else f"bad plot {i}" for i in range(60)]
    labels = np.array(["pos" if i % 2 else "neg" for i in range(60)])
    emb = default_pipeline("duo").named_steps["emb"]
    # Fitted as the driver fits (with cost's batch clock), which joblib must pickle too.
    pipe, _ = gpu.fit_pipeline(
        emb, emb.fit_transform(texts, labels), 0.0, "duo", labels, texts, labels, max_epochs=1
    )
    run = gpu.Run(str(tmp_path), {"parts": {}, "meta": {}}, float("inf"))
    run.flush = lambda: None
    gpu.run_persistence(run, {("duo", "32"): pipe}, texts[:20])
    result = run.payload["parts"]["persistence"]
    assert result["cuda_visible"] is False
    assert [r["format"] for r in result["rows"]] == ["save_weights", "joblib", "onnx"]
    for row in result["rows"]:
        assert "error" not in row, row
        assert row["same_labels"] == 1.0 and row["max_abs_proba_diff"] < 1e-5


def test_persistence_report_shows_both_references(tmp_path):
    rows = [
        {
            "model": "lama",
            "precision": "32",
            "format": "joblib",
            "loaded_on": "cpu",
            "same_labels": 1.0,
            "max_abs_proba_diff": 2.6e-4,
            "max_abs_proba_diff_no_tf32": 1e-7,
            "warnings": [],
        },
        {"model": "duo", "precision": "32", "format": "onnx", "error": "not saved: E"},
    ]
    rep = gpu.Report("gpu", "t")
    gpu._render_persistence(
        rep, {"persistence": {"rows": rows, "cuda_visible": False, "n_documents": 5}}
    )
    text = rep.markdown([])
    assert "2.6e-04" in text and "1.0e-07" in text and "not saved: E" in text


def test_a_run_of_parts_without_their_inputs_writes_an_empty_report(tmp_path):
    # Persistence and the grid search reuse the pipelines' fits: alone they have nothing to do.
    gpu.main(["--quick", "--parts", "persistence,gridsearch", "--out-dir", str(tmp_path)])
    payload = (tmp_path / "gpu.json").read_text()
    assert '"parts": {}' in payload and (tmp_path / "gpu.md").exists()
    with pytest.raises(SystemExit):
        gpu.main(["--parts", "nothing"])
