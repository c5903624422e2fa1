"""A 4-candidate search on 2 workers, torch limited to one thread per fit, and oversubscribed.

The classifiers' ``torch_threads=None`` runs every fit with one torch thread,
whatever the worker's torch started with. This script times the same small
search in several modes, alternating, in one run:

- ``loky``: joblib's default backend, ``n_jobs=2``, ``torch_threads=None``;
- ``loky, 2 threads``: the same with ``torch_threads=2``: each of the two
  workers runs 2 torch threads (4 threads on a 2-core machine);
- ``dask``: joblib's Dask backend on a ``distributed.LocalCluster`` of 2
  single-threaded worker processes, ``torch_threads=None``;
- ``dask, 2 threads``: the same with ``torch_threads=2``;
- ``dask, 1 worker``: a cluster of 1 worker, ``torch_threads=None`` (the
  Dask speed-up is its time over that of ``dask``).

The Dask workers are started with ``OMP_NUM_THREADS=2`` (and MKL's,
OpenBLAS's), which Dask's nanny would otherwise set to 1, so that only the
estimators' parameter limits torch. Each fit's torch thread count is read
back, not assumed. Needs the ``[dask]`` extra. Run it on a quiet machine::

    python benchmarks/bench_gridsearch_threads.py [--docs 3000] [--repeats 3]

It writes ``benchmarks/results/gridsearch_threads.json`` and ``.md``.
"""

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from importlib import metadata

import numpy as np
from joblib import cpu_count, parallel_config
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline
from skorch.callbacks import Callback

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from sklearn_lama import LAMAClassifier, Word2VecVectorizer  # noqa: E402
from sklearn_lama.datasets import load_mr  # noqa: E402

OUT = os.path.join(ROOT, "benchmarks", "results", "gridsearch_threads")
# (backend, workers, torch_threads)
MODES = {
    "loky": ("loky", 2, None),
    "loky, 2 threads": ("loky", 2, 2),
    "dask": ("dask", 2, None),
    "dask, 2 threads": ("dask", 2, 2),
    "dask, 1 worker": ("dask", 1, None),
}
GRID = {"clf__n_heads": [5, 15], "clf__hidden_size": [25, 50]}
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


class FitThreads(Callback):
    """Scores each fit by the torch threads it trained with (read at the first epoch)."""

    def on_epoch_begin(self, net, **kwargs):
        import torch

        if len(net.history) == 1:
            net.history.record("torch_threads", torch.get_num_threads())


def _threads_scorer(estimator, X, y):
    return estimator[-1].net_.history[0, "torch_threads"]


def _search(texts, labels, backend, workers, torch_threads):
    pipe = Pipeline(
        [
            ("emb", Word2VecVectorizer(random_state=0)),
            (
                "clf",
                LAMAClassifier(
                    max_epochs=2,
                    random_state=0,
                    torch_threads=torch_threads,
                    callbacks=[FitThreads()],
                ),
            ),
        ]
    )
    search = GridSearchCV(
        pipe,
        GRID,
        cv=2,
        n_jobs=workers,
        refit=False,
        scoring={"accuracy": "accuracy", "threads": _threads_scorer},
    )
    if backend == "dask":
        import distributed

        old = {name: os.environ.get(name) for name in THREAD_VARIABLES}
        os.environ.update({name: "2" for name in THREAD_VARIABLES})
        try:
            cluster = distributed.LocalCluster(
                n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None
            )
        finally:
            for name, value in old.items():
                os.environ.pop(name, None) if value is None else os.environ.update({name: value})
        with cluster, distributed.Client(cluster), parallel_config(backend="dask"):
            start = time.perf_counter()
            search.fit(texts, labels)
            seconds = time.perf_counter() - start
    else:
        with parallel_config(backend="loky"):
            start = time.perf_counter()
            search.fit(texts, labels)
            seconds = time.perf_counter() - start
    results = search.cv_results_
    threads = sorted(
        {int(t) for k in ("split0_test_threads", "split1_test_threads") for t in results[k]}
    )
    return seconds, threads, results["mean_test_accuracy"].round(4).tolist()


def _stamp():
    cpu = platform.processor()
    try:
        with open("/proc/cpuinfo") as info:
            cpu = next(
                line.split(":", 1)[1].strip() for line in info if line.startswith("model name")
            )
    except (OSError, StopIteration):
        pass
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    return {
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "machine": f"{cpu}, {cpu_count()} cores usable (joblib.cpu_count), {platform.platform()}",
        "versions": {
            name: metadata.version(name)
            for name in ("torch", "scikit-learn", "skorch", "joblib", "dask", "distributed")
        },
        "python": platform.python_version(),
        "commit": commit or "unknown",
        "parent_OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS"),
        "loadavg_start": round(os.getloadavg()[0], 2),
    }


def main(n_docs, repeats):
    meta = _stamp()
    texts, labels = load_mr(return_X_y=True)
    keep = np.random.RandomState(0).permutation(len(texts))[:n_docs]
    texts, labels = [texts[i] for i in keep], labels[keep]
    runs = {mode: [] for mode in MODES}
    for repeat in range(repeats):
        for mode, config in MODES.items():
            load = round(os.getloadavg()[0], 2)
            seconds, threads, scores = _search(texts, labels, *config)
            runs[mode].append(
                {
                    "seconds": round(seconds, 2),
                    "worker_torch_threads": threads,
                    "mean_test_scores": scores,
                    "loadavg_before": load,
                }
            )
            print(
                f"repeat {repeat} {mode}: {seconds:.1f} s, worker torch threads {threads}",
                flush=True,
            )
    meta["loadavg_end"] = round(os.getloadavg()[0], 2)
    medians = {mode: statistics.median(r["seconds"] for r in rs) for mode, rs in runs.items()}
    result = {
        **meta,
        "setup": f"GridSearchCV(Pipeline(Word2VecVectorizer(), LAMAClassifier(max_epochs=2)), "
        f"{GRID}, cv=2, n_jobs=<workers>, refit=False) on {n_docs} MR documents",
        "runs": runs,
        "median_seconds": medians,
        "ratio_oversubscribed_to_limited": {
            backend: round(medians[f"{backend}, 2 threads"] / medians[backend], 3)
            for backend in ("loky", "dask")
        },
        "dask_speedup_2_workers_over_1": round(medians["dask, 1 worker"] / medians["dask"], 3),
    }
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT + ".json", "w") as fh:
        json.dump(result, fh, indent=2)
    with open(OUT + ".md", "w") as fh:
        fh.write(_markdown(result))
    print(
        f"ratio oversubscribed / limited: {result['ratio_oversubscribed_to_limited']}; "
        f"Dask speed-up, 2 workers over 1: {result['dask_speedup_2_workers_over_1']}"
    )


def _markdown(result):
    lines = [
        "# A 4-candidate search on 2 workers (loky, Dask): torch threads per fit",
        "",
        result["setup"] + ".",
        "",
        "| mode | torch threads per fit | wall time per search (s) "
        "| load average before each | median (s) |",
        "|---|---|---|---|---|",
    ]
    scores = set()
    for mode, runs in result["runs"].items():
        threads = sorted({t for r in runs for t in r["worker_torch_threads"]})
        times = ", ".join(f"{r['seconds']:.1f}" for r in runs)
        loads = ", ".join(f"{r['loadavg_before']:.2f}" for r in runs)
        median = result["median_seconds"][mode]
        lines.append(f"| {mode} | {threads} | {times} | {loads} | {median:.1f} |")
        scores.update(tuple(r["mean_test_scores"]) for r in runs)
    same = "the same" if len(scores) == 1 else "different"
    ratios = ", ".join(f"{k} {v}" for k, v in result["ratio_oversubscribed_to_limited"].items())
    lines += [
        "",
        f"2 threads per fit / 1 (medians): **{ratios}**. Dask speed-up, 2 workers over 1 "
        f"(medians): **{result['dask_speedup_2_workers_over_1']}**. All runs give {same} "
        "cross-validation scores.",
        "",
        f"date: {result['date']}; machine: {result['machine']}; python {result['python']}, "
        + ", ".join(f"{k} {v}" for k, v in result["versions"].items())
        + f"; commit {result['commit']}; OMP_NUM_THREADS in the parent: "
        f"{result['parent_OMP_NUM_THREADS']}; 1-minute load average {result['loadavg_start']} "
        f"at start, {result['loadavg_end']} at end (other jobs shared the CPU when it exceeds "
        "the core count).",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=3000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    main(args.docs, args.repeats)
