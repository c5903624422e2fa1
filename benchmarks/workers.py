"""Data-parallel training: fit time and accuracy of each default pipeline over 1 and k workers.

Each default pipeline of the README (shipped GloVe) is fitted on a stratified 80 % of the
corpus's *training* split and scored on the other 20 % (never the test
split), for a fixed number of epochs (no early stopping, so that the
epochs compared are the same work), once with one worker and the process's
threads (``n_workers=1``, today's fit), once per worker count of the size
with one thread per worker (``n_workers=k``: each worker's batch is the
default ``batch_size``, one step sees ``k`` of them). Every fit runs in a
fresh process given ``threads`` cores (the ``curve`` size: ``k`` workers
given ``k`` cores, for ``k`` = 1, 2, 4, ... up to ``threads``), one after
another; the report gives seconds per fit, the speed-up over one worker,
the hold-out accuracy (mean and spread over the seeds) and the peak
resident memory of each worker process.
"""

from ._data import corpus_name
from ._harness import run_cell
from ._models import LABELS, OURS
from ._report import Report

NAME = "workers"
#: The options of every part that fits the default pipelines on a hold-out of a
#: training split (this one, ``batch_rule``, ``stopping``).
HOLD_OUT_OPTIONS = {
    "corpus": "default: mr; a path names another (e.g. IMDB, benchmarks/data/prepare_imdb.py)",
    "threads": "cores given to each fit",
    "model": "among lama, fcsr, duo (default: all three)",
}
OPTIONS = {
    **HOLD_OUT_OPTIONS,
    "set": "over the pipelines' settings of the size (e.g. max_epochs=1 on a large corpus)",
}
MODELS = OURS
CORPORA = ("mr",)
SIZES = {
    "quick": {
        "train_limit": 2000,
        "max_epochs": 2,
        "workers": [[1, None, None], [2, None, None]],
        "seeds": [0],
        "overrides": {},
    },
    "full": {
        "train_limit": None,
        "max_epochs": 3,
        # (n_workers, torch_threads, cores; None: all given): today's fit, one worker
        # on one core, two workers.
        "workers": [[1, None, None], [1, 1, None], [2, None, None]],
        "seeds": [0, 1, 2],
        "overrides": {},
    },
    # The cores curve (a machine of many cores): one epoch of 4,000 documents.
    "curve": {
        "train_limit": 5000,
        "max_epochs": 1,
        "workers": None,
        "seeds": [0],
        "overrides": {},
    },
}


def curve(threads):
    """``(n_workers, torch_threads, cores)`` of the cores curve on ``threads`` cores.

    Today's fit on every core, then ``k`` one-thread workers on ``k`` cores
    for ``k`` = 1, 2, 4, ... up to ``threads``.
    """
    counts = [k for k in (1, 2, 4, 8, 16, 32, 64, 128) if k <= threads]
    return [[1, None, None]] + [[k, None, k] for k in counts]


def fit_on_hold_out(model, corpus, train_limit, seed, pipeline_params=None, **params):
    """Fit ``model`` with ``params`` on 80 % of the training split, score it on the rest.

    ``params`` go to the classifier, ``pipeline_params`` (e.g. ``{"emb__max_len":
    512}``) to the pipeline's ``set_params``. Returns the pipeline and
    ``{"seconds", "accuracy", "n_fit"}`` (in a child process).
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
    pipe = make(model, seed=seed, **params).set_params(**(pipeline_params or {}))
    start = time.perf_counter()
    pipe.fit(X_fit, y_fit)
    seconds = time.perf_counter() - start
    accuracy = float(np.mean(pipe.predict(X_hold) == np.asarray(y_hold)))
    return pipe, {"seconds": seconds, "accuracy": accuracy, "n_fit": len(X_fit)}


def outcome(row):
    """A hold-out fit's row in the log's words: seconds, epochs and accuracy, or its failure."""
    if "error" in row:
        return f"FAILED {row['error']}"
    return f"{row['seconds']:.1f} s, {row['epochs']} epochs, accuracy {row['accuracy']:.4f}"


def named_payload(name, default_corpora, corpora, cfg, threads, rows):
    """A run's result: ``name``, followed by the corpora when they are not ``default_corpora``."""
    names = sorted({corpus_name(c) for c in corpora or default_corpora})
    stem = name if names == list(default_corpora) else "-".join([name, *names])
    return {"name": stem, "config": {**cfg, "threads": threads}, "results": rows}


def summarise(rows, fields):
    """``{key: (mean s, mean epochs, mean accuracy, its range)}`` over the seeds of each key.

    ``key`` is the tuple of the row's values of ``fields``; failed fits
    (``"error"``) count for nothing.
    """
    import numpy as np

    groups = {}
    for row in rows:
        if "error" not in row:
            groups.setdefault(tuple(row[f] for f in fields), []).append(row)
    out = {}
    for key, done in groups.items():
        accuracy = [r["accuracy"] for r in done]
        out[key] = (
            float(np.mean([r["seconds"] for r in done])),
            float(np.mean([r["epochs"] for r in done])),
            float(np.mean(accuracy)),
            float(np.ptp(accuracy)),
        )
    return out


#: The columns of :func:`summary_cells`.
SUMMARY_COLUMNS = ["epochs", "fit (s)", "speed-up", "hold-out accuracy (±half range)"]


def summary_cells(entry, base):
    """The table cells of one :func:`summarise` ``entry``; speed-up over ``base`` (or none)."""
    seconds, epochs, accuracy, spread = entry
    return [
        f"{epochs:.1f}",
        f"{seconds:.1f}",
        f"{base[0] / seconds:.2f}x" if base else "",
        f"{accuracy:.4f} (±{spread / 2:.4f})",
    ]


def accuracy_time_plot(summary, annotation):
    """A plotter of hold-out accuracy against fit seconds, a colour per ``(corpus, model)``.

    ``summary`` is :func:`summarise`'s, keyed ``(corpus, model, ...)``;
    ``annotation(key)`` labels each point.
    """

    def plot(fig):
        ax = fig.add_subplot(1, 1, 1)
        for i, (corpus, model) in enumerate(sorted({key[:2] for key in summary})):
            keys = sorted(
                (k for k in summary if k[:2] == (corpus, model)),
                key=lambda k: tuple("" if v is None else str(v) for v in k),
            )
            ax.errorbar(
                [summary[k][0] for k in keys],
                [summary[k][2] for k in keys],
                yerr=[summary[k][3] / 2 for k in keys],
                fmt="o",
                capsize=3,
                color=f"C{i}",
                label=f"{LABELS[model]} ({corpus}), ± half the seeds' range",
            )
            for k in keys:
                point = (summary[k][0], summary[k][2])
                ax.annotate(
                    annotation(k), point, xytext=(5, 5), textcoords="offset points", fontsize=8
                )
        ax.set(xlabel="fit (s)", ylabel="hold-out accuracy", title="accuracy against fit time")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)

    return plot


def cell(model, corpus, train_limit, max_epochs, n_workers, torch_threads, seed, overrides):
    """Fit ``model`` over ``n_workers`` workers (child process).

    Seconds, hold-out accuracy and the peak resident memory (MiB) of one
    worker: this process's with one worker, the largest forked worker's
    with several (the kernel's count, which includes the pages a worker
    shares with this process).
    """
    import resource

    from ._harness import peak_rss_mib

    params = {"max_epochs": max_epochs, "early_stopping": False, "n_workers": n_workers}
    if torch_threads is not None:
        params["torch_threads"] = torch_threads
    result = fit_on_hold_out(model, corpus, train_limit, seed, **{**params, **overrides})[1]
    if n_workers == 1:
        return dict(result, worker_peak_mib=peak_rss_mib())
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024.0  # KiB on Linux
    return dict(result, worker_peak_mib=children)


def report_failures(rep, rows, setting="workers"):
    """Add to ``rep`` a bullet for each of ``rows`` whose fit failed, named by its ``setting``."""
    failed = [r for r in rows if "error" in r]
    if failed:
        rep.bullets(
            f"{r['model']}, seed {r['seed']}, {setting} {r[setting]}: {r['error'][:80]}"
            for r in failed
        )


def run(cfg, threads, corpora, log):
    rows = []
    for corpus in corpora or CORPORA:
        for model in cfg.get("models", MODELS):
            for seed in cfg["seeds"]:
                for k, torch_threads, cores in cfg["workers"] or curve(threads):
                    cores = cores or threads
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
                    r = run_cell("benchmarks.workers:cell", cores, kwargs)
                    r.update(
                        model=model,
                        corpus=corpus_name(corpus),
                        seed=seed,
                        workers=k,
                        cores=cores,
                        # "torch_threads" is the harness's: the threads the process started with.
                        torch_threads_parameter=torch_threads,
                    )
                    log(
                        f"{corpus} {model} seed {seed} workers {k} threads {torch_threads} "
                        f"cores {cores}: "
                        + (
                            f"{r['seconds']:.1f} s, accuracy {r['accuracy']:.4f}"
                            if "error" not in r
                            else f"FAILED {r['error']}"
                        )
                    )
                    rows.append(r)
    names = sorted({corpus_name(c) for c in corpora or CORPORA})
    tags = [*(["curve"] if not cfg["workers"] else []), *(names if names != list(CORPORA) else [])]
    name = "-".join([NAME, *tags])
    return {"name": name, "config": {**cfg, "threads": threads}, "results": rows}


def _key(row, threads):
    """``(corpus, model, workers, cores, threads per worker)`` of a row.

    ``threads``: the cores of a row that names none (results of earlier runs).
    """
    cores = row.get("cores") or threads
    torch_threads = row.get("torch_threads_parameter") or max(cores // row["workers"], 1)
    return (corpus_name(row["corpus"]), row["model"], row["workers"], cores, torch_threads)


def _summary(rows, threads):
    """``{key: (mean s, mean accuracy, accuracy range, peak MiB)}``, keys as :func:`_key`'s."""
    import numpy as np

    done = [r for r in rows if "error" not in r]
    out = {}
    for key in {_key(r, threads) for r in done}:
        same = [r for r in done if _key(r, threads) == key]
        accuracy = [r["accuracy"] for r in same]
        peaks = [r["worker_peak_mib"] for r in same if "worker_peak_mib" in r]
        out[key] = (
            float(np.mean([r["seconds"] for r in same])),
            float(np.mean(accuracy)),
            float(np.ptp(accuracy)),
            max(peaks) if peaks else None,
        )
    return out


def _order(key):
    """Table order: by workers, then the most cores and threads first."""
    return (*key[:3], -key[3], -key[4])


def _bases(summary, key, threads):
    """The fit seconds of one worker on every core (today's fit) and on one thread."""
    corpus, model = key[:2]
    today = summary.get((corpus, model, 1, threads, threads))
    one = [v for k, v in summary.items() if k[:3] == (corpus, model, 1) and k[4] == 1]
    return (today[0] if today else None), (one[0][0] if one else None)


def render(payload):
    """The report and plot of a :func:`run` result (also of one read back from JSON)."""
    cfg, rows = payload["config"], payload["results"]
    threads = cfg["threads"]
    rep = Report(payload["name"], "Data-parallel training: one and several workers")
    overrides = dict(cfg.get("overrides", {}))
    epochs = overrides.pop("max_epochs", cfg["max_epochs"])
    given = (
        f"{threads} cores"
        if cfg["workers"]
        else f"as many cores as workers (one worker also on all {threads} cores: today's fit)"
    )
    rep.text(
        f"The default pipelines fitted for {epochs} epoch{'s' if epochs != 1 else ''} "
        "(no early stopping) on "
        f"80 % of {cfg['train_limit'] or 'all'} training documents, scored on the other 20 % "
        f"of the training split (never the test split); each fit a fresh process given "
        f"{given}, one after another; seeds {cfg['seeds']}. Speed-up: over one worker with "
        "the default threads (today's fit) and over one worker on one thread. Peak memory: "
        "the resident set of one worker process (with several, the largest; it counts the "
        "pages a forked worker shares with its parent)."
        + (f" Parameters set: {overrides}." if overrides else "")
    )
    summary = _summary(rows, threads)
    table = []
    for key in sorted(summary, key=_order):
        corpus, model, workers, cores, torch_threads = key
        sec, acc, spread, peak = summary[key]
        today, one = _bases(summary, key, threads)
        table.append(
            [
                corpus,
                LABELS[model],
                workers,
                cores,
                torch_threads,
                f"{sec:.1f}",
                f"{today / sec:.2f}x" if today else "",
                f"{one / sec:.2f}x" if one else "",
                f"{acc:.4f} (±{spread / 2:.4f})",
                f"{peak:,.0f}" if peak else "n/a",
            ]
        )
    rep.table(
        [
            "corpus",
            "model",
            "workers",
            "cores",
            "threads per worker",
            "fit (s)",
            "speed-up",
            "over one thread",
            "hold-out accuracy (±half range)",
            "peak MiB per worker",
        ],
        table,
    )
    report_failures(rep, rows)
    return rep, _plotter(summary, threads)


def _plotter(summary, threads):
    def plot(fig):
        configs = sorted({key[2:] for key in summary}, key=lambda c: (c[0], -c[1], -c[2]))
        models = sorted({key[1] for key in summary})
        ax = fig.add_subplot(1, 2, 1)
        width = 0.8 / len(models)
        for i, model in enumerate(models):
            keys = [k for c in configs for k in summary if k[1] == model and k[2:] == c]
            ax.bar(
                [configs.index(k[2:]) + i * width for k in keys],
                [summary[k][0] for k in keys],
                width,
                label=LABELS[model],
                color=f"C{i}",
            )
        labels = [f"{k}w {c}c {t}t" for k, c, t in configs]
        ax.set_xticks([x + width * (len(models) - 1) / 2 for x in range(len(configs))], labels)
        ax.tick_params(axis="x", labelrotation=45, labelsize=7)
        ax.set(xlabel="workers, cores, threads each", ylabel="fit (s)", title="fit time")
        ax.grid(True, alpha=0.3, axis="y")
        ax.legend(fontsize=8)
        ax = fig.add_subplot(1, 2, 2)
        top = 1
        for i, model in enumerate(models):
            keys = sorted(k for k in summary if k[1] == model and k[4] == 1)
            _, one = _bases(summary, keys[0], threads) if keys else (None, None)
            if not one:
                continue
            counts = [k[2] for k in keys]
            top = max(top, *counts)
            ax.plot(
                counts,
                [one / summary[k][0] for k in keys],
                "o-",
                color=f"C{i}",
                label=LABELS[model],
            )
        ax.plot([1, top], [1, top], "k--", lw=0.8, label="linear")
        ax.set(
            xlabel="one-thread workers",
            ylabel="speed-up over one thread",
            title="throughput of one-thread workers",
        )
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)

    return plot
