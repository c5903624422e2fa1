"""The project's speed targets on R8: seconds per training epoch and inference throughput.

Targets (the benchmark issue, for this 2-core CPU): an epoch over the R8
training split in at most 15 s for ``LAMAClassifier`` and 5 s for
``FCSRClassifier`` and ``DuoClassifier``; inference of at least 2,000
documents/s for every classifier on R8-length documents. Each classifier is
measured at its defaults behind ``Word2VecVectorizer(random_state=0)``, with
one torch thread and with as many threads as the machine has cores, each
setting in its own process. Epoch time: the median of skorch's per-epoch
durations with ``early_stopping=False`` (no validation pass). Inference: the
classifier's ``predict_proba`` on the already vectorized test split (median of
repeats), and the whole pipeline from raw text for reference. At the quick
size the epochs run on a subset and are scaled up to the full split.
"""

import os

from ._harness import run_cell
from ._report import Report, sig

NAME = "targets"
MODELS = ("lama", "fcsr", "duo")
LABELS = {"lama": "LAMAClassifier", "fcsr": "FCSRClassifier", "duo": "DuoClassifier"}
EPOCH_TARGET_S = {"lama": 15.0, "fcsr": 5.0, "duo": 5.0}
DOCS_PER_S_TARGET = 2000.0
SIZES = {
    "quick": {"train_limit": 1000, "epochs": 1, "repeats": 1},
    "full": {"train_limit": None, "epochs": 2, "repeats": 3},
}


def cell(model, train_limit, epochs, repeats):
    """Train ``model`` on R8 for ``epochs`` epochs and time it (child process)."""
    import numpy as np

    import sklearn_lama
    from sklearn_lama.datasets import load_r8

    from ._data import head
    from ._harness import median_time

    X, y = load_r8(subset="train", return_X_y=True)
    X_test, _ = load_r8(subset="test", return_X_y=True)
    n_full = len(X)
    X, y = head(X, y, train_limit)
    vectorizer = sklearn_lama.Word2VecVectorizer(random_state=0).fit(X)
    sequences, test_sequences = vectorizer.transform(X), vectorizer.transform(X_test)
    classifier = getattr(sklearn_lama, LABELS[model])(
        max_epochs=epochs, early_stopping=False, random_state=0
    )
    classifier.fit(sequences, y)
    epoch_s = float(np.median(classifier.net_.history[:, "dur"])) * n_full / len(X)
    inference = median_time(lambda: classifier.predict_proba(test_sequences), repeats)
    pipeline = median_time(lambda: classifier.predict_proba(vectorizer.transform(X_test)), repeats)
    return {
        "n_train": len(X),
        "n_test": len(X_test),
        "epoch_s": epoch_s,
        "docs_per_s": len(X_test) / inference["median_s"],
        "pipeline_docs_per_s": len(X_test) / pipeline["median_s"],
        "mean_tokens": float(np.mean(np.diff(test_sequences.offsets))),
    }


def run(cfg, threads, corpora, log):
    # The targets are stated for the whole machine; one thread is measured too
    # because it is what each worker of GridSearchCV(n_jobs=n_cores) gets.
    settings = sorted({1, os.cpu_count() or 1})
    rows = []
    for model in MODELS:
        for n in settings:
            r = run_cell(
                "benchmarks.targets:cell",
                n,
                dict(
                    model=model,
                    train_limit=cfg["train_limit"],
                    epochs=cfg["epochs"],
                    repeats=cfg["repeats"],
                ),
            )
            r.update(model=model, threads=n)
            log(
                f"{model:5s} {n} thread(s) "
                + (
                    f"epoch {r['epoch_s']:6.1f} s  {r['docs_per_s']:8.0f} docs/s"
                    if "error" not in r
                    else f"FAILED {r['error']}"
                )
            )
            rows.append(r)
    return {"name": NAME, "config": {**cfg, "threads": settings}, "results": rows}


def render(payload):
    """The report and plot of a :func:`run` result (also of one read back from JSON)."""
    cfg, rows = payload["config"], payload["results"]
    rep = Report(payload["name"], "Speed targets on R8: training epoch and inference")
    scaled = (
        ""
        if cfg["train_limit"] is None
        else f" Quick size: epochs on {cfg['train_limit']} documents, scaled to the 5,485 of "
        "the split."
    )
    rep.text(
        f"Defaults behind Word2VecVectorizer(random_state=0); {cfg['epochs']} epoch(s) without "
        "validation, the median epoch reported; inference = predict_proba on the vectorized "
        "test split (2,189 documents), median of repeats; 'pipeline' includes vectorizing the "
        "raw text. This part "
        "ignores --threads: each row states its own thread count." + scaled
    )
    ok = [r for r in rows if "error" not in r]
    table = []
    for r in rows:
        if "error" in r:
            table.append(
                [LABELS[r["model"]], r["threads"], "failed: " + r["error"][:60]] + [""] * 5
            )
            continue
        epoch_ok = r["epoch_s"] <= EPOCH_TARGET_S[r["model"]]
        docs_ok = r["docs_per_s"] >= DOCS_PER_S_TARGET
        table.append(
            [
                LABELS[r["model"]],
                r["threads"],
                sig(r["epoch_s"]),
                f"<= {EPOCH_TARGET_S[r['model']]:g}: {'met' if epoch_ok else 'missed'}",
                f"{r['docs_per_s']:,.0f}",
                f">= {DOCS_PER_S_TARGET:,.0f}: {'met' if docs_ok else 'missed'}",
                f"{r['pipeline_docs_per_s']:,.0f}",
                f"{r['mean_tokens']:.0f}",
            ]
        )
    rep.table(
        [
            "model",
            "threads",
            "epoch s",
            "epoch target",
            "docs/s",
            "inference target",
            "pipeline docs/s",
            "tokens/doc",
        ],
        table,
    )
    top = max((r["threads"] for r in ok), default=1)
    best = [r for r in ok if r["threads"] == top]
    rep.bullets(
        [
            f"{LABELS[r['model']]} with {top} thread(s): epoch {sig(r['epoch_s'])} s "
            f"({r['epoch_s'] / EPOCH_TARGET_S[r['model']]:.2f}x the target), inference "
            f"{r['docs_per_s']:,.0f} docs/s ({r['docs_per_s'] / DOCS_PER_S_TARGET:.2f}x the "
            "target)."
            for r in best
        ]
    )
    return rep, _plotter(ok)


def _plotter(rows):
    def plot(fig):
        ax_epoch, ax_docs = fig.add_subplot(1, 2, 1), fig.add_subplot(1, 2, 2)
        settings = sorted({r["threads"] for r in rows})
        width = 0.8 / max(len(settings), 1)
        for i, n in enumerate(settings):
            part = {r["model"]: r for r in rows if r["threads"] == n}
            xs = [j + i * width for j, m in enumerate(MODELS) if m in part]
            ax_epoch.bar(
                xs,
                [part[m]["epoch_s"] for m in MODELS if m in part],
                width,
                label=f"{n} thread(s)",
            )
            ax_docs.bar(
                xs,
                [part[m]["docs_per_s"] for m in MODELS if m in part],
                width,
                label=f"{n} thread(s)",
            )
        centres = [j + width * (len(settings) - 1) / 2 for j in range(len(MODELS))]
        for j, m in enumerate(MODELS):
            ax_epoch.hlines(
                EPOCH_TARGET_S[m],
                centres[j] - 0.45,
                centres[j] + 0.45,
                colors="k",
                linestyles="--",
            )
        ax_docs.axhline(DOCS_PER_S_TARGET, color="k", linestyle="--", label="target")
        for ax, title, label in (
            (ax_epoch, "R8 training epoch (dashed: target)", "seconds"),
            (ax_docs, "inference on R8 test", "documents/s"),
        ):
            ax.set_xticks(centres, [LABELS[m].replace("Classifier", "") for m in MODELS])
            ax.set(title=title, ylabel=label, yscale="log")
            ax.grid(True, alpha=0.3)
            ax.legend(fontsize=8)

    return plot
