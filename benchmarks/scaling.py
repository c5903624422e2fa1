"""Fit time and peak memory as the corpus grows: is the cost linear in total tokens?

The corpus (MR training sentences by default) is grown to ``n`` documents by
cycling through it, every copy after the first with its words shuffled
(:func:`benchmarks._data.grow`): documents keep their lengths and the words
their counts' proportions. ``Word2VecVectorizer()`` then each classifier is
fitted for exactly one epoch (``max_epochs=1, early_stopping=False``), so what
changes with ``n`` is the amount of data only. One process per cell; memory is
the peak RSS during fit above the RSS before it (the grown corpus's strings
already loaded).

Linearity is read from the least-squares line ``time = a + b x tokens``
(``b``: cost per token, ``a``: fixed cost) and its R², and from the marginal
cost between the two largest sizes, which equals ``b`` when the cost is linear
and exceeds it when the cost grows faster.
"""

import numpy as np

from ._data import corpus_name
from ._harness import run_cell
from ._models import LABELS, OURS, SHORT
from ._report import Report, sig

NAME = "scaling"
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

    from ._data import grow, load
    from ._harness import peak_rss_mib, start_peak
    from ._models import make

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
    corpus = (corpora or ["mr"])[0]
    rows = []
    for model in OURS:
        for n in cfg["n_docs"]:
            r = run_cell(
                "benchmarks.scaling:cell",
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
    rows = payload["results"]
    return _report(payload["name"], payload["config"]["corpus"], rows, payload["fits"]), _plotter(
        rows
    )


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


def _report(name, corpus, rows, fits):
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
            "word2vec s",
            "classifier s",
            "total s",
            "us/token",
            "peak MiB",
        ],
        [
            [LABELS[r["model"]].replace("Word2Vec + ", ""), f"{r['n_docs']:,}"]
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
            "word2vec us/token",
            "memory bytes/token",
            "memory R²",
        ],
        [
            [
                LABELS[m].replace("Word2Vec + ", ""),
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
    rep.bullets(_findings(rows, fits))
    return rep


def _findings(rows, fits):
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
            f"{LABELS[m]}: {t['per_token'] * 1e6:.1f} us per token fitted (R² {t['r2']:.3f}); "
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


# ``--length``: fit cost per token as documents grow, the corpus size fixed.
LENGTH = {
    "quick": {"lengths": [500, 2000], "tokens": 8000},
    "full": {"lengths": [500, 2000, 10000, 20000], "tokens": 40000},
}
# LAMA twice: with the BiGRU chunked past chunk_length (the default) and exact.
LENGTH_MODELS = {"lama": {}, "lama_exact": {"chunk_length": None}, "fcsr": {}, "duo": {}}


def joined(texts, labels, length, n_tokens, seed=0):
    """Documents of ``length`` whitespace tokens, R8 documents joined in a random order.

    Each takes the label of its first document; ``n_tokens`` in all (at
    least one document).
    """
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(texts))
    docs, doc_labels, words, position = [], [], [], 0
    while len(docs) < max(n_tokens // length, 1):
        j = order[position % len(order)]
        position += 1
        if not words:
            doc_labels.append(labels[j])
        words.extend(texts[j].split())
        if len(words) >= length:
            docs.append(" ".join(words[:length]))
            words = []
    return docs, np.asarray(doc_labels, dtype=object)


def length_cell(model, length, n_tokens, threads):
    """One epoch of ``model`` on documents of ``length`` tokens (child process)."""
    import os
    import time

    import torch

    from ._data import load
    from ._models import make

    texts, labels = joined(*load("r8")[:2], length, n_tokens)
    overrides = {"max_epochs": 1, "early_stopping": False, **LENGTH_MODELS[model]}
    pipe = make(model.replace("_exact", ""), threads, **overrides)
    X = pipe[0].fit_transform(texts)
    start = time.perf_counter()
    pipe[1].fit(X, labels)
    fit_s = time.perf_counter() - start
    tokens = int(np.sum(X.lengths))
    out = {
        "docs": len(texts),
        "tokens": tokens,
        "fit_s": fit_s,
        "us_per_token": fit_s / tokens * 1e6,
        "loadavg": round(os.getloadavg()[0], 2),
    }
    encoder = getattr(pipe[1].net_.module_.core, "encoder", None)
    if model == "lama" and encoder is not None and encoder.chunk_length is not None:
        # The same weights read exactly: how far the chunked recurrence moves the predictions.
        chunked = pipe[1].predict_proba(X)
        encoder.chunk_length = None
        with torch.no_grad():
            exact = pipe[1].predict_proba(X)
        out.update(
            max_proba_difference=float(np.abs(chunked - exact).max()),
            same_prediction=float(np.mean(chunked.argmax(1) == exact.argmax(1))),
        )
    return out


def run_length(cfg, threads, log):
    rows = []
    for length in cfg["lengths"]:
        for model in LENGTH_MODELS:
            r = run_cell(
                "benchmarks.scaling:length_cell",
                threads,
                dict(model=model, length=length, n_tokens=cfg["tokens"], threads=threads),
            )
            r.update(model=model, length=length)
            log(
                f"{model:10s} length {length:6d} "
                + (
                    f"{r['tokens']:,} tokens  fit {r['fit_s']:7.1f} s  "
                    f"{r['us_per_token']:8.1f} us/token  load {r['loadavg']}"
                    if "error" not in r
                    else f"FAILED {r['error']}"
                )
            )
            rows.append(r)
    return {"name": f"{NAME}-length", "config": cfg, "results": rows}


def render_length(payload):
    rows = payload["results"]
    rep = Report(payload["name"], "Fit cost per token vs document length (one epoch)")
    rep.text(
        f"R8 training documents joined (random order) into documents of each length, "
        f"{payload['config']['tokens']:,} whitespace tokens in all per cell (tokens: those "
        "the classifier sees); Word2VecVectorizer() fitted first, then each classifier "
        "timed for one epoch (max_epochs=1, early_stopping=False, random_state=0), one "
        "torch thread, one process per cell. LAMA (exact) is "
        "LAMAClassifier(chunk_length=None), the recurrence over whole documents; LAMA "
        "is the default chunk_length=1024. The last column compares the chunked LAMA's "
        "predictions with those of the same weights read exactly."
    )
    base = {
        r["model"]: r["us_per_token"] for r in rows if r["length"] == 2000 and "error" not in r
    }
    names = {"lama": "LAMA", "lama_exact": "LAMA (exact)", "fcsr": "FCSR", "duo": "Duo"}
    rep.table(
        [
            "model",
            "length",
            "docs",
            "tokens",
            "fit s",
            "us/token",
            "vs 2,000 tokens",
            "load average",
            "chunked vs exact: max abs. difference, same label",
        ],
        [
            [names[r["model"]], f"{r['length']:,}"]
            + (
                ["failed"] + ["n/a"] * 6
                if "error" in r
                else [
                    f"{r['docs']:,}",
                    f"{r['tokens']:,}",
                    sig(r["fit_s"]),
                    sig(r["us_per_token"]),
                    f"{r['us_per_token'] / base[r['model']]:.2f}x"
                    if r["model"] in base
                    else "n/a",
                    f"{r['loadavg']}",
                    f"{r['max_proba_difference']:.3f}, {r['same_prediction']:.1%}"
                    if "max_proba_difference" in r
                    else "",
                ]
            )
            for r in rows
        ],
    )
    return rep, _length_plotter(rows, names)


def _length_plotter(rows, names):
    def plot(fig):
        ax = fig.add_subplot(1, 1, 1)
        for model in LENGTH_MODELS:
            pts = [r for r in rows if r["model"] == model and "error" not in r]
            ax.plot(
                [r["length"] for r in pts],
                [r["us_per_token"] for r in pts],
                "o-",
                label=names[model],
            )
        ax.set(
            xscale="log",
            yscale="log",
            xlabel="tokens per document",
            ylabel="fit us per token, one epoch",
            title="fit cost per token vs document length",
        )
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)

    return plot
