"""GridSearchCV(n_jobs=2) with torch limited to its share of the cores, and oversubscribed.

joblib's loky backend starts its workers with ``OMP_NUM_THREADS`` (and the
other thread-count variables) set to ``cpu_count() // n_jobs`` unless the
parent sets them, and torch reads that variable when it starts in a worker.
This script times the same small search both ways, alternating, in one run:

- ``limited``: joblib's default, each worker's torch gets its share of cores;
- ``oversubscribed``: ``parallel_config(inner_max_num_threads=2)``, each of the
  two workers runs 2 torch threads (4 threads on a 2-core machine).

Every worker's torch thread count is read back, not assumed. Run it on a
quiet machine without ``OMP_NUM_THREADS`` set (the limited mode would use it)::

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
from joblib import Parallel, cpu_count, delayed, parallel_config
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from sklearn_lama import LAMAClassifier, Word2VecVectorizer  # noqa: E402
from sklearn_lama.datasets import load_mr  # noqa: E402

OUT = os.path.join(ROOT, "benchmarks", "results", "gridsearch_threads")
MODES = {"limited": {}, "oversubscribed": {"inner_max_num_threads": 2}}
GRID = {"clf__n_heads": [5, 15], "clf__hidden_size": [25, 50]}


def _worker_threads():
    import torch

    return torch.get_num_threads()


def _search(texts, labels, config):
    pipe = Pipeline([
        ("emb", Word2VecVectorizer(random_state=0)),
        ("clf", LAMAClassifier(max_epochs=2, random_state=0)),
    ])
    search = GridSearchCV(pipe, GRID, cv=2, n_jobs=2, refit=False)
    with parallel_config(backend="loky", **config):
        # Same executor (and so the same worker environment) as the search uses.
        threads = sorted(set(Parallel(n_jobs=2)(delayed(_worker_threads)() for _ in range(8))))
        start = time.perf_counter()
        search.fit(texts, labels)
        seconds = time.perf_counter() - start
    return seconds, threads, search.cv_results_["mean_test_score"].round(4).tolist()


def _stamp():
    cpu = platform.processor()
    try:
        with open("/proc/cpuinfo") as info:
            cpu = next(line.split(":", 1)[1].strip() for line in info if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                            capture_output=True, text=True).stdout.strip()
    return {
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "machine": f"{cpu}, {cpu_count()} cores usable (joblib.cpu_count), {platform.platform()}",
        "versions": {name: metadata.version(name)
                     for name in ("torch", "scikit-learn", "skorch", "joblib", "threadpoolctl")},
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
            seconds, threads, scores = _search(texts, labels, config)
            runs[mode].append({"seconds": round(seconds, 2), "worker_torch_threads": threads,
                               "mean_test_scores": scores, "loadavg_before": load})
            print(f"repeat {repeat} {mode}: {seconds:.1f} s, worker torch threads {threads}", flush=True)
    meta["loadavg_end"] = round(os.getloadavg()[0], 2)
    medians = {mode: statistics.median(r["seconds"] for r in rs) for mode, rs in runs.items()}
    result = {
        **meta,
        "setup": f"GridSearchCV(Pipeline(Word2VecVectorizer(), LAMAClassifier(max_epochs=2)), "
                 f"{GRID}, cv=2, n_jobs=2, refit=False) on {n_docs} MR documents",
        "runs": runs,
        "median_seconds": medians,
        "ratio_oversubscribed_to_limited": round(medians["oversubscribed"] / medians["limited"], 3),
    }
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT + ".json", "w") as fh:
        json.dump(result, fh, indent=2)
    with open(OUT + ".md", "w") as fh:
        fh.write(_markdown(result))
    print(f"ratio oversubscribed / limited: {result['ratio_oversubscribed_to_limited']}")


def _markdown(result):
    lines = [
        "# GridSearchCV(n_jobs=2): torch threads per worker",
        "",
        result["setup"] + ".",
        "",
        "| mode | torch threads per worker | wall time per search (s) | load average before each | median (s) |",
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
    lines += [
        "",
        f"Oversubscribed / limited (medians): **{result['ratio_oversubscribed_to_limited']}**. "
        f"All runs give {same} cross-validation scores.",
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
