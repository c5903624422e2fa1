"""Accuracy and speed against peers: our estimators vs TF-IDF + LogisticRegression and fastText.

Each of ``LAMAClassifier``, ``FCSRClassifier`` and ``DuoClassifier`` sits in a
Pipeline behind ``Word2VecVectorizer``, everything at its defaults with
``random_state=0`` (quick size: a stratified subset of the corpus and at most
2 epochs, so the numbers only check the suite). Measured per model, each in its
own process: test accuracy; fit time (word vectors included); throughput
(documents/s predicting the whole test set, raw text in); latency of one
batch of 32 documents and of one document (``predict([doc])``), medians after
a warm-up; peak RSS during fit above the RSS before it. The one-off import of
``torch._dynamo`` by a process's first torch optimizer (seconds) happens
before the clock starts (it is recorded as ``first_optimizer_s``).
"""

from ._data import corpus_name
from ._harness import run_cell
from ._models import LABELS, OURS, PEERS, SHORT, fasttext_status
from ._report import Report, sig

NAME = "peers"
MODELS = PEERS + OURS
BATCH = 32
SIZES = {
    "quick": {
        "train_limit": 1000,
        "test_limit": 500,
        "overrides": {"max_epochs": 2},
        "repeats": 2,
        "singles": 10,
    },
    "full": {
        "train_limit": None,
        "test_limit": None,
        "overrides": {},
        "repeats": 3,
        "singles": 30,
    },
}
DEFAULT_CORPORA = ["r8", "mr"]


def cell(corpus, model, threads, train_limit, test_limit, overrides, repeats, singles):
    """Fit ``model`` on ``corpus`` and measure it (child process)."""
    import time

    import numpy as np

    from ._data import head, load
    from ._harness import median_time, peak_rss_mib, start_peak
    from ._models import make

    X, y, X_test, y_test = load(corpus)
    X, y = head(X, y, train_limit)
    X_test, y_test = head(X_test, y_test, test_limit)
    estimator = make(model, threads, **(overrides if model in OURS else {}))
    base = start_peak()
    start = time.perf_counter()
    estimator.fit(X, y)
    fit_s = time.perf_counter() - start
    fit_peak = peak_rss_mib() - base
    accuracy = float(np.mean(estimator.predict(X_test) == np.asarray(y_test)))  # also the warm-up
    whole = median_time(lambda: estimator.predict(X_test), repeats, warmup=0)
    batch = median_time(lambda: estimator.predict(X_test[:BATCH]), 5 * repeats)
    one = [
        median_time(lambda d=doc: estimator.predict([d]), 1, warmup=1)["median_s"]
        for doc in X_test[:singles]
    ]
    clf = estimator[-1] if hasattr(estimator, "steps") else estimator
    return {
        "n_train": len(X),
        "n_test": len(X_test),
        "accuracy": accuracy,
        "fit_s": fit_s,
        "fit_peak_rss_delta_mib": fit_peak,
        "predict_all_s": whole["median_s"],
        "docs_per_s": len(X_test) / whole["median_s"],
        "batch_latency_s": batch["median_s"],
        "single_latency_s": float(np.median(one)),
        "epochs": getattr(clf, "n_epochs_", None),
    }


def run(cfg, threads, corpora, log):
    corpora = corpora or DEFAULT_CORPORA
    missing = fasttext_status()
    rows = []
    for corpus in corpora:
        for model in MODELS:
            if model.startswith("fasttext") and missing:
                r = {"error": missing}
            else:
                r = run_cell(
                    "benchmarks.peers:cell",
                    threads,
                    dict(
                        corpus=corpus,
                        model=model,
                        threads=threads,
                        train_limit=cfg["train_limit"],
                        test_limit=cfg["test_limit"],
                        overrides=cfg["overrides"],
                        repeats=cfg["repeats"],
                        singles=cfg["singles"],
                    ),
                )
            r.update(corpus=corpus_name(corpus), model=model)
            log(
                f"{r['corpus']:6s} {model:9s} "
                + (
                    f"acc {r['accuracy']:.4f} fit {r['fit_s']:7.1f} s "
                    f"{r['docs_per_s']:9.0f} docs/s"
                    if "error" not in r
                    else f"FAILED {r['error']}"
                )
            )
            rows.append(r)
    name = (
        NAME
        if corpora == DEFAULT_CORPORA
        else NAME + "-" + "-".join(corpus_name(c) for c in corpora)
    )
    return {
        "name": name,
        "config": {**cfg, "corpora": corpora, "batch": BATCH, "fasttext": missing or "installed"},
        "results": rows,
    }


def render(payload):
    """The report and plot of a :func:`run` result (also of one read back from JSON)."""
    cfg, rows = payload["config"], payload["results"]
    missing = None if cfg["fasttext"] == "installed" else cfg["fasttext"]
    return _report(payload["name"], cfg, rows, missing), _plotter(rows)


def _report(name, cfg, rows, missing):
    rep = Report(name, "Accuracy, fit time and prediction speed against peers")
    subset = (
        ""
        if cfg["train_limit"] is None
        else f" Quick size: at most {cfg['train_limit']} training and {cfg['test_limit']} test "
        f"documents, our classifiers with {cfg['overrides']}: these numbers check the suite, not "
        "the models."
    )
    rep.text(
        "Defaults everywhere, random_state=0, raw text in. Ratios are against TF-IDF + "
        "LogisticRegression on the same corpus, in the same run (fit: x slower; throughput: x "
        "its documents/s)." + subset
    )
    rep.text(
        "The peers are tuned, with the settings of the project's reference measurements: TF-IDF "
        "(bigrams, sublinear tf, min_df=2) + LogisticRegression(C=10), and fastText (25 epochs, "
        "lr 0.5, word bigrams, lower-cased, training lines shuffled; thread and seed fixed). "
        "The ``accuracy`` part gives means over 3 seeds."
    )
    if missing:
        rep.text(f"fastText: {missing}.")
    for corpus in dict.fromkeys(r["corpus"] for r in rows):
        part = [r for r in rows if r["corpus"] == corpus]
        ref = next((r for r in part if r["model"] == "tfidf_lr" and "error" not in r), None)
        rep.text(
            f"**{corpus}** ({part[0].get('n_train', '?')} training / "
            f"{part[0].get('n_test', '?')} test documents)"
        )
        rep.table(
            [
                "model",
                "accuracy",
                "fit s",
                "fit x",
                "docs/s",
                "docs/s x",
                f"batch {BATCH} ms",
                "1 doc ms",
                "epochs",
                "fit peak MiB",
            ],
            [_row(r, ref) for r in part],
        )
    rep.bullets(_findings(rows))
    return rep


def _row(r, ref):
    if "error" in r:
        return [LABELS[r["model"]], "failed: " + r["error"][:60]] + ["n/a"] * 8
    return [
        LABELS[r["model"]],
        f"{r['accuracy']:.4f}",
        sig(r["fit_s"]),
        sig(r["fit_s"] / ref["fit_s"]) if ref else "n/a",
        f"{r['docs_per_s']:,.0f}",
        sig(r["docs_per_s"] / ref["docs_per_s"]) if ref else "n/a",
        sig(r["batch_latency_s"] * 1e3),
        sig(r["single_latency_s"] * 1e3),
        str(r["epochs"]) if r["epochs"] is not None else "n/a",
        f"{r['fit_peak_rss_delta_mib']:.0f}",
    ]


def _findings(rows):
    out = []
    for corpus in dict.fromkeys(r["corpus"] for r in rows):
        ok = [r for r in rows if r["corpus"] == corpus and "error" not in r]
        if not ok:
            continue
        best = max(ok, key=lambda r: r["accuracy"])
        ours = [r for r in ok if r["model"] in OURS]
        peers = [r for r in ok if r["model"] in PEERS]
        line = f"{corpus}: most accurate {LABELS[best['model']]} ({best['accuracy']:.4f})"
        if ours and peers:
            a, b = max(ours, key=lambda r: r["accuracy"]), max(peers, key=lambda r: r["accuracy"])
            line += (
                f"; best of ours {LABELS[a['model']]} {a['accuracy']:.4f} vs best peer "
                f"{LABELS[b['model']]} {b['accuracy']:.4f} "
                f"({(a['accuracy'] - b['accuracy']) * 100:+.1f} points), fitting "
                f"{a['fit_s'] / b['fit_s']:.0f}x slower"
            )
        out.append(line + ".")
    return out


def _plotter(rows):
    def plot(fig):
        corpora = list(dict.fromkeys(r["corpus"] for r in rows))
        ax_acc, ax_fit = fig.add_subplot(1, 2, 1), fig.add_subplot(1, 2, 2)
        width = 0.8 / max(len(corpora), 1)
        for i, corpus in enumerate(corpora):
            part = {r["model"]: r for r in rows if r["corpus"] == corpus and "error" not in r}
            xs = [j + i * width for j, m in enumerate(MODELS) if m in part]
            ax_acc.bar(xs, [part[m]["accuracy"] for m in MODELS if m in part], width, label=corpus)
            ax_fit.scatter(
                [part[m]["fit_s"] for m in MODELS if m in part],
                [part[m]["docs_per_s"] for m in MODELS if m in part],
                label=corpus,
            )
            for m in part:
                ax_fit.annotate(SHORT[m], (part[m]["fit_s"], part[m]["docs_per_s"]), fontsize=7)
        ax_acc.set_xticks(
            [j + width * (len(corpora) - 1) / 2 for j in range(len(MODELS))],
            [SHORT[m] for m in MODELS],
            fontsize=8,
        )
        ax_acc.set(ylabel="test accuracy", ylim=(0.5, 1.0), title="accuracy")
        ax_fit.set(
            xscale="log",
            yscale="log",
            xlabel="fit time (s)",
            ylabel="prediction throughput (docs/s)",
            title="fit time vs throughput",
        )
        for ax in (ax_acc, ax_fit):
            ax.grid(True, alpha=0.3)
            ax.legend(fontsize=8)

    return plot
