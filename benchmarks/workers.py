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

from ._data import corpus_name
from ._harness import run_cell
from ._models import LABELS, OURS
from ._report import Report

NAME = "workers"
OPTIONS = {
    "corpus": "default: mr; a path names another (e.g. IMDB, benchmarks/data/prepare_imdb.py)",
    "threads": "cores given to each fit",
    "model": "among lama, fcsr, duo (default: all three)",
    "set": "over the pipelines' settings of the size (e.g. max_epochs=1 on a large corpus)",
}
MODELS = OURS
CORPORA = ("mr",)
SIZES = {
    "quick": {
        "train_limit": 2000,
        "max_epochs": 2,
        "workers": [[1, None], [2, None]],
        "seeds": [0],
        "overrides": {},
    },
    "full": {
        "train_limit": None,
        "max_epochs": 3,
        # (n_workers, torch_threads): today's fit, one worker on one core, two workers.
        "workers": [[1, None], [1, 1], [2, None]],
        "seeds": [0, 1, 2],
        "overrides": {},
    },
}


def fit_on_hold_out(model, corpus, train_limit, seed, **params):
    """Fit ``model`` with ``params`` on 80 % of the training split, score it on the rest.

    Returns the pipeline and ``{"seconds", "accuracy", "n_fit"}`` (in a child process).
    """
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
    pipe = make(model, seed=seed, **params)
    start = time.perf_counter()
    pipe.fit(X_fit, y_fit)
    seconds = time.perf_counter() - start
    accuracy = float(np.mean(pipe.predict(X_hold) == np.asarray(y_hold)))
    return pipe, {"seconds": seconds, "accuracy": accuracy, "n_fit": len(X_fit)}


def cell(model, corpus, train_limit, max_epochs, n_workers, torch_threads, seed, overrides):
    """Fit ``model`` over ``n_workers`` workers; seconds and hold-out accuracy (child process)."""
    params = {"max_epochs": max_epochs, "early_stopping": False, "n_workers": n_workers}
    if torch_threads is not None:
        params["torch_threads"] = torch_threads
    return fit_on_hold_out(model, corpus, train_limit, seed, **{**params, **overrides})[1]


def report_failures(rep, rows):
    """Add to ``rep`` a bullet for each of ``rows`` whose fit failed."""
    failed = [r for r in rows if "error" in r]
    if failed:
        rep.bullets(f"{r['model']}, {r['workers']} workers: {r['error'][:80]}" for r in failed)


def run(cfg, threads, corpora, log):
    rows = []
    for corpus in corpora or CORPORA:
        for model in cfg.get("models", MODELS):
            for seed in cfg["seeds"]:
                for k, torch_threads in cfg["workers"]:
                    kwargs = dict(
                        model=model,
                        corpus=corpus,
                        train_limit=cfg["train_limit"],
                        max_epochs=cfg["max_epochs"],
                        n_workers=k,
                        torch_threads=torch_threads,
                        seed=seed,
                        overrides=cfg.get("overrides", {}),
                    )
                    r = run_cell("benchmarks.workers:cell", threads, kwargs)
                    r.update(
                        model=model,
                        corpus=corpus_name(corpus),
                        seed=seed,
                        workers=k,
                        # "torch_threads" is the harness's: the threads the process started with.
                        torch_threads_parameter=torch_threads,
                    )
                    log(
                        f"{corpus} {model} seed {seed} workers {k} threads {torch_threads}: "
                        + (
                            f"{r['seconds']:.1f} s, accuracy {r['accuracy']:.4f}"
                            if "error" not in r
                            else f"FAILED {r['error']}"
                        )
                    )
                    rows.append(r)
    names = sorted({corpus_name(c) for c in corpora or CORPORA})
    name = NAME if names == list(CORPORA) else "-".join([NAME, *names])
    return {"name": name, "config": {**cfg, "threads": threads}, "results": rows}


def _key(row):
    """``(corpus, model, workers, torch_threads)`` of a row (``None``: the default threads)."""
    return (
        corpus_name(row["corpus"]),
        row["model"],
        row["workers"],
        row.get("torch_threads_parameter"),
    )


def _summary(rows):
    """``{key: (mean s, mean accuracy, accuracy range)}``, keys as :func:`_key`'s."""
    import numpy as np

    out = {}
    for key in {_key(r) for r in rows if "error" not in r}:
        done = [r for r in rows if "error" not in r and _key(r) == key]
        accuracy = [r["accuracy"] for r in done]
        out[key] = (
            float(np.mean([r["seconds"] for r in done])),
            float(np.mean(accuracy)),
            float(np.ptp(accuracy)),
        )
    return out


def _threads(workers, torch_threads, cores):
    """The torch threads of each worker, as the table says it."""
    if torch_threads is None:
        return f"{max(cores // workers, 1)} (default)"
    return str(torch_threads)


def render(payload):
    """The report and plot of a :func:`run` result (also of one read back from JSON)."""
    cfg, rows = payload["config"], payload["results"]
    rep = Report(payload["name"], "Data-parallel training: one and several workers")
    overrides = dict(cfg.get("overrides", {}))
    epochs = overrides.pop("max_epochs", cfg["max_epochs"])
    rep.text(
        f"The default pipelines fitted for {epochs} epoch{'s' if epochs != 1 else ''} "
        "(no early stopping) on "
        f"80 % of {cfg['train_limit'] or 'all'} training documents, scored on the other 20 % "
        f"of the training split (never the test split); each fit a fresh process given "
        f"{cfg['threads']} cores, one after another; seeds {cfg['seeds']}. Speed-up: over "
        "one worker with the default threads (today's fit)."
        + (f" Parameters set: {overrides}." if overrides else "")
    )
    summary = _summary(rows)
    table = []
    for key in sorted(summary, key=lambda k: (*k[:3], k[3] or 0)):
        corpus, model, workers, torch_threads = key
        sec, acc, spread = summary[key]
        base = summary.get((corpus, model, 1, None))
        table.append(
            [
                corpus,
                LABELS[model],
                workers,
                _threads(workers, torch_threads, cfg["threads"]),
                f"{sec:.1f}",
                f"{base[0] / sec:.2f}x" if base else "",
                f"{acc:.4f} (±{spread / 2:.4f})",
            ]
        )
    rep.table(
        [
            "corpus",
            "model",
            "workers",
            "threads per worker",
            "fit (s)",
            "speed-up",
            "hold-out accuracy (±half range)",
        ],
        table,
    )
    report_failures(rep, rows)
    return rep, _plotter(summary)


def _plotter(summary):
    def plot(fig):
        ax = fig.add_subplot(1, 1, 1)
        configs = sorted({key[2:] for key in summary}, key=lambda c: (c[0], c[1] or 0))
        labels = [f"{k} x {t or 'default'}" for k, t in configs]
        models = sorted({key[1] for key in summary})
        width = 0.8 / len(models)
        for i, model in enumerate(models):
            keys = [next(k for k in summary if k[1] == model and k[2:] == c) for c in configs]
            ax.bar(
                [x + i * width for x in range(len(configs))],
                [summary[k][0] for k in keys],
                width,
                label=LABELS[model],
                color=f"C{i}",
            )
        ax.set_xticks([x + width * (len(models) - 1) / 2 for x in range(len(configs))], labels)
        ax.set(xlabel="workers x torch threads each", ylabel="fit (s)", title="fit time")
        ax.grid(True, alpha=0.3, axis="y")
        ax.legend(fontsize=8)

    return plot
