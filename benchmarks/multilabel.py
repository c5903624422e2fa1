"""Several labels per document, two tasks in one model, calibrated probabilities.

Three measurements, each classifier behind ``Word2VecVectorizer(random_state=0)``
at its defaults (``random_state=0``):

- **Multi-label**: R8 with a second, coarser label set derived from the
  topic: each document keeps its topic (8 labels) and gets its sector,
  ``economy`` (interest, money-fx, trade), ``commodities`` (crude, grain,
  ship) or ``corporate`` (acq, earn): 11 labels, two per document, fitted
  as an indicator matrix. Against ``OneVsRestClassifier`` of TF-IDF (1-2
  grams) + logistic regression: micro and macro F1 on the test split, fit
  time.
- **Multi-task**: MR (sentiment) and R8 (topic) as the two columns of one
  ``y``, each document labelled for its own corpus only (``None`` in the
  other column), one model with a shared encoder; against one model per
  corpus: accuracy per task on each test split, total fit time (the
  vectorizers included).
- **Calibration**: on R8 and MR, one fit with ``calibration="temperature"``:
  expected calibration error (15 equal-width bins of the top probability)
  and log-loss on the test split before (the softmax of the same logits,
  temperature 1) and after.

Targets (issue 25): multi-label micro-F1 at least that of the TF-IDF+LR
baseline; the multi-task model at least as accurate as the separate models
on one task and within 0.5 point on the other, in less total fit time;
temperature scaling at least halving the test ECE on both corpora at no
accuracy cost. At the quick size every training split is cut to
``train_limit`` documents drawn with a fixed seed, ``max_epochs`` is capped
and FCSR alone is measured.
"""

import time

import numpy as np

from ._harness import run_cell
from ._report import Report, sig

NAME = "multilabel"
MODELS = ("lama", "fcsr", "duo")
LABELS = {"lama": "LAMAClassifier", "fcsr": "FCSRClassifier", "duo": "DuoClassifier"}
SECTORS = {
    "interest": "economy",
    "money-fx": "economy",
    "trade": "economy",
    "crude": "commodities",
    "grain": "commodities",
    "ship": "commodities",
    "acq": "corporate",
    "earn": "corporate",
}
SIZES = {
    "quick": {"train_limit": 1500, "max_epochs": 6, "models": ["fcsr"]},
    "full": {"train_limit": None, "max_epochs": None, "models": list(MODELS)},
}


def _head(texts, labels, limit):
    if limit is None:
        return list(texts), np.asarray(labels)
    rows = np.random.RandomState(0).permutation(len(texts))[:limit]
    return [texts[i] for i in rows], np.asarray(labels)[rows]


def _classifier(model, max_epochs, **params):
    import sklearn_lama

    if max_epochs is not None:
        params["max_epochs"] = max_epochs
    return getattr(sklearn_lama, LABELS[model])(random_state=0, **params)


def _pipeline(model, max_epochs, **params):
    from sklearn.pipeline import Pipeline

    from sklearn_lama import Word2VecVectorizer

    return Pipeline(
        [
            ("emb", Word2VecVectorizer(random_state=0)),
            ("clf", _classifier(model, max_epochs, **params)),
        ]
    )


def _indicator(topics, binarizer):
    return binarizer.transform([(t, SECTORS[t]) for t in topics])


def multilabel_cell(model, train_limit, max_epochs):
    """Micro/macro F1 and fit time on R8 topics + sectors (child process)."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import f1_score
    from sklearn.multiclass import OneVsRestClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import MultiLabelBinarizer

    from sklearn_lama.datasets import load_r8

    X, topics = _head(*load_r8(subset="train", return_X_y=True), train_limit)
    X_test, topics_test = load_r8(subset="test", return_X_y=True)
    binarizer = MultiLabelBinarizer().fit([[t, s] for t, s in SECTORS.items()])
    Y, Y_test = _indicator(topics, binarizer), _indicator(topics_test, binarizer)
    if model == "tfidf_lr":
        estimator = make_pipeline(
            TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True),
            OneVsRestClassifier(LogisticRegression(C=10.0, max_iter=1000)),
        )
    else:
        estimator = _pipeline(model, max_epochs)
    start = time.perf_counter()
    estimator.fit(X, Y)
    fit_s = time.perf_counter() - start
    predicted = estimator.predict(X_test)
    return {
        "n_train": len(X),
        "n_labels": Y.shape[1],
        "micro_f1": float(f1_score(Y_test, predicted, average="micro")),
        "macro_f1": float(f1_score(Y_test, predicted, average="macro", zero_division=0)),
        "fit_s": fit_s,
    }


def multitask_cell(model, train_limit, max_epochs):
    """Accuracy per task and total fit time: MR + R8 in one model, and one model each."""
    from sklearn_lama.datasets import load_mr, load_r8

    corpora = {"mr": load_mr, "r8": load_r8}
    train, test = {}, {}
    for name, loader in corpora.items():
        train[name] = _head(*loader(subset="train", return_X_y=True), train_limit)
        test[name] = loader(subset="test", return_X_y=True)
    result = {}
    # One model: the documents of both corpora, each labelled for its own task.
    texts = train["mr"][0] + train["r8"][0]
    y = np.full((len(texts), 2), None, dtype=object)
    y[: len(train["mr"][0]), 0] = train["mr"][1]
    y[len(train["mr"][0]) :, 1] = train["r8"][1]
    joint = _pipeline(model, max_epochs)
    start = time.perf_counter()
    joint.fit(texts, y)
    result["joint_fit_s"] = time.perf_counter() - start
    for k, name in enumerate(corpora):
        predicted = joint.predict(test[name][0])[:, k]
        result[f"joint_{name}"] = float(np.mean(predicted == np.asarray(test[name][1])))
    result["separate_fit_s"] = 0.0
    for name in corpora:
        separate = _pipeline(model, max_epochs)
        start = time.perf_counter()
        separate.fit(*train[name])
        result["separate_fit_s"] += time.perf_counter() - start
        result[f"separate_{name}"] = float(separate.score(*test[name]))
    return result


def expected_calibration_error(proba, y_true, bins=15):
    """Top-label ECE: ``sum_b |acc_b - conf_b| * n_b / n`` over equal-width confidence bins."""
    confidence = proba.max(axis=1)
    right = proba.argmax(axis=1) == y_true
    edges = np.linspace(0.0, 1.0, bins + 1)
    which = np.clip(np.digitize(confidence, edges[1:-1]), 0, bins - 1)
    error = 0.0
    for b in range(bins):
        inside = which == b
        if inside.any():
            error += abs(right[inside].mean() - confidence[inside].mean()) * inside.mean()
    return float(error)


def calibration_cell(model, corpus, train_limit, max_epochs):
    """ECE, log-loss and accuracy on the test split, temperature 1 and fitted (child process)."""
    from scipy.special import softmax
    from sklearn.metrics import log_loss

    from sklearn_lama import datasets

    loader = getattr(datasets, f"load_{corpus}")
    X, y = _head(*loader(subset="train", return_X_y=True), train_limit)
    X_test, y_test = loader(subset="test", return_X_y=True)
    pipe = _pipeline(model, max_epochs, calibration="temperature")
    start = time.perf_counter()
    pipe.fit(X, y)
    fit_s = time.perf_counter() - start
    classes = pipe[-1].classes_
    codes = np.searchsorted(classes, np.asarray(y_test))
    scores = pipe.decision_function(X_test)
    logits = np.stack([np.zeros_like(scores), scores], 1) if scores.ndim == 1 else scores
    result = {"fit_s": fit_s, "temperature": float(pipe[-1].temperature_[0])}
    for name, proba in (
        ("before", softmax(logits, axis=1)),
        ("after", pipe.predict_proba(X_test)),
    ):
        result[name] = {
            "accuracy": float(np.mean(proba.argmax(axis=1) == codes)),
            "ece": expected_calibration_error(proba, codes),
            "log_loss": float(log_loss(codes, proba, labels=np.arange(len(classes)))),
        }
    return result


def run(cfg, threads, corpora, log):
    rows = {"multilabel": [], "multitask": [], "calibration": []}
    common = {"train_limit": cfg["train_limit"], "max_epochs": cfg["max_epochs"]}
    for model in ["tfidf_lr", *cfg["models"]]:
        r = run_cell("benchmarks.multilabel:multilabel_cell", threads, {"model": model, **common})
        r["model"] = model
        log(f"multi-label {model}: {r}")
        rows["multilabel"].append(r)
    for model in cfg["models"]:
        r = run_cell("benchmarks.multilabel:multitask_cell", threads, {"model": model, **common})
        r["model"] = model
        log(f"multi-task {model}: {r}")
        rows["multitask"].append(r)
        for corpus in ("r8", "mr"):
            r = run_cell(
                "benchmarks.multilabel:calibration_cell",
                threads,
                {"model": model, "corpus": corpus, **common},
            )
            r.update(model=model, corpus=corpus)
            log(f"calibration {model} {corpus}: {r}")
            rows["calibration"].append(r)
    return {"name": NAME, "config": cfg, "results": rows}


def _name(model):
    return "OneVsRest(TF-IDF+LR)" if model == "tfidf_lr" else LABELS[model]


def render(payload):
    """The report of a :func:`run` result (also of one read back from JSON)."""
    cfg, rows = payload["config"], payload["results"]
    rep = Report(payload["name"], "Multi-label, multi-task and calibrated probabilities")
    size = (
        "All training documents, default epochs."
        if cfg["train_limit"] is None
        else f"Quick size: {cfg['train_limit']} training documents of each corpus drawn "
        f"with a fixed seed, max_epochs={cfg['max_epochs']}; the test splits whole."
    )
    rep.text(
        "Multi-label: R8 topics plus their sector (economy, commodities, corporate), 11 "
        "labels, two per document. Multi-task: MR and R8 as two columns of one y, each "
        "document labelled for its own corpus only. Calibration: temperature scaling on "
        "the held-out validation split; ECE over 15 bins of the top probability. " + size
    )
    ok = [r for r in rows["multilabel"] if "error" not in r]
    baseline = next((r for r in ok if r["model"] == "tfidf_lr"), None)
    rep.table(
        ["model", "micro F1", "macro F1", "fit s", "micro F1 >= baseline"],
        [
            [
                _name(r["model"]),
                f"{r['micro_f1']:.4f}",
                f"{r['macro_f1']:.4f}",
                sig(r["fit_s"]),
                ""
                if baseline is None or r is baseline
                else ("met" if r["micro_f1"] >= baseline["micro_f1"] else "missed"),
            ]
            for r in ok
        ],
    )
    table = []
    for r in rows["multitask"]:
        if "error" in r:
            continue
        gains = [r["joint_mr"] - r["separate_mr"], r["joint_r8"] - r["separate_r8"]]
        met = max(gains) >= 0 and min(gains) >= -0.005 and r["joint_fit_s"] < r["separate_fit_s"]
        table.append(
            [
                LABELS[r["model"]],
                f"{r['joint_mr']:.4f} / {r['separate_mr']:.4f}",
                f"{r['joint_r8']:.4f} / {r['separate_r8']:.4f}",
                f"{sig(r['joint_fit_s'])} / {sig(r['separate_fit_s'])}",
                "met" if met else "missed",
            ]
        )
    if table:
        rep.table(
            ["model", "MR acc. joint / separate", "R8 acc. joint / separate", "fit s", "target"],
            table,
        )
    else:
        rep.text("Multi-task: no result in this run.")
    table = []
    for r in rows["calibration"]:
        if "error" in r:
            continue
        b, a = r["before"], r["after"]
        met = a["ece"] <= b["ece"] / 2 and a["accuracy"] >= b["accuracy"]
        table.append(
            [
                LABELS[r["model"]],
                r["corpus"].upper(),
                f"{r['temperature']:.3f}",
                f"{b['ece']:.4f} -> {a['ece']:.4f}",
                f"{b['log_loss']:.4f} -> {a['log_loss']:.4f}",
                f"{b['accuracy']:.4f} -> {a['accuracy']:.4f}",
                "met" if met else "missed",
            ]
        )
    if table:
        rep.table(["model", "corpus", "T", "ECE", "log-loss", "accuracy", "ECE halved"], table)
    else:
        rep.text("Calibration: no result in this run.")
    return rep, _plotter(ok, [r for r in rows["calibration"] if "error" not in r])


def _plotter(multilabel, calibration):
    def plot(fig):
        ax_f1, ax_ece = fig.add_subplot(1, 2, 1), fig.add_subplot(1, 2, 2)
        names = [_name(r["model"]).replace("Classifier", "") for r in multilabel]
        xs = np.arange(len(multilabel))
        ax_f1.bar(xs - 0.2, [r["micro_f1"] for r in multilabel], 0.4, label="micro F1")
        ax_f1.bar(xs + 0.2, [r["macro_f1"] for r in multilabel], 0.4, label="macro F1")
        ax_f1.set_xticks(xs, names, fontsize=8)
        ax_f1.set(title="R8 topics + sectors (11 labels)", ylim=(0, 1))
        labels = [f"{LABELS[r['model']][:-10]} {r['corpus'].upper()}" for r in calibration]
        xs = np.arange(len(calibration))
        ax_ece.bar(xs - 0.2, [r["before"]["ece"] for r in calibration], 0.4, label="T = 1")
        ax_ece.bar(xs + 0.2, [r["after"]["ece"] for r in calibration], 0.4, label="fitted T")
        ax_ece.set_xticks(xs, labels, fontsize=8)
        ax_ece.set(title="test ECE before / after temperature scaling")
        for ax in (ax_f1, ax_ece):
            ax.grid(True, alpha=0.3)
            ax.legend(fontsize=8)

    return plot
