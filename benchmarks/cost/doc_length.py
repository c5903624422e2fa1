"""Fit cost per token against the documents' length: ``cost --section doc-length``.

R8's documents joined into documents of 500 to 20,000 tokens, the corpus
size fixed; one epoch's fit per cell, each in its own process. LAMA also with
its exact recurrence (``chunk_length=None``), and the chunked predictions
against the exact ones for the same weights.
"""

import numpy as np

from .._harness import run_cell
from .._report import Report, sig

NAME = "scaling-length"
OPTIONS = {"threads": "torch/BLAS threads of every fit"}
SIZES = {
    "quick": {"lengths": [500, 2000], "tokens": 8000},
    "full": {"lengths": [500, 2000, 10000, 20000], "tokens": 40000},
}
# LAMA twice: with the BiGRU chunked past chunk_length (the default) and exact.
MODELS = {"lama": {}, "lama_exact": {"chunk_length": None}, "fcsr": {}, "duo": {}}


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


def cell(model, length, n_tokens, threads):
    """One epoch of ``model`` on documents of ``length`` tokens (child process)."""
    import os
    import time

    import torch

    from .._data import load
    from .._models import make

    texts, labels = joined(*load("r8")[:2], length, n_tokens)
    overrides = {"max_epochs": 1, "early_stopping": False, **MODELS[model]}
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


def run(cfg, threads, corpora, log):
    rows = []
    for length in cfg["lengths"]:
        for model in MODELS:
            r = run_cell(
                "benchmarks.cost.doc_length:cell",
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
    return {"name": NAME, "config": cfg, "results": rows}


def render(payload):
    """The report and plot of a :func:`run` result (also of one read back from JSON)."""
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
        for model in MODELS:
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
