"""Data-parallel training: fit time and accuracy of each default pipeline over 1 and k workers.

Each default pipeline of the README (shipped GloVe) is fitted on a stratified 80 % of the
corpus's *training* split and scored on the other 20 % (never the test
split), for a fixed number of epochs (no early stopping, so that the
epochs compared are the same work), once with one worker and the process's
threads (``n_workers=1``, today's fit), once per worker count of the size
with one thread per worker (``n_workers=k``: each worker's batch is the
default ``batch_size``, one step sees ``k`` of them). Every fit runs in a
fresh process given ``threads`` cores, one after another; the report gives
seconds per fit, the speed-up over one worker and the hold-out accuracy
(mean and spread over the seeds).
"""

from ._harness import run_cell
from ._models import LABELS, OURS
from ._report import Report

NAME = "workers"
OPTIONS = {"corpus": "default: mr", "threads": "cores given to each fit (default: 2)"}
MODELS = OURS
CORPORA = ("mr",)
SIZES = {
    "quick": {"train_limit": 2000, "max_epochs": 2, "workers": [1, 2], "seeds": [0]},
    "full": {"train_limit": None, "max_epochs": 3, "workers": [1, 2], "seeds": [0, 1, 2]},
}


def cell(model, corpus, train_limit, max_epochs, n_workers, seed):
    """Fit ``model`` over ``n_workers`` workers; seconds and hold-out accuracy (child process)."""
    import time

    import numpy as np
    from sklearn.model_selection import train_test_split

    from ._data import head, load
    from ._models import make

    X, y, _, _ = load(corpus)
    X, y = head(X, y, train_limit)
    X_fit, X_hold, y_fit, y_hold = train_test_split(
        X, y, test_size=0.2, stratify=y, random_state=seed
    )
    pipe = make(model, seed=seed, max_epochs=max_epochs, early_stopping=False, n_workers=n_workers)
    start = time.perf_counter()
    pipe.fit(X_fit, y_fit)
    seconds = time.perf_counter() - start
    return {
        "seconds": seconds,
        "accuracy": float(np.mean(pipe.predict(X_hold) == np.asarray(y_hold))),
        "n_fit": len(X_fit),
    }


def run(cfg, threads, corpora, log):
    rows = []
    for corpus in corpora or CORPORA:
        for model in MODELS:
            for seed in cfg["seeds"]:
                for k in cfg["workers"]:
                    kwargs = dict(
                        model=model,
                        corpus=corpus,
                        train_limit=cfg["train_limit"],
                        max_epochs=cfg["max_epochs"],
                        n_workers=k,
                        seed=seed,
                    )
                    r = run_cell("benchmarks.workers:cell", threads, kwargs)
                    r.update(model=model, corpus=corpus, seed=seed, workers=k)
                    log(
                        f"{corpus} {model} seed {seed} workers {k}: "
                        + (
                            f"{r['seconds']:.1f} s, accuracy {r['accuracy']:.4f}"
                            if "error" not in r
                            else f"FAILED {r['error']}"
                        )
                    )
                    rows.append(r)
    return {"name": NAME, "config": {**cfg, "threads": threads}, "results": rows}


def _summary(rows):
    """``{(corpus, model, workers): (mean s, mean accuracy, accuracy spread)}``."""
    import numpy as np

    out = {}
    for key in {(r["corpus"], r["model"], r["workers"]) for r in rows if "error" not in r}:
        cell_rows = [r for r in rows if (r["corpus"], r["model"], r["workers"]) == key]
        acc = [r["accuracy"] for r in cell_rows if "error" not in r]
        sec = [r["seconds"] for r in cell_rows if "error" not in r]
        out[key] = (float(np.mean(sec)), float(np.mean(acc)), float(np.ptp(acc)))
    return out


def render(payload):
    """The report and plot of a :func:`run` result (also of one read back from JSON)."""
    cfg, rows = payload["config"], payload["results"]
    rep = Report(payload["name"], "Data-parallel training: one and several workers")
    rep.text(
        f"The default pipelines fitted for {cfg['max_epochs']} epochs (no early stopping) on "
        f"80 % of {cfg['train_limit'] or 'all'} training documents, scored on the other 20 % "
        f"of the training split; each fit a fresh process given {cfg['threads']} cores; "
        f"seeds {cfg['seeds']}. One worker uses the cores as threads; k workers one thread each."
    )
    summary = _summary(rows)
    table = []
    for corpus, model, k in sorted(summary):
        sec, acc, spread = summary[(corpus, model, k)]
        base = summary.get((corpus, model, 1))
        speedup = f"{base[0] / sec:.2f}x" if base else ""
        table.append(
            [corpus, LABELS[model], k, f"{sec:.1f}", speedup, f"{acc:.4f} (±{spread / 2:.4f})"]
        )
    rep.table(
        ["corpus", "model", "workers", "fit (s)", "speed-up", "hold-out accuracy (±half range)"],
        table,
    )
    failed = [r for r in rows if "error" in r]
    if failed:
        rep.bullets(f"{r['model']}, {r['workers']} workers: {r['error'][:80]}" for r in failed)
    return rep, _plotter(summary)


def _plotter(summary):
    def plot(fig):
        ax = fig.add_subplot(1, 1, 1)
        seconds = {(model, k): value[0] for (_, model, k), value in summary.items()}
        for i, model in enumerate(sorted({model for model, _ in seconds})):
            ks = sorted(k for m, k in seconds if m == model)
            speedups = [seconds[(model, 1)] / seconds[(model, k)] for k in ks]
            ax.plot(ks, speedups, marker="o", label=LABELS[model], color=f"C{i}")
        ax.plot([1, 2], [1, 2], linestyle=":", color="grey", label="linear")
        ax.set(xlabel="workers", ylabel="speed-up over one worker", title="fit time")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)

    return plot
