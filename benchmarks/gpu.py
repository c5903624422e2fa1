"""Every estimator on a CUDA GPU: the CUDA tests, the estimator checks, timings and persistence.

One run on a machine with a GPU; the results are rewritten after every part (and every fit), so
a run cut short keeps what it measured. Parts (``--parts``, default all), in the order they run:

* ``tests``: pytest's CUDA tests (``-k cuda`` over the test files that have some: those that skip
  without CUDA, and the refusals that skip with it), scikit-learn's ``check_estimator`` for the
  three classifiers on the device, and the dtype LAMA's GRUs compute in under each precision, all
  at once, each in its own process;
* ``pipelines``: the three default pipelines (``benchmarks._models.make``) on MR, later R8, the
  classifier on the GPU in each precision (``"32"``, ``"bf16"``, ``"16-mixed"``): the whole
  pipeline's fit time and the vectorizer's share, epochs, seconds per epoch, training tokens/s,
  prediction documents/s (raw text in) and test accuracy (``cost``'s measurements). The
  vectorizer runs on the CPU whatever the device, so it is fitted once per corpus and embedding
  (LAMA and FCSR read the same word2vec table), in its own process while the tests run, and its
  time counts in each pipeline's fit;
* ``yardstick``: on the same machine's CPU, after the tests, beside the GPU work: each pipeline in
  float32 and tuned fastText (``cost``'s cell) and the translator, each in its own process with
  one torch thread, all at once on the machine's cores;
* ``persistence``: MR's pipelines fitted on the GPU, saved with ``save_weights``, joblib and ONNX,
  loaded in a new process that sees no CUDA device (``CUDA_VISIBLE_DEVICES=""``) and run there:
  the same labels, and how far the probabilities moved (also from the GPU's with TF32 off);
* ``gridsearch``: ``GridSearchCV(n_jobs=1)`` of LAMA on the GPU: the memory allocated when each
  fit starts, its peak (``torch.cuda.max_memory_allocated``, reset before each fit) and its end;
* ``translation``: :class:`~sklearn_lama.DuoTranslator` (the ``translation`` part's full-size
  model) on English → French gettext pairs for the same wall-clock budget on the GPU as the
  yardstick gives it on one CPU thread: updates per second and test BLEU;
* ``seeds``: the classifiers on MR again with seeds 1 and 2 (the vectors of seed 0) in float32
  and bf16, for the seed spread that bf16's accuracy is compared with.

Usage (``--quick``: tiny subsets on whatever device there is, to check the script; the device
machine's copy of the tree may not know its commit: ``BENCH_COMMIT`` names it)::

    BENCH_COMMIT=abc1234 python -m benchmarks.gpu --out-dir DIR [--deadline S] [--locale DIR]
    python -m benchmarks.gpu --render benchmarks/results/gpu.json   # the reports again
"""

import argparse
import contextlib
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np

from ._env import ROOT, stamp
from ._harness import run_cell
from ._models import OURS, SHORT, fasttext_status
from ._report import Report, sig

NAME = "gpu"
TITLE = "On a CUDA GPU: tests, timings and persistence"
PARTS = ("tests", "pipelines", "yardstick", "persistence", "gridsearch", "translation", "seeds")
PRECISIONS = ("32", "bf16", "16-mixed")
# The embedding each pipeline reads: LAMA and FCSR share one word2vec table.
EMBEDDINGS = {"word2vec": ("lama", "fcsr"), "meta": ("duo",)}
SIZES = {
    "quick": {
        "corpora": ["mr", "r8"],
        "train_limit": 600,
        "test_limit": 300,
        "overrides": {"max_epochs": 2},
        # The classifiers' own max_epochs: check_classifiers_train asks for accuracy.
        "check_epochs": None,
        "translation": {"budget_s": 5, "train_limit": 2000, "curve_limit": 10, "test_limit": 50},
        "grid": {"documents": 300, "max_epochs": 1, "cv": 2},
        "persist_docs": 100,
        "seeds": [1],
        "cpu_jobs": 2,
    },
    "full": {
        "corpora": ["mr", "r8"],
        "train_limit": None,
        "test_limit": None,
        "overrides": {},
        # The classifiers' own max_epochs: check_classifiers_train asks for accuracy.
        "check_epochs": None,
        "translation": {"budget_s": 30, "train_limit": None, "curve_limit": 20, "test_limit": 500},
        "grid": {"documents": 3000, "max_epochs": 2, "cv": 2},
        "persist_docs": 1000,
        "seeds": [1, 2],
        "cpu_jobs": 9,
    },
}
GRID = {"n_heads": [4, 15], "hidden_size": [25, 50]}
EPOCH_SPEEDUP_TARGET = 10.0
# Seconds a part is expected to need at full size on an H100-class GPU; a part that no
# longer fits before the deadline is recorded as skipped.
NEEDS = {"fit": 12, "translation": 60, "persistence": 30, "gridsearch": 30}


class Run:
    """The results of one run, written whole to ``out_dir`` after every change."""

    def __init__(self, out_dir, payload, deadline_s):
        self.out_dir = out_dir
        self.payload = payload
        self.start = time.perf_counter()
        self.deadline_s = deadline_s
        self.lock = threading.Lock()

    def left(self):
        return self.deadline_s - (time.perf_counter() - self.start)

    def fits(self, need):
        return self.left() >= need

    def add(self, key, row):
        """Append ``row`` to the list ``key`` of the results."""
        with self.lock:
            self.payload["parts"].setdefault(key, []).append(row)
            self.flush()

    def set(self, key, value):
        with self.lock:
            self.payload["parts"][key] = value
            self.flush()

    def flush(self, figure=False):
        self.payload["meta"]["wall_s"] = time.perf_counter() - self.start
        self.payload["meta"]["loadavg_end"] = round(os.getloadavg()[0], 2)
        try:
            write(self.payload, self.out_dir, figure=figure)
        except Exception as exc:  # the JSON is written first; a report bug must not stop the run
            log(f"report not written: {type(exc).__name__}: {exc}")


def log(message):
    print(time.strftime("%H:%M:%S"), message, flush=True)


# ----------------------------------------------------------------- device facts
def device_facts(device):
    """The GPU's name, memory and capability, and the CUDA build, or the CPU's fallback."""
    import torch

    facts = {"device": str(device), "torch": torch.__version__, "cuda": torch.version.cuda}
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        facts.update(
            name=props.name,
            memory_gib=round(props.total_memory / 2**30, 1),
            capability=f"{props.major}.{props.minor}",
            multiprocessors=props.multi_processor_count,
            bf16=torch.cuda.is_bf16_supported(),
        )
        with contextlib.suppress(OSError, subprocess.CalledProcessError):
            facts["driver"] = subprocess.run(
                ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                capture_output=True,
                text=True,
                check=True,
            ).stdout.strip()
    return facts


def cpu_facts():
    """Logical CPUs, and threads per core (hyper-threads share a core's units)."""
    facts = {"logical_cpus": os.cpu_count()}
    with contextlib.suppress(OSError, ValueError):
        siblings = cores = None
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("siblings") and siblings is None:
                    siblings = int(line.split(":")[1])
                if line.startswith("cpu cores") and cores is None:
                    cores = int(line.split(":")[1])
        if siblings and cores:
            facts["threads_per_core"] = siblings // cores
    return facts


# ----------------------------------------------------------------- a. tests
# The test files with CUDA tests (tests/test_translator.py's only one is a refusal that skips
# where CUDA is present; that file also needs numpydoc, which the GPU machine lacks).
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


def run_pytest(out_dir, timeout_s):
    """pytest ``-k cuda`` over tests/; its output goes to ``pytest.log`` in ``out_dir``."""
    cmd = [sys.executable, "-m", "pytest", "-q", "-rfEs", "-k", "cuda", *CUDA_TEST_FILES]
    start = time.perf_counter()
    try:
        proc = subprocess.run(
            cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout_s, env=_child_env()
        )
        text, code = proc.stdout + proc.stderr, proc.returncode
    except subprocess.TimeoutExpired as exc:
        text, code = (exc.stdout or b"").decode(errors="replace"), f"timeout {timeout_s} s"
    with open(os.path.join(out_dir, "pytest.log"), "w") as fh:
        fh.write(text)
    failures = [line for line in text.splitlines() if line.startswith(("FAILED", "ERROR"))]
    skips = [line for line in text.splitlines() if line.startswith("SKIPPED")]
    return {
        "command": "python -m pytest -q -rfEs -k cuda " + " ".join(CUDA_TEST_FILES),
        "exit": code,
        "counts": pytest_summary(text),
        "failures": failures,
        "skips": skips,
        "wall_s": time.perf_counter() - start,
    }


def checks_cell(model, device, max_epochs):
    """scikit-learn's ``check_estimator`` of one classifier on ``device`` (child process)."""
    import warnings

    from sklearn.utils.estimator_checks import check_estimator

    from sklearn_lama import DuoClassifier, FCSRClassifier, LAMAClassifier

    cls = {"lama": LAMAClassifier, "fcsr": FCSRClassifier, "duo": DuoClassifier}[model]
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        epochs = {} if max_epochs is None else {"max_epochs": max_epochs}
        results = check_estimator(cls(device=device, **epochs), on_fail=None, on_skip=None)
    failed = [
        {"check": r["check_name"], "error": f"{type(r['exception']).__name__}: {r['exception']}"}
        for r in results
        if r["status"] == "failed"
    ]
    return {
        "model": model,
        "checks": len(results),
        "passed": sum(r["status"] == "passed" for r in results),
        "skipped_checks": [r["check_name"] for r in results if r["status"] == "skipped"],
        "failed": [dict(f, error=f["error"][:400]) for f in failed],
        "wall_s": time.perf_counter() - start,
    }


def numerics_cell(device):
    """The dtype LAMA's GRUs compute in under each precision on ``device`` (child process).

    Autocast decides it per operator and per device, so a recurrent layer can run in a
    precision on one device and in float32 on another.
    """
    import torch

    from sklearn_lama import LAMAClassifier

    X = np.random.RandomState(0).randint(1, 30, size=(60, 12))
    y = X[:, 0] > 15
    dtypes = {}
    for precision in PRECISIONS:
        if precision == "16-mixed" and torch.device(device).type != "cuda":
            continue
        clf = LAMAClassifier(
            n_heads=2,
            hidden_size=8,
            mlp_hidden=8,
            max_epochs=1,
            device=device,
            precision=precision,
            random_state=0,
        ).fit(X, y)
        seen = set()
        gru = clf.net_.module_.core.encoder.forward_gru
        hook = gru.register_forward_hook(
            lambda module, args, out, seen=seen: seen.add(str(out[0].dtype))
        )
        clf.predict_proba(X)
        hook.remove()
        dtypes[precision] = sorted(seen)
    return {"lama_gru_output_dtype": dtypes}


def run_correctness(run, cfg, device, out_dir):
    """pytest's CUDA tests and each classifier's ``check_estimator``, all at once."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(2 + len(OURS)) as pool:
        tests = pool.submit(run_pytest, out_dir, 240)
        checks = {
            model: pool.submit(
                run_cell,
                "benchmarks.gpu:checks_cell",
                1,
                {"model": model, "device": str(device), "max_epochs": cfg["check_epochs"]},
            )
            for model in OURS
        }
        numerics = pool.submit(
            run_cell, "benchmarks.gpu:numerics_cell", 1, {"device": str(device)}
        )
        for model, future in checks.items():
            result = future.result()
            run.add("checks", dict(result, model=model))
            log(
                f"   check_estimator {model}: {result.get('passed')} passed, "
                f"failed {result.get('failed')}"
            )
        run.set("numerics", numerics.result())
        log(f"   numerics: {run.payload['parts']['numerics']}")
        run.set("pytest", tests.result())
        log(f"   pytest: {run.payload['parts']['pytest']['counts']}")


# ----------------------------------------------------------------- b. pipelines
def corpus_split(corpus, train_limit, test_limit):
    """``(X, y, X_test, y_test)`` of a shipped corpus, cut to the limits (None: whole)."""
    from ._data import head, load

    X, y, X_test, y_test = load(corpus)
    X, y = head(X, y, train_limit)
    X_test, y_test = head(X_test, y_test, test_limit)
    return X, y, X_test, np.asarray(y_test)


def vectorize_cell(corpus, kind, train_limit, path):
    """Fit the embedding step ``kind`` of the default pipelines, seed 0 (child process).

    The fitted step and the training documents' ids or vectors go to ``path`` (joblib), for
    the classifiers fitted on the GPU in the parent.
    """
    import joblib

    from ._models import make

    X, y, _, _ = corpus_split(corpus, train_limit, None)
    emb = make(EMBEDDINGS[kind][0], seed=0).named_steps["emb"]
    start = time.perf_counter()
    Z = emb.fit_transform(X, y)
    vectorizer_s = time.perf_counter() - start
    joblib.dump((emb, Z), path)
    return {"vectorizer_s": vectorizer_s}


def start_vectorizers(cfg, folder):
    """Every corpus's embeddings, each fitted in its own process at once; their futures."""
    from concurrent.futures import ThreadPoolExecutor

    jobs = [(corpus, kind) for corpus in cfg["corpora"] for kind in EMBEDDINGS]
    pool = ThreadPoolExecutor(len(jobs))
    futures = {}
    for corpus, kind in jobs:
        path = os.path.join(folder, f"{corpus}-{kind}.joblib")
        kwargs = {"corpus": corpus, "kind": kind, "train_limit": cfg["train_limit"], "path": path}
        futures[corpus, kind] = pool.submit(
            lambda k=kwargs: dict(run_cell("benchmarks.gpu:vectorize_cell", 1, k), path=k["path"])
        )
    pool.shutdown(wait=False)
    return futures


def fit_pipeline(emb, Z, vectorizer_s, model, y, X_test, y_test, seed=0, **params):
    """Fit ``model``'s classifier on ``Z`` and time it as ``cost`` does; ``(pipeline, row)``."""
    from sklearn.pipeline import Pipeline

    from ._models import make
    from .cost import fit_clocked, predict_timed

    clf = make(model, seed=seed, **params).named_steps["clf"]
    row = fit_clocked(clf, Z, y)
    row.update(predict_timed(emb, clf, X_test, y_test))
    row.update(
        vectorizer_s=vectorizer_s,
        fit_s=vectorizer_s + row["classifier_s"],
        vectorizer_share=vectorizer_s / (vectorizer_s + row["classifier_s"]),
    )
    return Pipeline([("emb", emb), ("clf", clf)]), row


def _gpu_memory(device):
    import torch

    if device.type != "cuda":
        return {}
    return {"max_memory_allocated_mib": torch.cuda.max_memory_allocated(device) / 2**20}


def run_pipelines(run, cfg, corpus, vectorizers, device, precisions, kept, data):
    """The default pipelines on ``corpus`` on the GPU; fills ``kept`` and ``data`` for later parts.

    ``kept``: the pipelines fitted on MR, for the persistence part; ``data``: the corpus's
    split and, per embedding, ``(emb, Z, vectorizer_s)``.
    """
    import joblib
    import torch

    X, y, X_test, y_test = data[corpus] = corpus_split(
        corpus, cfg["train_limit"], cfg["test_limit"]
    )
    for kind, models in EMBEDDINGS.items():
        made = vectorizers[corpus, kind].result()
        if "error" in made:
            for model in models:
                for precision in precisions:
                    where = {"corpus": corpus, "model": model, "precision": precision}
                    run.add("pipelines", dict(where, error="embedding: " + made["error"]))
            continue
        emb, Z = joblib.load(made["path"])
        vectorizer_s = made["vectorizer_s"]
        log(f"{corpus} {kind} vectors {vectorizer_s:.1f} s")
        data[corpus, kind] = (emb, Z, vectorizer_s)
        for model in models:
            for precision in precisions:
                where = {"corpus": corpus, "model": model, "precision": precision}
                if not run.fits(NEEDS["fit"]):
                    run.add("pipelines", dict(where, skipped="deadline"))
                    continue
                if device.type == "cuda":
                    torch.cuda.reset_peak_memory_stats(device)
                try:
                    pipe, row = fit_pipeline(
                        emb,
                        Z,
                        vectorizer_s,
                        model,
                        y,
                        X_test,
                        y_test,
                        device=str(device),
                        precision=precision,
                        **cfg["overrides"],
                    )
                except Exception as exc:  # one broken fit leaves the others' results
                    run.add("pipelines", dict(where, error=f"{type(exc).__name__}: {exc}"))
                    log(f"{corpus} {model} {precision} FAILED {exc}")
                    continue
                row.update(where, n_train=len(X), n_test=len(X_test), **_gpu_memory(device))
                run.add("pipelines", row)
                log(
                    f"{corpus} {model} {precision}: acc {row['accuracy']:.4f} fit "
                    f"{row['fit_s']:.1f} s ({row['epochs']} epochs x {row['epoch_s']:.2f} s)"
                )
                if corpus == "mr" and (precision == "32" or model == "lama"):
                    kept[model, precision] = pipe


def run_seeds(run, cfg, data, device, seeds):
    """MR's classifiers with other seeds (the vectors of seed 0), float32 and bf16."""
    if "mr" not in cfg["corpora"]:
        return
    X, y, X_test, y_test = data["mr"]
    for seed in seeds:
        for kind, models in EMBEDDINGS.items():
            if ("mr", kind) not in data:
                continue
            emb, Z, vectorizer_s = data["mr", kind]
            for model in models:
                for precision in ("32", "bf16"):
                    where = {"corpus": "mr", "model": model, "precision": precision, "seed": seed}
                    if not run.fits(NEEDS["fit"]):
                        run.add("seeds", dict(where, skipped="deadline"))
                        continue
                    try:
                        _, row = fit_pipeline(
                            emb,
                            Z,
                            vectorizer_s,
                            model,
                            y,
                            X_test,
                            y_test,
                            seed=seed,
                            device=str(device),
                            precision=precision,
                            **cfg["overrides"],
                        )
                    except Exception as exc:
                        run.add("seeds", dict(where, error=f"{type(exc).__name__}: {exc}"))
                        continue
                    run.add("seeds", dict(where, accuracy=row["accuracy"], epochs=row["epochs"]))
                    log(f"seed {seed} {model} {precision}: acc {row['accuracy']:.4f}")


# ----------------------------------------------------------------- d. persistence
def save_all(kept, X_test, folder):
    """Save each fitted pipeline three ways, with its predictions; the manifest's entries."""
    import joblib
    import torch

    from sklearn_lama import save_weights
    from sklearn_lama.export import to_onnx

    entries = []
    for (model, precision), pipe in kept.items():
        stem = os.path.join(folder, f"{model}-{precision}")
        proba = pipe.predict_proba(X_test)
        np.save(stem + "-proba.npy", proba)
        if torch.cuda.is_available():
            # cuDNN's recurrent layers use TF32 unless told not to; the CPU has float32 only.
            with torch.backends.cudnn.flags(enabled=True, allow_tf32=False):
                np.save(stem + "-proba-no-tf32.npy", pipe.predict_proba(X_test))
        np.save(stem + "-labels.npy", pipe.predict(X_test).astype(str))
        entry = {"model": model, "precision": precision, "stem": stem, "saved": {}}
        for fmt, save, suffix in (
            ("save_weights", save_weights, ".safetensors"),
            ("joblib", joblib.dump, ".joblib"),
            ("onnx", to_onnx, ".onnx"),
        ):
            try:
                save(pipe, stem + suffix)
                entry["saved"][fmt] = "ok"
            except Exception as exc:
                entry["saved"][fmt] = f"{type(exc).__name__}: {exc}"[:300]
        entries.append(entry)
    with open(os.path.join(folder, "texts.json"), "w") as fh:
        json.dump(list(X_test), fh)
    with open(os.path.join(folder, "manifest.json"), "w") as fh:
        json.dump(entries, fh)
    return entries


def load_check(folder):
    """Load each model saved in ``folder``; compare its predictions (child process, no CUDA)."""
    import warnings

    import joblib
    import torch

    from sklearn_lama import load_weights
    from sklearn_lama.export import OnnxTextClassifier

    with open(os.path.join(folder, "texts.json")) as fh:
        texts = json.load(fh)
    with open(os.path.join(folder, "manifest.json")) as fh:
        entries = json.load(fh)
    loaders = {
        "save_weights": lambda s: load_weights(s + ".safetensors"),
        "joblib": lambda s: joblib.load(s + ".joblib"),
        "onnx": lambda s: OnnxTextClassifier(s + ".onnx"),
    }
    rows = []
    for entry in entries:
        proba = np.load(entry["stem"] + "-proba.npy")
        labels = np.load(entry["stem"] + "-labels.npy")
        for fmt, status in entry["saved"].items():
            row = {"model": entry["model"], "precision": entry["precision"], "format": fmt}
            if status != "ok":
                rows.append(dict(row, error=f"not saved: {status}"))
                continue
            try:
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    loaded = loaders[fmt](entry["stem"])
                    got = np.asarray(loaded.predict_proba(texts))
                    got_labels = np.asarray(loaded.predict(texts)).astype(str)
                if fmt != "onnx":
                    clf = loaded.named_steps["clf"]
                    row["loaded_on"] = str(next(clf.net_.module_.parameters()).device)
                if os.path.exists(entry["stem"] + "-proba-no-tf32.npy"):
                    reference = np.load(entry["stem"] + "-proba-no-tf32.npy")
                    row["max_abs_proba_diff_no_tf32"] = float(np.max(np.abs(got - reference)))
                row.update(
                    same_labels=float(np.mean(got_labels == labels)),
                    max_abs_proba_diff=float(np.max(np.abs(got - proba))),
                    warnings=sorted({str(w.message)[:160] for w in caught}),
                )
            except Exception as exc:
                row["error"] = f"{type(exc).__name__}: {exc}"[:400]
            rows.append(row)
    return {"cuda_visible": torch.cuda.is_available(), "rows": rows}


def run_persistence(run, kept, X_test):
    folder = tempfile.mkdtemp(prefix="gpu-persist-")
    entries = save_all(kept, X_test, folder)
    env = dict(_child_env(), CUDA_VISIBLE_DEVICES="")
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.gpu", "--load-check", folder],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=min(max(run.left(), 30), 300),
    )
    try:
        result = json.loads(proc.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        result = {"error": (proc.stderr or proc.stdout).strip()[-600:]}
    result["saved"] = [{k: e[k] for k in ("model", "precision", "saved")} for e in entries]
    result["n_documents"] = len(X_test)
    run.set("persistence", result)


# ----------------------------------------------------------------- e. grid search
_MEMORY = []


def _memory_probe():
    """A skorch callback recording the GPU memory at each fit's start and its peak."""
    import torch
    from skorch.callbacks import Callback

    class MemoryProbe(Callback):
        def on_train_begin(self, net, **kwargs):
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            _MEMORY.append({"allocated_at_start_mib": torch.cuda.memory_allocated() / 2**20})

        def on_train_end(self, net, **kwargs):
            torch.cuda.synchronize()
            _MEMORY[-1]["peak_mib"] = torch.cuda.max_memory_allocated() / 2**20
            _MEMORY[-1]["allocated_at_end_mib"] = torch.cuda.memory_allocated() / 2**20

    return MemoryProbe()


def run_gridsearch(run, cfg, split, embedded, device):
    """GridSearchCV of LAMA on some of ``embedded``'s ids (``split``'s labels), n_jobs=1."""
    from sklearn.model_selection import GridSearchCV

    from sklearn_lama import LAMAClassifier

    _, Z, _ = embedded
    y = split[1]
    n = min(cfg["grid"]["documents"], len(y))
    rows = np.random.default_rng(0).permutation(len(y))[:n]
    Z, y = Z[rows], np.asarray(y)[rows]
    _MEMORY.clear()
    probe = [_memory_probe()] if device.type == "cuda" else None
    search = GridSearchCV(
        LAMAClassifier(
            device=str(device),
            max_epochs=cfg["grid"]["max_epochs"],
            random_state=0,
            callbacks=probe,
        ),
        GRID,
        cv=cfg["grid"]["cv"],
        n_jobs=1,
    )
    start = time.perf_counter()
    search.fit(Z, y)
    order = _candidate_order(search, cfg["grid"]["cv"]) + [dict(search.best_params_, refit=True)]
    fits = [dict(m, params=p) for m, p in zip(_MEMORY, order)]
    run.set(
        "gridsearch",
        {
            "grid": GRID,
            "documents": n,
            "cv": cfg["grid"]["cv"],
            "max_epochs": cfg["grid"]["max_epochs"],
            "fits": fits,
            "n_fits": len(order),
            "best_params": search.best_params_,
            "wall_s": time.perf_counter() - start,
        },
    )


def _candidate_order(search, cv):
    """Candidates in the order GridSearchCV fits them: each candidate on every split in turn."""
    return [p for p in search.cv_results_["params"] for _ in range(cv)]


# ----------------------------------------------------------------- the run
def _child_env():
    return dict(
        os.environ,
        PYTHONPATH=os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")])),
    )


def cpu_cells(cfg, locale):
    """The yardstick on the CPU: ``(target, kwargs)`` of each cell, one torch thread each."""
    cells = [
        (
            "benchmarks.cost:cell",
            dict(
                corpus=corpus,
                model=model,
                threads=1,
                train_limit=cfg["train_limit"],
                test_limit=cfg["test_limit"],
                overrides=cfg["overrides"],
                count_docs=32,
                profile_docs=32,
            ),
        )
        for corpus in cfg["corpora"]
        for model in ("fasttext", *OURS)
    ]
    cells.append(("benchmarks.translation:cell", translation_kwargs(cfg, "cpu", locale)))
    return cells


def translation_kwargs(cfg, device, locale):
    from .translation import SIZES as TRANSLATION

    t = cfg["translation"]
    return dict(
        language="fr",
        model_key="duo",
        budget_s=t["budget_s"],
        train_limit=t["train_limit"],
        curve_limit=t["curve_limit"],
        test_limit=t["test_limit"],
        model={**TRANSLATION["full"]["model"], "device": device},
        directory=locale,
    )


def _cpu_yardstick(run, cfg, locale):
    cells = cpu_cells(cfg, locale)
    missing = fasttext_status()
    runnable = [(t, k) for t, k in cells if not (k.get("model") == "fasttext" and missing)]
    for _, k in cells:
        if k.get("model") == "fasttext" and missing:
            run.add("cpu", {"corpus": k["corpus"], "model": "fasttext", "error": missing})

    def done(kwargs, result):
        target, kw = kwargs
        if target.endswith("translation:cell"):
            result = {k: v for k, v in result.items() if k != "examples"}
            run.add("translation", dict(_translation_row(result), device="cpu"))
        else:
            result = {k: v for k, v in result.items() if k not in ("profile", "flops_by_op")}
            run.add("cpu", dict(result, corpus=kw["corpus"], model=kw["model"]))
        log(f"cpu {target.split('.')[1]} {kw.get('corpus', '')} {kw.get('model', '')} done")

    # The cells have two targets, which harness.run_cells (one target) cannot mix.
    from concurrent.futures import ThreadPoolExecutor

    pool = ThreadPoolExecutor(cfg["cpu_jobs"])
    futures = [pool.submit(lambda t=t, k=k: done((t, k), run_cell(t, 1, k))) for t, k in runnable]
    return pool, futures


def _translation_row(result):
    """Updates, seconds, updates/s and BLEU of a ``translation`` cell's result."""
    if "error" in result:
        return {"error": result["error"]}
    last = result["history"][-1]
    return {
        "epochs": len(result["history"]),
        "updates": last["steps"],
        "train_s": last["seconds"],
        "updates_per_s": last["steps"] / last["seconds"],
        "valid_perplexity": min(h["valid_perplexity"] for h in result["history"]),
        "test_bleu": result["test_bleu"],
        "n_train": result["n_train"],
        "n_test": result["n_test"],
        "n_parameters": result["n_parameters"],
        "fit_s": result["fit_s"],
    }


def measure(args):
    import torch

    cfg = dict(SIZES["quick" if args.quick else "full"])
    cfg["corpora"] = args.corpus or cfg["corpora"]
    parts = args.parts or PARTS
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    precisions = [p for p in PRECISIONS if device.type == "cuda" or p != "16-mixed"]
    meta = stamp("quick" if args.quick else "full", 1)
    meta["machine"]["device"] = str(device)
    # The device machine's copy of the working tree may carry another checkout's history.
    meta["git_commit"] = os.environ.get("BENCH_COMMIT", meta["git_commit"])
    meta.update(command="python -m benchmarks.gpu " + " ".join(sys.argv[1:]), wall_s=0)
    payload = {
        "name": args.name,
        "title": args.title,
        "meta": meta,
        "config": {**cfg, "precisions": precisions, "deadline_s": args.deadline, "parts": parts},
        "gpu": device_facts(device),
        "cpu": cpu_facts(),
        "parts": {},
    }
    os.makedirs(args.out_dir, exist_ok=True)
    run = Run(args.out_dir, payload, args.deadline)
    run.flush()
    log(f"device {payload['gpu']}; cpu {payload['cpu']}")
    # The embeddings are CPU work, fitted in their own processes while the checks run.
    if "pipelines" in parts:
        vectorizers = start_vectorizers(cfg, tempfile.mkdtemp(prefix="gpu-vectors-"))
    if "tests" in parts:
        log("a. pytest -k cuda and check_estimator, at once")
        run_correctness(run, cfg, device, args.out_dir)
    # The yardstick starts after the checks, so that they do not slow it down.
    pool, futures = _cpu_yardstick(run, cfg, args.locale) if "yardstick" in parts else (None, [])
    run.payload["meta"]["loadavg_yardstick_start"] = round(os.getloadavg()[0], 2)

    # MR first, then the checks that reuse its pipelines, then the rest.
    kept, data = {}, {}
    first, *rest = cfg["corpora"] if "pipelines" in parts else [None]
    if first is not None:
        log(f"b. pipelines on {first}")
        run_pipelines(run, cfg, first, vectorizers, device, precisions, kept, data)
    if "persistence" in parts and kept and run.fits(NEEDS["persistence"]):
        log("d. persistence")
        X_test = list(data[first][2][: cfg["persist_docs"]])
        try:
            run_persistence(run, kept, X_test)
        except Exception as exc:
            run.set("persistence", {"error": f"{type(exc).__name__}: {exc}"})
    if "gridsearch" in parts and (first, "word2vec") in data and run.fits(NEEDS["gridsearch"]):
        log("e. gridsearch")
        try:
            run_gridsearch(run, cfg, data[first], data[first, "word2vec"], device)
        except Exception as exc:
            run.set("gridsearch", {"error": f"{type(exc).__name__}: {exc}"})
    if "translation" in parts:
        log("c. translation")
        if run.fits(NEEDS["translation"]):
            result = run_cell(
                "benchmarks.translation:cell", 1, translation_kwargs(cfg, str(device), args.locale)
            )
            run.add("translation", dict(_translation_row(result), device=str(device)))
        else:
            run.add("translation", {"device": str(device), "skipped": "deadline"})
    for corpus in rest:
        log(f"b. pipelines on {corpus}")
        run_pipelines(run, cfg, corpus, vectorizers, device, precisions, kept, data)
    if "seeds" in parts:
        log("f. seeds")
        run_seeds(run, cfg, data, device, cfg["seeds"])

    if futures:
        log("waiting for the CPU yardstick")
    for future in futures:
        try:
            future.result(timeout=max(run.left(), 1))
        except Exception as exc:  # the deadline: what finished is written
            log(f"cpu cell unfinished: {type(exc).__name__}")
            break
    with run.lock:
        run.flush(figure=True)
    log("done")
    if pool is not None:
        pool.shutdown(wait=False, cancel_futures=True)
        # Cells still running at the deadline are left to the machine's end.
        os._exit(0)


# ----------------------------------------------------------------- report
def _by(rows, **where):
    return [r for r in rows if all(r.get(k) == v for k, v in where.items())]


def _one(rows, **where):
    found = [r for r in _by(rows, **where) if "error" not in r and "skipped" not in r]
    return found[0] if found else None


def targets(parts):
    """The issue's three targets on MR, each ``(text, met)`` with ``met`` None when unmeasured."""
    gpu, cpu = parts.get("pipelines", []), parts.get("cpu", [])
    out = []
    for model in OURS:
        g, c = (
            _one(gpu, corpus="mr", model=model, precision="32"),
            _one(cpu, corpus="mr", model=model),
        )
        if g is None or c is None:
            out.append((f"{SHORT[model]} epoch on MR: not measured on both devices.", None))
            continue
        best = min(
            (r for r in _by(gpu, corpus="mr", model=model) if "epoch_s" in r),
            key=lambda r: r["epoch_s"],
        )
        speedup, best_speedup = c["epoch_s"] / g["epoch_s"], c["epoch_s"] / best["epoch_s"]
        met = best_speedup >= EPOCH_SPEEDUP_TARGET
        out.append(
            (
                f"{SHORT[model]} epoch on MR >= {EPOCH_SPEEDUP_TARGET:g}x faster on the GPU than "
                f"one CPU thread: {sig(c['epoch_s'])} s on the CPU, {sig(g['epoch_s'])} s on the "
                f"GPU in float32 ({speedup:.1f}x)"
                + (
                    f", {sig(best['epoch_s'])} s in {best['precision']} ({best_speedup:.1f}x)"
                    if best is not g
                    else " (the fastest precision)"
                )
                + f": {'met' if met else 'missed'}.",
                met,
            )
        )
    ft = _one(cpu, corpus="mr", model="fasttext")
    for model in OURS:
        g = _one(gpu, corpus="mr", model=model, precision="32")
        if g is None or ft is None:
            out.append((f"{SHORT[model]} pipeline fit on MR vs fastText: not measured.", None))
            continue
        best = min(
            (r for r in _by(gpu, corpus="mr", model=model) if "fit_s" in r),
            key=lambda r: r["fit_s"],
        )
        met = best["fit_s"] <= ft["fit_s"]
        out.append(
            (
                f"{SHORT[model]} whole pipeline fit on MR within tuned fastText's CPU fit "
                f"({sig(ft['fit_s'])} s): {sig(best['fit_s'])} s ({best['precision']}), of which "
                f"the vectorizer on the CPU {sig(best['vectorizer_s'])} s "
                f"({best['vectorizer_share']:.0%}) and the classifier on the GPU "
                f"{sig(best['classifier_s'])} s: {'met' if met else 'missed'}"
                + "".join(
                    f"; the {step} alone takes longer than fastText's whole fit"
                    for step in ("vectorizer", "classifier")
                    if not met and best[f"{step}_s"] > ft["fit_s"]
                )
                + ".",
                met,
            )
        )
    seeds = parts.get("seeds", []) + [dict(r, seed=0) for r in _by(gpu, corpus="mr")]
    for model in OURS:
        acc = {
            p: [r["accuracy"] for r in _by(seeds, model=model, precision=p) if "accuracy" in r]
            for p in ("32", "bf16")
        }
        if len(acc["32"]) < 2 or not acc["bf16"]:
            out.append(
                (f"{SHORT[model]} bf16 accuracy vs float32's seed spread: not measured.", None)
            )
            continue
        low, high, mean16 = min(acc["32"]), max(acc["32"]), float(np.mean(acc["bf16"]))
        met = low <= mean16 <= high
        out.append(
            (
                f"{SHORT[model]} bf16 accuracy on MR within float32's seed spread: bf16 mean "
                f"{mean16:.4f} over {len(acc['bf16'])} seed(s), float32 {np.mean(acc['32']):.4f} "
                f"± {np.std(acc['32']):.4f} (range {low:.4f}-{high:.4f}, {len(acc['32'])} "
                f"seeds): {'met' if met else 'missed'}.",
                met,
            )
        )
    return out


def render(payload):
    """The report and plot of a run's payload (also of one read back from JSON)."""
    parts, gpu, cfg = payload["parts"], payload["gpu"], payload["config"]
    rep = Report(payload["name"], payload.get("title", TITLE))
    rep.text(
        f"GPU: {gpu.get('name', 'none (CPU run)')}"
        + (
            f", {gpu['memory_gib']} GiB, compute capability {gpu['capability']}, "
            f"{gpu['multiprocessors']} multiprocessors, driver {gpu.get('driver', '?')}"
            if "name" in gpu
            else ""
        )
        + f"; torch {gpu['torch']} (CUDA {gpu['cuda']}). CPU of the same machine: "
        f"{payload['cpu'].get('logical_cpus')} logical CPUs, "
        f"{payload['cpu'].get('threads_per_core', '?')} thread(s) per core."
    )
    if cfg["train_limit"] is not None:
        rep.text(
            f"Quick size: at most {cfg['train_limit']} training and {cfg['test_limit']} test "
            f"documents, {cfg['overrides']}: these numbers check the script, not the models."
        )
    _render_tests(rep, parts)
    _render_pipelines(rep, parts, cfg)
    _render_translation(rep, parts, cfg)
    _render_persistence(rep, parts)
    _render_gridsearch(rep, parts)
    _render_seeds(rep, parts)
    found = targets(parts)
    if any(met is not None for _, met in found):
        rep.text("**Targets** (MR):")
        rep.bullets(text for text, _ in found)
    return rep, _plotter(parts)


def _render_tests(rep, parts):
    p = parts.get("pytest")
    if p:
        counts = ", ".join(f"{n} {k}" for k, n in p["counts"].items())
        rep.text(
            f"**CUDA tests** (``{p['command']}``, exit {p['exit']}): {counts or 'no summary'}."
        )
        rep.bullets(p["failures"] + p["skips"])
    numerics = parts.get("numerics")
    if numerics:
        rep.text(
            "**LAMA's GRU output dtype** under each precision on this run's device: "
            + (
                numerics.get("error")
                or ", ".join(
                    f"{p}: {', '.join(d)}" for p, d in numerics["lama_gru_output_dtype"].items()
                )
            )
            + "."
        )
    checks = parts.get("checks", [])
    if checks:
        rep.text("**check_estimator** with the device of this run:")
        rep.table(
            ["classifier", "checks", "passed", "skipped", "failed", "failures"],
            [
                [
                    SHORT[c["model"]],
                    str(c.get("checks", "")),
                    str(c.get("passed", "")),
                    ", ".join(c.get("skipped_checks", [])),
                    str(len(c.get("failed", []))),
                    c.get("error")
                    or c.get("skipped")
                    or "; ".join(
                        f"{f['check']}: {' '.join(f['error'].split())[:160]}" for f in c["failed"]
                    ),
                ]
                for c in checks
            ],
        )


def _render_pipelines(rep, parts, cfg):
    gpu, cpu = parts.get("pipelines", []), parts.get("cpu", [])
    if not gpu and not cpu:
        return
    rep.text(
        "**Default pipelines**, random_state=0, raw text in. The classifier runs on the device "
        "named; the vectorizer always runs on the CPU (fitted once per corpus and embedding and "
        "counted in every pipeline's fit). CPU rows: the same machine's CPU, one torch thread "
        "per process, every CPU cell at once beside the GPU runs. Vectors: the vectorizer's "
        "seconds and share of the fit. Epoch s: mean seconds per epoch (training batches, "
        "validation, callbacks); tokens/s: training tokens over training-batch seconds; "
        "docs/s: the test split predicted from raw text; speedup: the CPU's epoch time over "
        "this row's."
    )
    for corpus in cfg["corpora"]:
        rows = []
        ft = _one(cpu, corpus=corpus, model="fasttext")
        for model in OURS:
            c = _one(cpu, corpus=corpus, model=model)
            for r in [c] + _by(gpu, corpus=corpus, model=model):
                if r is None:
                    continue
                where = "CPU, 32" if r is c else f"GPU, {r['precision']}"
                if "error" in r or "skipped" in r:
                    rows.append(
                        [SHORT[model], where, r.get("error", r.get("skipped"))[:80]] + [""] * 8
                    )
                    continue
                rows.append(
                    [
                        SHORT[model],
                        where,
                        f"{r['accuracy']:.4f}",
                        sig(r["fit_s"]),
                        f"{sig(r['vectorizer_s'])} ({r['vectorizer_s'] / r['fit_s']:.0%})",
                        str(r["epochs"]),
                        sig(r["epoch_s"]),
                        f"{r['train_tokens_per_s']:,.0f}",
                        f"{r['docs_per_s']:,.0f}",
                        f"{c['epoch_s'] / r['epoch_s']:.1f}" if c and "epoch_s" in c else "",
                        f"{r['max_memory_allocated_mib']:,.0f}"
                        if "max_memory_allocated_mib" in r
                        else "",
                    ]
                )
        if ft is not None:
            rows.append(
                ["fastText (tuned)", "CPU", f"{ft['accuracy']:.4f}", sig(ft["fit_s"])]
                + [""] * 4
                + [f"{ft['docs_per_s']:,.0f}", "", ""]
            )
        else:
            missing = _by(cpu, corpus=corpus, model="fasttext")
            if missing:
                rows.append(
                    ["fastText (tuned)", "CPU", missing[0].get("error", "")[:80]] + [""] * 8
                )
        rep.text(f"**{corpus}**")
        rep.table(
            [
                "model",
                "device, precision",
                "accuracy",
                "fit s",
                "vectors s",
                "epochs",
                "epoch s",
                "tokens/s",
                "docs/s",
                "speedup",
                "GPU MiB",
            ],
            rows,
        )


def _render_translation(rep, parts, cfg):
    rows = parts.get("translation", [])
    if not rows:
        return
    t = cfg["translation"]
    rep.text(
        f"**DuoTranslator** (the translation part's full-size model), English → French gettext "
        f"pairs, {t['budget_s']} s of training (validation included) on each device, greedy "
        f"BLEU on the first {t['test_limit']} test pairs; the CPU run has one torch thread."
    )
    rep.table(
        ["device", "updates", "training s", "updates/s", "epochs", "best valid ppl", "BLEU"],
        [
            [r["device"], r.get("error", r.get("skipped", ""))[:80]] + [""] * 5
            if "updates" not in r
            else [
                r["device"],
                f"{r['updates']:,}",
                sig(r["train_s"]),
                sig(r["updates_per_s"]),
                str(r["epochs"]),
                sig(r["valid_perplexity"]),
                f"{r['test_bleu']:.2f}",
            ]
            for r in rows
        ],
    )


def _render_persistence(rep, parts):
    p = parts.get("persistence")
    if not p:
        return
    if "rows" not in p:
        rep.text(f"**Persistence**: failed: {p.get('error', '')[:300]}")
        return
    rep.text(
        f"**Persistence**: pipelines fitted on the GPU (MR), saved three ways, loaded in a new "
        f"process with CUDA_VISIBLE_DEVICES='' (CUDA seen there: {p['cuda_visible']}) and run "
        f"on {p['n_documents']} test documents against the GPU's own predictions (TF32 off: "
        "against the GPU's predictions with torch.backends.cudnn.allow_tf32 False, where "
        "measured)."
    )
    rep.table(
        [
            "model",
            "precision",
            "format",
            "loaded on",
            "same labels",
            "largest Δ proba",
            "TF32 off",
            "notes",
        ],
        [
            [
                SHORT[r["model"]],
                r["precision"],
                r["format"],
                r.get("loaded_on", "onnxruntime" if "error" not in r else ""),
                f"{r['same_labels']:.1%}" if "same_labels" in r else "",
                f"{r['max_abs_proba_diff']:.1e}" if "max_abs_proba_diff" in r else "",
                f"{r['max_abs_proba_diff_no_tf32']:.1e}"
                if "max_abs_proba_diff_no_tf32" in r
                else "",
                (r.get("error") or "; ".join(r.get("warnings", [])))[:160],
            ]
            for r in p["rows"]
        ],
    )


def _render_gridsearch(rep, parts):
    g = parts.get("gridsearch")
    if not g:
        return
    if "fits" not in g:
        rep.text(f"**GridSearchCV**: failed: {g.get('error', '')[:300]}")
        return
    rep.text(
        f"**GridSearchCV(n_jobs=1)** of LAMA over {g['grid']} on {g['documents']} MR documents, "
        f"cv={g['cv']}, max_epochs={g['max_epochs']} ({g['n_fits']} fits, {sig(g['wall_s'])} s): "
        "the GPU memory allocated when each fit starts, its peak (reset before each fit) and "
        "what is left at its end."
    )
    rep.table(
        ["fit", "parameters", "allocated at start MiB", "peak MiB", "allocated at end MiB"],
        [
            [
                str(i + 1),
                str(f["params"]),
                sig(f["allocated_at_start_mib"]),
                sig(f["peak_mib"]),
                sig(f["allocated_at_end_mib"]),
            ]
            for i, f in enumerate(g["fits"])
        ],
    )


def _render_seeds(rep, parts):
    seeds = parts.get("seeds", [])
    if not seeds:
        return
    gpu = parts.get("pipelines", [])
    rows = []
    for model in OURS:
        for p in ("32", "bf16"):
            first = _one(gpu, corpus="mr", model=model, precision=p)
            acc = ([first["accuracy"]] if first else []) + [
                r["accuracy"] for r in _by(seeds, model=model, precision=p) if "accuracy" in r
            ]
            if acc:
                rows.append(
                    [
                        SHORT[model],
                        p,
                        ", ".join(f"{a:.4f}" for a in acc),
                        f"{np.mean(acc):.4f} ± {np.std(acc):.4f}",
                    ]
                )
    rep.text(
        "**Seeds on MR** (GPU; the classifier's random_state 0, 1, 2 on the vectors of seed 0):"
    )
    rep.table(["model", "precision", "accuracy per seed", "mean ± std"], rows)


def _plotter(parts):
    def plot(fig):
        gpu, cpu = parts.get("pipelines", []), parts.get("cpu", [])
        corpora = list(dict.fromkeys(r["corpus"] for r in gpu + cpu if "corpus" in r))
        for i, corpus in enumerate(corpora):
            ax = fig.add_subplot(1, max(len(corpora), 1), i + 1)
            labels, bars = [], {}
            for model in OURS:
                labels.append(SHORT[model])
                c = _one(cpu, corpus=corpus, model=model)
                bars.setdefault("CPU 32", []).append(c["epoch_s"] if c else 0)
                for p in PRECISIONS:
                    g = _one(gpu, corpus=corpus, model=model, precision=p)
                    bars.setdefault(f"GPU {p}", []).append(g["epoch_s"] if g else 0)
            width = 0.8 / len(bars)
            for j, (name, values) in enumerate(bars.items()):
                ax.bar([k + j * width for k in range(len(labels))], values, width, label=name)
            ax.set_xticks([k + 0.4 - width / 2 for k in range(len(labels))], labels)
            ax.set(title=corpus, ylabel="seconds per epoch", yscale="log")
            ax.grid(True, axis="y", alpha=0.3)
            ax.legend(fontsize=7)

    return plot


def write(payload, out_dir, figure=True):
    """Write ``gpu.json``, ``.md`` and ``.rst`` in ``out_dir``, and ``gpu.png`` with ``figure``."""
    from ._env import describe
    from ._report import _figure

    os.makedirs(out_dir, exist_ok=True)
    stem = os.path.join(out_dir, payload["name"])
    with open(stem + ".json", "w") as fh:
        json.dump(payload, fh, indent=1)
    report, plot = render(payload)
    lines = describe(payload["meta"])
    with open(stem + ".md", "w") as fh:
        fh.write(report.markdown(lines))
    with open(stem + ".rst", "w") as fh:
        fh.write(report.rst(lines))
    if figure:
        _figure(plot, payload["meta"], stem + ".png")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="tiny subsets: checks the script")
    p.add_argument("--out-dir", default=os.path.join(ROOT, "benchmarks", "results"))
    p.add_argument(
        "--deadline",
        type=float,
        default=float("inf"),
        help="seconds after which no further part or fit starts; the report is written then",
    )
    p.add_argument(
        "--locale",
        default=None,
        help="folder of gettext catalogues (<lang>/LC_MESSAGES/*.mo) for the translation part "
        "(default: the system's)",
    )
    p.add_argument(
        "--parts",
        type=lambda text: [part for part in text.split(",") if part],
        default=None,
        help=f"comma-separated parts to run, among {','.join(PARTS)} (default: all)",
    )
    p.add_argument(
        "--corpus",
        action="append",
        default=None,
        choices=["mr", "r8"],
        help="corpora of the pipelines, MR first if present (default: mr and r8); repeatable",
    )
    p.add_argument("--name", default=NAME, help=f"stem of the result files (default {NAME})")
    p.add_argument("--title", default=TITLE, help="heading of the reports")
    p.add_argument("--render", metavar="JSON", help="measure nothing: write the reports again")
    p.add_argument("--load-check", metavar="DIR", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    unknown = set(args.parts or ()) - set(PARTS)
    if unknown:
        p.error(f"unknown part(s) {', '.join(sorted(unknown))}; choose among {', '.join(PARTS)}")
    if args.load_check:
        print(json.dumps(load_check(args.load_check)), flush=True)
        return
    if args.render:
        with open(args.render) as fh:
            payload = json.load(fh)
        write(payload, os.path.dirname(os.path.abspath(args.render)))
        return
    measure(args)


if __name__ == "__main__":
    main()
