"""A fit against the CPU cores given: ``python -m benchmarks gpu --section cores``.

The default pipelines and tuned fastText on the CPU alone, each fit in its
own process (``cost``'s cell, no profile) on 1, 2, 4, ... threads up to the
cores the machine gives (the device machine's host has 16), one fit at a
time: the curve of a fit against the cores given.
"""

from .._data import corpus_name
from .._env import usable_cores
from .._harness import run_cell
from .._models import OURS, SHORT, fasttext_status
from .._report import Report, sig

NAME = "gpu-cores"
OPTIONS = {
    "corpus": "default: mr",
    "model": "among lama, fcsr, duo (default: all three; tuned fastText beside them)",
    "set": "a parameter of the classifiers, over the size's settings",
}
SIZES = {
    "quick": {"train_limit": 600, "test_limit": 300, "overrides": {"max_epochs": 2}},
    "full": {"train_limit": None, "test_limit": None, "overrides": {}},
}
CORPORA = ["mr"]


def cpu_cells(corpora, models, threads, cfg):
    """``cost``'s cells of ``models`` and tuned fastText on ``threads`` CPU threads, no profile."""
    limits = {k: cfg[k] for k in ("train_limit", "test_limit")}
    return [
        dict(
            corpus=c,
            model=m,
            threads=threads,
            overrides=cfg["overrides"],
            count_docs=0,
            profile_docs=0,
            **limits,
        )
        for c in corpora
        for m in [*models, *(["fasttext"] if not fasttext_status() else [])]
    ]


def run(cfg, threads, corpora, log):
    """Each pipeline's fit on 1, 2, 4, ... CPU threads, one at a time (``threads`` unread)."""
    corpora = corpora or CORPORA
    models = cfg.get("models") or list(OURS)
    counts = [n for n in (1, 2, 4, 8, 16, 32, 64) if n <= usable_cores()]
    rows = []
    for n in counts:
        cells = cpu_cells(corpora, models, n, cfg)
        for kwargs in cells:
            r = run_cell("benchmarks.cost.pipelines:cell", n, kwargs)
            rows.append(
                dict(r, corpus=corpus_name(kwargs["corpus"]), model=kwargs["model"], threads=n)
            )
            log(f"{kwargs['corpus']} {kwargs['model']} {n} threads: fit {r.get('fit_s', r)}")
    return {
        "name": NAME,
        "config": {**cfg, "corpora": corpora, "models": models, "threads": counts},
        "rows": rows,
    }


def render(payload):
    """The report and plot of a :func:`run` result (also of one read back from JSON)."""
    rep = Report(payload["name"], "A fit against the CPU cores given")
    rep.text(
        "Each default pipeline and tuned fastText fitted in its own process on the CPU alone, "
        "with the number of torch (fastText) threads given, one fit at a time on the otherwise "
        "idle machine. Speed-up: the fit on one thread over this one; epoch s: seconds per "
        "classifier epoch."
    )
    ok = [r for r in payload["rows"] if "error" not in r]
    one = {(r["corpus"], r["model"]): r for r in ok if r["threads"] == 1}
    for corpus in dict.fromkeys(r["corpus"] for r in payload["rows"]):
        rep.text(f"**{corpus}**")
        rep.table(
            ["model", "threads", "accuracy", "fit s", "speed-up", "epoch s"],
            [
                [
                    SHORT[r["model"]],
                    r["threads"],
                    f"{r['accuracy']:.4f}",
                    sig(r["fit_s"]),
                    sig(one[corpus, r["model"]]["fit_s"] / r["fit_s"])
                    if (corpus, r["model"]) in one
                    else "n/a",
                    sig(r["epoch_s"]) if r.get("epoch_s") else "",
                ]
                for r in ok
                if r["corpus"] == corpus
            ],
        )

    def plot(fig):
        ax = fig.add_subplot(1, 1, 1)
        for (corpus, model), base in one.items():
            mine = [r for r in ok if (r["corpus"], r["model"]) == (corpus, model)]
            ax.plot(
                [r["threads"] for r in mine],
                [base["fit_s"] / r["fit_s"] for r in mine],
                marker="o",
                label=f"{SHORT[model]} ({corpus})",
            )
        counts = payload["config"]["threads"]
        ax.plot(counts, counts, color="grey", linestyle=":", label="linear")
        ax.set(xscale="log", yscale="log", xlabel="threads", ylabel="fit speed-up over 1 thread")
        ax.set_xticks(counts, [str(n) for n in counts])
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize="small")

    return rep, plot
