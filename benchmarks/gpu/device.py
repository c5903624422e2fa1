"""The classifiers on a CUDA GPU: its tests, and the pipelines' cost against one CPU thread.

``python -m benchmarks gpu`` (``--section device``, the default); each cell in
its own process:

* the tests: pytest's CUDA tests (``-k cuda`` over the test files that have
  some) and scikit-learn's ``check_estimator`` of the three classifiers with
  ``device`` set to the GPU;
* the pipelines: on each corpus, the README's three pipelines (``random_state``
  0) fit their vectorizer once on the CPU (it has no device), then their
  classifier on the GPU in each precision (``"32"``, ``"bf16"``,
  ``"16-mixed"``), timed as the ``cost`` part times a fit (epochs, seconds per
  epoch, training tokens/s; prediction documents/s from raw text; peak GPU
  memory). Beside them, on the same machine's CPU and at the same time, one
  torch thread per process: the same pipelines in float32 and tuned fastText
  (``cost``'s cell), the yardsticks of the epoch speed-up and of the fit.

The tests run first, alone, so that the timings have the GPU to themselves.
``--precision`` keeps the precisions named; a long corpus (``r8-long``) has
no CPU yardstick here (its reference is the ``cost`` run on it). A
pipeline's cell still running after ``CELL_TIMEOUT_S`` is stopped and
reported so.

Without CUDA the classifiers run on the CPU in the precisions it has, which
checks the part, not a GPU.
"""

import json
import os
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .._data import LONG, corpus_name
from .._env import ROOT, usable_cores
from .._harness import run_cell, run_cells
from .._models import OURS, SHORT
from .._report import Report, sig
from .cores import cpu_cells

NAME = "gpu"
PRECISIONS = ("32", "bf16", "16-mixed")
OPTIONS = {
    "threads": "torch threads of the cells on the device (the CPU yardstick: one)",
    "corpus": "default: mr and r8",
    "model": "among lama, fcsr, duo (default: all three)",
    "set": "a parameter of the classifiers, on the device and on the CPU",
    "precision": {
        "choices": list(PRECISIONS),
        "help": "only these precisions of the classifiers on the device; repeatable",
    },
}
SIZES = {
    "quick": {"train_limit": 600, "test_limit": 300, "overrides": {"max_epochs": 2}},
    "full": {"train_limit": None, "test_limit": None, "overrides": {}},
}
# Seconds a pipeline's cell may run on the device, and the tests and checks, before
# they are stopped and reported so (a long corpus's target is a fit within a minute).
CELL_TIMEOUT_S = 120
TESTS_TIMEOUT_S = 240
DEFAULT_CORPORA = ["mr", "r8"]
# The test files with CUDA tests (skipped without CUDA).
CUDA_TEST_FILES = (
    "tests/test_classifiers.py",
    "tests/test_persistence.py",
    "tests/test_precision.py",
    "tests/test_reliability.py",
)
_SUMMARY = re.compile(r"(\d+) (passed|failed|skipped|deselected|errors?|xfailed|xpassed)")


def pytest_summary(text):
    """Counts of pytest's last summary line in ``text`` (``{"passed": 3, ...}``)."""
    for line in reversed(text.strip().splitlines()):
        found = _SUMMARY.findall(line)
        if found:
            return {("error" if kind.startswith("error") else kind): int(n) for n, kind in found}
    return {}


def run_pytest(timeout_s=TESTS_TIMEOUT_S):
    """pytest ``-k cuda`` over :data:`CUDA_TEST_FILES`: counts, failures and exit status."""
    files = [f for f in CUDA_TEST_FILES if os.path.exists(os.path.join(ROOT, f))]
    cmd = [sys.executable, "-m", "pytest", "-q", "-rfE", "-k", "cuda", *files]
    try:
        proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout_s)
        text, code = proc.stdout + proc.stderr, proc.returncode
    except subprocess.TimeoutExpired as exc:
        text, code = (exc.stdout or b"").decode(errors="replace"), f"timeout {timeout_s} s"
    return {
        "command": " ".join(["python", *cmd[1:]]),
        "exit": code,
        "counts": pytest_summary(text),
        "failures": [line for line in text.splitlines() if line.startswith(("FAILED", "ERROR"))],
    }


def checks_cell(model, device):
    """scikit-learn's ``check_estimator`` of one classifier on ``device`` (child process)."""
    import warnings

    from sklearn.utils.estimator_checks import check_estimator

    from sklearn_lama import DuoClassifier, FCSRClassifier, LAMAClassifier

    cls = {"lama": LAMAClassifier, "fcsr": FCSRClassifier, "duo": DuoClassifier}[model]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = check_estimator(cls(device=device), on_fail=None, on_skip=None)
    return {
        "checks": len(results),
        "passed": sum(r["status"] == "passed" for r in results),
        "failed": [
            f"{r['check_name']}: {type(r['exception']).__name__}: {str(r['exception'])[:300]}"
            for r in results
            if r["status"] == "failed"
        ],
    }


def pipeline_cell(corpus, model, device, precisions, train_limit, test_limit, overrides):
    """Fit ``model``'s vectorizer once, then its classifier on ``device`` in each precision."""
    import torch
    from sklearn.base import clone

    from .._data import head, load
    from .._models import make
    from ..cost.pipelines import fit_clocked, predict_timed

    X, y, X_test, y_test = load(corpus)
    X, y = head(X, y, train_limit)
    X_test, y_test = head(X_test, y_test, test_limit)
    pipe = make(model, seed=0, **overrides)
    emb = pipe.named_steps["emb"]
    start = time.perf_counter()
    Z = emb.fit_transform(X, y)
    vectorizer_s = time.perf_counter() - start
    rows = []
    for precision in precisions:
        clf = clone(pipe.named_steps["clf"]).set_params(device=device, precision=precision)
        if device.startswith("cuda"):
            torch.cuda.reset_peak_memory_stats(device)
        try:
            row = fit_clocked(clf, Z, y)
        except Exception as exc:  # a precision the device lacks leaves the others' rows
            rows.append({"precision": precision, "error": f"{type(exc).__name__}: {exc}"})
            continue
        row.update(predict_timed(emb, clf, X_test, np.asarray(y_test)))
        if device.startswith("cuda"):
            row["gpu_peak_mib"] = torch.cuda.max_memory_allocated(device) / 2**20
        rows.append(dict(row, precision=precision, fit_s=vectorizer_s + row["classifier_s"]))
    return {"n_train": len(X), "n_test": len(X_test), "vectorizer_s": vectorizer_s, "rows": rows}


def _device():
    import torch

    if torch.cuda.is_available():
        return "cuda", {"gpu": torch.cuda.get_device_name(0), "cuda": torch.version.cuda}
    return "cpu", {"gpu": "none: the classifiers ran on the CPU"}


def run(cfg, threads, corpora, log):
    corpora = corpora or DEFAULT_CORPORA
    models = cfg.get("models") or list(OURS)
    device, facts = _device()
    precisions = cfg.get("precision") or [
        p for p in PRECISIONS if device == "cuda" or p != "16-mixed"
    ]
    limits = {k: cfg[k] for k in ("train_limit", "test_limit")}
    short = [c for c in corpora if corpus_name(c) not in LONG]
    yardstick = cpu_cells(short, models, 1, cfg)
    with ThreadPoolExecutor(2 + len(models)) as pool:
        tests = pool.submit(run_pytest)
        checks = {
            m: pool.submit(
                run_cell,
                "benchmarks.gpu.device:checks_cell",
                threads,
                dict(model=m, device=device),
                TESTS_TIMEOUT_S,
            )
            for m in models
        }
        checked = {m: f.result() for m, f in checks.items()}
        pytest = tests.result()
        log(f"pytest -k cuda: {pytest['counts']}")
        # The CPU yardstick runs beside the GPU work, on the cores the GPU's cells leave.
        cpu = pool.submit(
            run_cells, "benchmarks.cost.pipelines:cell", 1, yardstick, max(1, usable_cores() - 2)
        )
        gpu = []
        for corpus in corpora:
            for model in models:
                kwargs = dict(corpus=corpus, model=model, device=device, precisions=precisions)
                r = run_cell(
                    "benchmarks.gpu.device:pipeline_cell",
                    threads,
                    dict(kwargs, overrides=cfg["overrides"], **limits),
                    CELL_TIMEOUT_S,
                )
                rows = [
                    dict(
                        row,
                        corpus=corpus_name(corpus),
                        model=model,
                        vectorizer_s=r.get("vectorizer_s"),
                    )
                    for row in r.get("rows", [{"error": r.get("error")}])
                ]
                gpu += rows
                for row in rows:
                    keys = ("precision", "accuracy", "fit_s", "epochs", "epoch_s", "error")
                    log(f"{corpus} {model}: " + json.dumps({k: row.get(k) for k in keys}))
        cpu_rows = [
            dict(r, corpus=corpus_name(k["corpus"]), model=k["model"])
            for k, r in zip(yardstick, cpu.result())
        ]
    return {
        "name": NAME,
        "config": {**cfg, "corpora": corpora, "models": models, "precisions": precisions},
        "device": dict(facts, device=device),
        "pytest": pytest,
        "checks": checked,
        "gpu": gpu,
        "cpu": cpu_rows,
    }


def render(payload):
    """The report and plot of a :func:`run` result (also of one read back from JSON)."""
    rep = Report(payload["name"], f"On a GPU ({payload['device']['gpu']})")
    rep.text(
        "The CUDA tests and scikit-learn's estimator checks on the device; then each "
        "pipeline's vectorizer fitted once on the CPU and its classifier on the device in "
        "each precision, beside the same pipeline in float32 and tuned fastText on one CPU "
        "thread of the same machine, at the same time. Without CUDA the classifiers run on "
        "the CPU, which checks the part, not a GPU."
    )
    pytest = payload["pytest"]
    rep.text(
        f"``{pytest['command']}``: "
        + ", ".join(f"{n} {k}" for k, n in pytest["counts"].items())
        + f" (exit {pytest['exit']})"
        + "".join(f"; {f}" for f in pytest["failures"])
    )
    rep.table(
        ["classifier", "check_estimator on the device", "failed"],
        [
            [
                SHORT[m],
                f"{c.get('passed', 0)} of {c.get('checks', 0)} passed",
                "; ".join(c.get("failed", [c.get("error", "")])),
            ]
            for m, c in payload["checks"].items()
        ],
    )
    cpu = {(r["corpus"], r["model"]): r for r in payload["cpu"] if "error" not in r}
    for corpus in dict.fromkeys(r["corpus"] for r in payload["gpu"]):
        fasttext = cpu.get((corpus, "fasttext"))
        rep.text(
            f"**{corpus}**: classifier epochs against the same pipeline's on one CPU thread; "
            "fit x: the whole pipeline's fit over tuned fastText's on that CPU"
            + (f" ({sig(fasttext['fit_s'])} s)" if fasttext else " (not measured)")
        )
        table = []
        for r in payload["gpu"]:
            if r["corpus"] != corpus:
                continue
            base = cpu.get((corpus, r["model"]))
            if "error" in r:
                table.append(
                    [SHORT[r["model"]], r.get("precision", ""), "failed: " + str(r["error"])[:80]]
                    + [""] * 7
                )
                continue
            table.append(
                [
                    SHORT[r["model"]],
                    r["precision"],
                    f"{r['accuracy']:.4f}",
                    sig(r["fit_s"]),
                    sig(r["fit_s"] / fasttext["fit_s"]) if fasttext else "n/a",
                    sig(r["vectorizer_s"]),
                    f"{r['epochs']} x {sig(r['epoch_s'])}",
                    sig(base["epoch_s"] / r["epoch_s"]) if base else "n/a",
                    f"{r['docs_per_s']:,.0f}",
                    sig(r["gpu_peak_mib"]) if "gpu_peak_mib" in r else "n/a",
                ]
            )
        rep.table(
            [
                "model",
                "precision",
                "accuracy",
                "fit s",
                "fit x",
                "vectors s",
                "epochs x s",
                "epoch x CPU",
                "docs/s",
                "GPU peak MiB",
            ],
            table,
        )
    return rep, _plotter(payload)


def _plotter(payload):
    cpu = {(r["corpus"], r["model"]): r for r in payload["cpu"] if "error" not in r}

    def plot(fig):
        corpora = list(dict.fromkeys(r["corpus"] for r in payload["gpu"]))
        for i, corpus in enumerate(corpora):
            ax = fig.add_subplot(1, len(corpora), i + 1)
            rows = [
                r
                for r in payload["gpu"]
                if r["corpus"] == corpus and "error" not in r and (corpus, r["model"]) in cpu
            ]
            labels = [f"{SHORT[r['model']]} {r['precision']}" for r in rows]
            ax.barh(labels, [cpu[corpus, r["model"]]["epoch_s"] / r["epoch_s"] for r in rows])
            ax.invert_yaxis()
            ax.set(xlabel="epoch speed-up over one CPU thread", title=corpus)
            ax.grid(True, axis="x", alpha=0.3)

    return plot
