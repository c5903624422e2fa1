"""Latency of one document: a fitted pipeline serving one request at a time.

Each model's default pipeline (and tuned TF-IDF + LogisticRegression beside
them) is fitted on a stratified subset of MR's training split for a few
epochs (the latency needs a fitted network, not a well-trained one), then
predicts the test split's documents one call each, from raw text, in one
process with one thread, as a model behind an API does: ``predict([text])``.
The wall time of every call is kept; the report gives its median (p50) and
99th percentile (p99) in milliseconds after a warm-up of a few calls.
"""

from ._harness import run_cell
from ._models import LABELS, OURS
from ._report import Report

NAME = "latency"
# One process, one thread: of its own options the part reads the corpus only.
OPTIONS = {"corpus": "default: mr"}
MODELS = (*OURS, "tfidf_lr")
CORPORA = ("mr",)
TARGETS_MS = {"p50": 5.0, "p99": 20.0}
SIZES = {
    "quick": {"train_limit": 500, "max_epochs": 1, "calls": 200, "warmup": 20},
    "full": {"train_limit": 2000, "max_epochs": 2, "calls": 2000, "warmup": 50},
}


def cell(model, corpus, train_limit, max_epochs, calls, warmup):
    """Fit ``model`` and time ``calls`` one-document predictions (child process, one thread)."""
    import time

    import numpy as np

    from ._data import head, load
    from ._models import make

    X, y, X_test, _ = load(corpus)
    X, y = head(X, y, train_limit)
    overrides = {} if model == "tfidf_lr" else {"max_epochs": max_epochs, "torch_threads": 1}
    pipe = make(model, **overrides).fit(X, y)
    documents = [X_test[i % len(X_test)] for i in range(warmup + calls)]
    times = []
    for document in documents:
        start = time.perf_counter()
        pipe.predict([document])
        times.append(time.perf_counter() - start)
    ms = 1000 * np.asarray(times[warmup:])
    return {
        "calls": calls,
        "p50_ms": float(np.percentile(ms, 50)),
        "p99_ms": float(np.percentile(ms, 99)),
        "mean_ms": float(ms.mean()),
        "mean_words": float(np.mean([len(d.split()) for d in documents[warmup:]])),
    }


def run(cfg, threads, corpora, log):
    rows = []
    for corpus in corpora or CORPORA:
        for model in MODELS:
            r = run_cell("benchmarks.latency:cell", 1, dict(model=model, corpus=corpus, **cfg))
            r.update(model=model, corpus=corpus)
            log(
                f"{corpus:3s} {model:8s} "
                + (
                    f"p50 {r['p50_ms']:.2f} ms  p99 {r['p99_ms']:.2f} ms"
                    if "error" not in r
                    else f"FAILED {r['error']}"
                )
            )
            rows.append(r)
    return {"name": NAME, "config": {**cfg, "threads": 1}, "results": rows}


def _verdict(row):
    met = all(row[f"{q}_ms"] <= target for q, target in TARGETS_MS.items())
    return "met" if met else "missed"


def render(payload):
    """The report and plot of a :func:`run` result (also of one read back from JSON)."""
    cfg, rows = payload["config"], payload["results"]
    rep = Report(payload["name"], "Latency of one document, from raw text")
    rep.text(
        "Each pipeline fitted on "
        f"{cfg['train_limit'] or 'all'} training documents (stratified) for "
        f"{cfg['max_epochs']} epoch(s), then predict([text]) on one test document per call, "
        f"{cfg['calls']} calls after {cfg['warmup']} warm-up calls, one process, one thread. "
        "Target for our models: p50 <= {p50:g} ms and p99 <= {p99:g} ms.".format(**TARGETS_MS)
    )
    ok = [r for r in rows if "error" not in r]
    rep.table(
        ["corpus", "model", "p50 (ms)", "p99 (ms)", "mean (ms)", "words per document"],
        [
            [
                r["corpus"],
                LABELS[r["model"]],
                f"{r['p50_ms']:.2f}",
                f"{r['p99_ms']:.2f}",
                f"{r['mean_ms']:.2f}",
                f"{r['mean_words']:.1f}",
            ]
            for r in ok
        ]
        + [
            [r["corpus"], LABELS[r["model"]], "failed: " + r["error"][:60], "", "", ""]
            for r in rows
            if "error" in r
        ],
    )
    rep.bullets(
        f"{r['corpus']} {LABELS[r['model']]}: p50 {r['p50_ms']:.2f} ms, p99 {r['p99_ms']:.2f} ms"
        + ("" if r["model"] not in OURS else f" ({_verdict(r)} the target)")
        for r in ok
    )
    return rep, _plotter(ok)


def _plotter(rows):
    def plot(fig):
        ax = fig.add_subplot(1, 1, 1)
        names = [LABELS[r["model"]].replace(" + ", "\n") for r in rows]
        xs = range(len(rows))
        ax.bar([x - 0.2 for x in xs], [r["p50_ms"] for r in rows], 0.4, label="p50")
        ax.bar([x + 0.2 for x in xs], [r["p99_ms"] for r in rows], 0.4, label="p99")
        ax.axhline(TARGETS_MS["p50"], color="C0", linestyle=":", linewidth=1)
        ax.axhline(TARGETS_MS["p99"], color="C1", linestyle=":", linewidth=1)
        ax.set_xticks(list(xs), names, fontsize=8)
        ax.set(title="one document per call, raw text, one thread", ylabel="milliseconds")
        ax.grid(True, alpha=0.3, axis="y")
        ax.legend(fontsize=8)

    return plot
