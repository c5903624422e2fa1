"""Fit time and peak memory as the corpus grows: ``cost --section corpus-size``.

MR's training sentences cycled, later copies with their words shuffled, so
documents keep their lengths; vectorizer and classifier fitted for one epoch
per size, each in its own process. Linearity is read from the least-squares
line ``time = a + b x tokens``, its R², and the marginal cost between the two
largest sizes.
"""

import numpy as np

from .._data import corpus_name
from .._harness import run_cell
from .._models import OURS, SHORT, labels
from .._report import Report, sig

NAME = "scaling"
OPTIONS = {
    "threads": "torch/BLAS threads of every fit",
    "corpus": "the one corpus grown (default: mr; another writes scaling-<corpus>)",
    "model": "among lama, fcsr, duo (default: all three)",
    "set": "a parameter of the classifiers, over the size's settings (one epoch, no early "
    "stopping)",
}
SIZES = {
    "quick": {
        "n_docs": [1000, 2000, 4000],
        "overrides": {"max_epochs": 1, "early_stopping": False},
    },
    "full": {
        "n_docs": [1000, 3000, 10000, 30000, 100000],
        "overrides": {"max_epochs": 1, "early_stopping": False},
    },
}


def cell(corpus, model, n_docs, threads, overrides):
    """Fit vectorizer and classifier on ``n_docs`` grown documents (child process)."""
    import time

    from .._data import grow, load
    from .._harness import peak_rss_mib, start_peak
    from .._models import make

    texts, labels = grow(*load(corpus)[:2], n_docs)
    pipe = make(model, threads, **overrides)
    base = start_peak()
    start = time.perf_counter()
    X = pipe[0].fit_transform(texts)
    vectorizer_s = time.perf_counter() - start
    pipe[1].fit(X, labels)
    total_s = time.perf_counter() - start
    return {
        "n_docs": n_docs,
        "tokens": int(np.sum(X.lengths)),
        "vocabulary": int(X.tables[0].shape[0]),
        "vectorizer_s": vectorizer_s,
        "classifier_s": total_s - vectorizer_s,
        "total_s": total_s,
        "peak_rss_delta_mib": peak_rss_mib() - base,
    }


def run(cfg, threads, corpora, log):
    if corpora is not None and len(corpora) > 1:
        raise SystemExit("cost --section corpus-size grows one corpus: give --corpus once")
    corpus = (corpora or ["mr"])[0]
    rows = []
    for model in cfg.get("models") or OURS:
        for n in cfg["n_docs"]:
            r = run_cell(
                "benchmarks.cost.corpus_size:cell",
                threads,
                dict(
                    corpus=corpus,
                    model=model,
                    n_docs=n,
                    threads=threads,
                    overrides=cfg["overrides"],
                ),
            )
            r.update(model=model, n_docs=n)
            log(
                f"{model:5s} n={n:7d} "
                + (
                    f"{r['tokens']:>9,} tokens  w2v {r['vectorizer_s']:6.1f} s  clf "
                    f"{r['classifier_s']:6.1f} s  peak +{r['peak_rss_delta_mib']:6.0f} MiB"
                    if "error" not in r
                    else f"FAILED {r['error']}"
                )
            )
            rows.append(r)
    fits = {m: _fit([r for r in rows if r["model"] == m and "error" not in r]) for m in OURS}
    name = NAME if corpora is None else f"{NAME}-{corpus_name(corpus)}"
    return {"name": name, "config": {**cfg, "corpus": corpus}, "results": rows, "fits": fits}


def render(payload):
    """The report and plot of a :func:`run` result (also of one read back from JSON)."""
    rows, names = payload["results"], labels(payload.get("meta"))
    report = _report(payload["name"], payload["config"]["corpus"], rows, payload["fits"], names)
    return report, _plotter(rows)


def _line(x, y):
    """Least squares ``y = a + b x``: ``(a, b, r2)``."""
    b, a = np.polyfit(x, y, 1)
    residual = np.sum((np.asarray(y) - (a + b * np.asarray(x))) ** 2)
    spread = np.sum((np.asarray(y) - np.mean(y)) ** 2)
    return float(a), float(b), float(1 - residual / spread) if spread else 1.0


def _fit(rows):
    if len(rows) < 2:
        return None
    x = [r["tokens"] for r in rows]
    out = {}
    for key in ("total_s", "classifier_s", "vectorizer_s", "peak_rss_delta_mib"):
        y = [r[key] for r in rows]
        a, b, r2 = _line(x, y)
        out[key] = {
            "intercept": a,
            "per_token": b,
            "r2": r2,
            "marginal_top2": (y[-1] - y[-2]) / (x[-1] - x[-2]),
        }
    return out


def _report(name, corpus, rows, fits, names):
    rep = Report(name, "Fit time and peak memory vs corpus size (one epoch)")
    rep.text(
        f"Corpus: {corpus_name(corpus)} training split grown by shuffled copies; "
        "Word2VecVectorizer() + each classifier with max_epochs=1, early_stopping=False, "
        "random_state=0. Tokens: those the classifier sees (words below min_count dropped). The "
        "vocabulary grows while copies lift rare words over min_count=5."
    )
    rep.table(
        [
            "model",
            "docs",
            "tokens",
            "vocabulary",
            "vectorizer s",
            "classifier s",
            "total s",
            "us/token",
            "peak MiB",
        ],
        [
            [names[r["model"]].replace("Word2Vec + ", ""), f"{r['n_docs']:,}"]
            + (
                ["failed"] + ["n/a"] * 6
                if "error" in r
                else [
                    f"{r['tokens']:,}",
                    f"{r['vocabulary']:,}",
                    sig(r["vectorizer_s"]),
                    sig(r["classifier_s"]),
                    sig(r["total_s"]),
                    sig(r["total_s"] / r["tokens"] * 1e6),
                    sig(r["peak_rss_delta_mib"]),
                ]
            )
            for r in rows
        ],
    )
    rep.table(
        [
            "model",
            "total us/token (slope)",
            "R²",
            "marginal us/token (top 2)",
            "fixed s",
            "classifier us/token",
            "vectorizer us/token",
            "memory bytes/token",
            "memory R²",
        ],
        [
            [
                names[m].replace("Word2Vec + ", ""),
                f"{f['total_s']['per_token'] * 1e6:.2f}",
                f"{f['total_s']['r2']:.4f}",
                f"{f['total_s']['marginal_top2'] * 1e6:.2f}",
                f"{f['total_s']['intercept']:.1f}",
                f"{f['classifier_s']['per_token'] * 1e6:.2f}",
                f"{f['vectorizer_s']['per_token'] * 1e6:.2f}",
                f"{f['peak_rss_delta_mib']['per_token'] * 2**20:.0f}",
                f"{f['peak_rss_delta_mib']['r2']:.3f}",
            ]
            for m, f in fits.items()
            if f
        ],
    )
    rep.bullets(_findings(rows, fits, names))
    return rep


def _findings(rows, fits, names):
    out = []
    for m, f in fits.items():
        if not f:
            continue
        pts = [r for r in rows if r["model"] == m and "error" not in r]
        per_token = [r["total_s"] / r["tokens"] for r in pts]
        # Per-token cost between the two largest sizes: flat when the cost is
        # linear (fixed costs have faded by then), rising when it grows faster.
        growth = per_token[-1] / per_token[-2]
        t = f["total_s"]
        verdict = (
            "linear"
            if 0.8 <= growth <= 1.25
            else "per-token cost not flat: superlinear, or the CPU got busier (see the load "
            "average)"
        )
        out.append(
            f"{names[m]}: {t['per_token'] * 1e6:.1f} us per token fitted (R² {t['r2']:.3f}); "
            f"per token {per_token[-2] * 1e6:.1f} us at {pts[-2]['tokens']:,} tokens and "
            f"{per_token[-1] * 1e6:.1f} us at {pts[-1]['tokens']:,} ({growth:.2f}x): {verdict}. "
            f"Peak memory grows by {f['peak_rss_delta_mib']['per_token'] * 2**20:.0f} bytes per "
            "token."
        )
    return out


def _plotter(rows):
    def plot(fig):
        ax_t, ax_m = fig.add_subplot(1, 2, 1), fig.add_subplot(1, 2, 2)
        for model, colour in zip(OURS, ("tab:blue", "tab:orange", "tab:green")):
            pts = [r for r in rows if r["model"] == model and "error" not in r]
            if not pts:
                continue
            x = [r["tokens"] for r in pts]
            ax_t.plot(
                x, [r["total_s"] for r in pts], "o-", color=colour, label=f"{SHORT[model]} total"
            )
            ax_t.plot(
                x,
                [r["classifier_s"] for r in pts],
                "x:",
                color=colour,
                label=f"{SHORT[model]} classifier",
            )
            ax_m.plot(
                x, [r["peak_rss_delta_mib"] for r in pts], "o-", color=colour, label=SHORT[model]
            )
        ax_t.set(
            xscale="log",
            yscale="log",
            xlabel="tokens",
            ylabel="fit time, one epoch (s)",
            title="fit time vs tokens",
        )
        ax_m.set(
            xscale="log",
            yscale="log",
            xlabel="tokens",
            ylabel="peak RSS above start of fit (MiB)",
            title="peak memory",
        )
        for ax in (ax_t, ax_m):
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=7)

    return plot
