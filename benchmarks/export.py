"""ONNX export: onnxruntime against the estimator on R8 and MR test sets.

For each classifier at its defaults behind ``Word2VecVectorizer(random_state=0)``
(fitted on a stratified subset of the training split for a few epochs: the
comparison needs a fitted network, not a well-trained one), the pipeline is
written with :func:`sklearn_lama.export.to_onnx` and served with
:class:`~sklearn_lama.export.OnnxTextClassifier`. Measured in one process with
one thread for torch and for onnxruntime: the largest absolute difference
between the two ``predict_proba`` on the whole test split, and documents per
second of each, from token ids (the classifier alone against the graph
alone) and from raw text (the pipeline against the served model), medians of
repeats.
"""

from ._harness import run_cell
from ._report import Report, sig

NAME = "export"
# One thread for torch and onnxruntime, on R8 and MR: the part reads no option of its own.
OPTIONS = {}
MODELS = ("lama", "fcsr", "duo")
CORPORA = ("r8", "mr")
LABELS = {"lama": "LAMAClassifier", "fcsr": "FCSRClassifier", "duo": "DuoClassifier"}
TOLERANCE = 1e-5
SPEEDUP_TARGET = 2.0
SIZES = {
    "quick": {"train_limit": 500, "max_epochs": 1, "repeats": 1},
    "full": {"train_limit": 2000, "max_epochs": 3, "repeats": 3},
}


def cell(model, corpus, train_limit, max_epochs, repeats):
    """Fit, export and compare ``model`` on ``corpus`` (child process, one thread)."""
    import tempfile
    from pathlib import Path

    import numpy as np
    from sklearn.pipeline import Pipeline

    import sklearn_lama
    from sklearn_lama.export import OnnxTextClassifier, to_onnx

    from ._data import head, load
    from ._harness import median_time

    X, y, X_test, _ = load(corpus)
    X, y = head(X, y, train_limit)
    pipe = Pipeline(
        [
            ("emb", sklearn_lama.Word2VecVectorizer(random_state=0)),
            ("clf", getattr(sklearn_lama, LABELS[model])(max_epochs=max_epochs, random_state=0)),
        ]
    ).fit(X, y)
    sequences = pipe["emb"].transform(X_test)
    ids = [sequences.document(i) for i in range(len(sequences))]
    with tempfile.TemporaryDirectory() as folder:
        to_onnx(pipe, Path(folder) / "pipeline.onnx")
        to_onnx(pipe["clf"], Path(folder) / "classifier.onnx")
        served = OnnxTextClassifier(Path(folder) / "pipeline.onnx", threads=1)
        graph = OnnxTextClassifier(Path(folder) / "classifier.onnx", threads=1)
        expected = pipe.predict_proba(X_test)
        diff = float(np.abs(served.predict_proba(X_test) - expected).max())
        diff_ids = float(np.abs(graph.predict_proba(ids) - expected).max())
        agree = float(np.mean(served.predict(X_test) == pipe.predict(X_test)))
        torch_ids = median_time(lambda: pipe["clf"].predict_proba(sequences), repeats)
        onnx_ids = median_time(lambda: graph.predict_proba(ids), repeats)
        torch_text = median_time(lambda: pipe.predict_proba(X_test), repeats)
        onnx_text = median_time(lambda: served.predict_proba(X_test), repeats)
    n = len(X_test)
    return {
        "n_train": len(X),
        "n_test": n,
        "max_abs_diff": max(diff, diff_ids),
        "same_predictions": agree,
        "torch_docs_per_s": n / torch_ids["median_s"],
        "onnx_docs_per_s": n / onnx_ids["median_s"],
        "torch_text_docs_per_s": n / torch_text["median_s"],
        "onnx_text_docs_per_s": n / onnx_text["median_s"],
        "mean_tokens": float(np.mean(np.diff(sequences.offsets))),
    }


def run(cfg, threads, corpora, log):
    rows = []
    for corpus in CORPORA:
        for model in MODELS:
            r = run_cell("benchmarks.export:cell", 1, dict(model=model, corpus=corpus, **cfg))
            r.update(model=model, corpus=corpus)
            log(
                f"{corpus:3s} {model:5s} "
                + (
                    f"diff {r['max_abs_diff']:.1e}  torch {r['torch_docs_per_s']:7.0f}  "
                    f"onnx {r['onnx_docs_per_s']:7.0f} docs/s"
                    if "error" not in r
                    else f"FAILED {r['error']}"
                )
            )
            rows.append(r)
    return {"name": NAME, "config": {**cfg, "threads": 1}, "results": rows}


def render(payload):
    """The report and plot of a :func:`run` result (also of one read back from JSON)."""
    cfg, rows = payload["config"], payload["results"]
    rep = Report(payload["name"], "ONNX export: onnxruntime against the estimator")
    rep.text(
        "Defaults behind Word2VecVectorizer(random_state=0), fitted on "
        f"{cfg['train_limit'] or 'all'} training documents (stratified) for "
        f"{cfg['max_epochs']} epoch(s); compared on the whole test split. One thread for "
        "torch and for onnxruntime. 'ids': the classifier's predict_proba on the vectorized "
        "test split against the exported classifier's graph on the same token ids; 'text': "
        "the pipeline against OnnxTextClassifier from raw text. Medians of "
        f"{cfg['repeats']} repeat(s). Targets: difference <= {TOLERANCE:g}, ONNX >= "
        f"{SPEEDUP_TARGET:g}x the estimator's docs/s."
    )
    table = []
    for r in rows:
        if "error" in r:
            table.append(
                [r["corpus"], LABELS[r["model"]], "failed: " + r["error"][:60]] + [""] * 6
            )
            continue
        speedup = r["onnx_docs_per_s"] / r["torch_docs_per_s"]
        table.append(
            [
                r["corpus"],
                LABELS[r["model"]],
                f"{r['max_abs_diff']:.1e}",
                f"{r['same_predictions']:.4f}",
                f"{r['torch_docs_per_s']:,.0f}",
                f"{r['onnx_docs_per_s']:,.0f}",
                f"{speedup:.2f}x",
                f"{r['torch_text_docs_per_s']:,.0f}",
                f"{r['onnx_text_docs_per_s']:,.0f}",
            ]
        )
    rep.table(
        [
            "corpus",
            "model",
            "max abs diff",
            "same label",
            "torch docs/s (ids)",
            "ONNX docs/s (ids)",
            "ONNX / torch",
            "torch docs/s (text)",
            "ONNX docs/s (text)",
        ],
        table,
    )
    ok = [r for r in rows if "error" not in r]
    rep.bullets(
        [
            f"{r['corpus']} {LABELS[r['model']]}: max difference {r['max_abs_diff']:.1e} "
            f"({'within' if r['max_abs_diff'] <= TOLERANCE else 'beyond'} {TOLERANCE:g}); "
            f"ONNX {sig(r['onnx_docs_per_s'] / r['torch_docs_per_s'])}x the estimator's "
            f"docs/s from ids ({_verdict(r)} the {SPEEDUP_TARGET:g}x target)."
            for r in ok
        ]
    )
    return rep, _plotter(ok)


def _verdict(row):
    return (
        "met" if row["onnx_docs_per_s"] >= SPEEDUP_TARGET * row["torch_docs_per_s"] else "missed"
    )


def _plotter(rows):
    def plot(fig):
        ax = fig.add_subplot(1, 1, 1)
        names = [f"{r['corpus']}\n{LABELS[r['model']].replace('Classifier', '')}" for r in rows]
        xs = range(len(rows))
        ax.bar([x - 0.2 for x in xs], [r["torch_docs_per_s"] for r in rows], 0.4, label="torch")
        ax.bar([x + 0.2 for x in xs], [r["onnx_docs_per_s"] for r in rows], 0.4, label="ONNX")
        ax.set_xticks(list(xs), names)
        ax.set(title="inference from token ids, one thread", ylabel="documents/s", yscale="log")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)

    return plot
