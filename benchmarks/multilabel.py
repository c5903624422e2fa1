"""Several labels per document, two tasks in one model, calibrated probabilities.

Three measurements, each model's default pipeline (the README's: word2vec
vectors for LAMA and FCSR, CBOW 50 + skip-gram 100 meta-embeddings for Duo)
with ``random_state=0``:

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
  vectorizers included), wall and CPU seconds. Both sides are fitted with
  ``calibration="temperature"``, which changes no trained weight and no
  prediction (it adds one pass over the held-out split to each fit), so
  that the separate models also give the calibration measurement.
- **Calibration**: on R8 and MR, the separate model of the multi-task
  measurement: expected calibration error (15 equal-width bins of the top
  probability) and log-loss on the test split before (the softmax of the
  same logits, temperature 1) and after; against
  ``CalibratedClassifierCV(pipeline, method="sigmoid", cv=3)`` wrapping the
  same default pipeline (Platt scaling, the usual choice for a network's
  scores with a few thousand documents; three folds, the cheapest split it
  offers that keeps every R8 class in each fold): its accuracy, ECE,
  log-loss and fit cost (three fits on two thirds of the data each).

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
OPTIONS = {
    "threads": "torch/BLAS threads of every fit",
    "model": "among lama, fcsr, duo (default: the size's)",
    "join": "measure nothing: one report from the runs in these folders (one model each)",
}
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
# CalibratedClassifierCV's settings (see the module docstring).
CV_METHOD, CV_FOLDS = "sigmoid", 3
SIZES = {
    "quick": {"train_limit": 800, "max_epochs": 2, "models": ["fcsr"]},
    "full": {"train_limit": None, "max_epochs": None, "models": list(MODELS)},
}


def _head(texts, labels, limit):
    if limit is None:
        return list(texts), np.asarray(labels)
    rows = np.random.RandomState(0).permutation(len(texts))[:limit]
    return [texts[i] for i in rows], np.asarray(labels)[rows]


def _pipeline(model, max_epochs, seed=0, **params):
    """The README's pipeline of ``model`` at its defaults (seeded ``seed``), with ``params``."""
    from ._models import make

    if max_epochs is not None:
        params["max_epochs"] = max_epochs
    return make(model, seed=seed, **params)


def _timed_fit(estimator, X, y):
    """``(wall s, CPU s)`` of ``estimator.fit(X, y)``; CPU seconds are steadier on a shared CPU."""
    start, cpu = time.perf_counter(), time.process_time()
    estimator.fit(X, y)
    return time.perf_counter() - start, time.process_time() - cpu


def _warm_up(model):
    """Fit the pipeline on a few documents: no timed fit then pays the process's first-fit costs.

    Lazy imports and first calls cost seconds; without this they would land
    in whichever timed fit of the cell comes first.
    """
    from sklearn_lama.datasets import load_mr

    _pipeline(model, 1).fit(*_head(*load_mr(subset="train", return_X_y=True), 200))


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
        _warm_up(model)
        estimator = _pipeline(model, max_epochs)
    fit_s, fit_cpu_s = _timed_fit(estimator, X, Y)
    predicted = estimator.predict(X_test)
    return {
        "n_train": len(X),
        "n_labels": Y.shape[1],
        "micro_f1": float(f1_score(Y_test, predicted, average="micro")),
        "macro_f1": float(f1_score(Y_test, predicted, average="macro", zero_division=0)),
        "fit_s": fit_s,
        "fit_cpu_s": fit_cpu_s,
        "n_epochs": None if model == "tfidf_lr" else estimator[-1].n_epochs_,
    }


def multitask_cell(model, train_limit, max_epochs, seed=0):
    """Accuracy per task and fit time, MR + R8 in one model and one model each (child process).

    Every fit uses ``calibration="temperature"``; the separate models'
    probabilities before and after it are measured as in :func:`_calibration`.
    ``seed`` seeds every step of every pipeline.
    """
    from sklearn_lama.datasets import load_mr, load_r8

    corpora = {"mr": load_mr, "r8": load_r8}
    train, test = {}, {}
    for name, loader in corpora.items():
        train[name] = _head(*loader(subset="train", return_X_y=True), train_limit)
        test[name] = loader(subset="test", return_X_y=True)
    _warm_up(model)
    result = {}
    # One model: the documents of both corpora, each labelled for its own task.
    texts = train["mr"][0] + train["r8"][0]
    y = np.full((len(texts), 2), None, dtype=object)
    y[: len(train["mr"][0]), 0] = train["mr"][1]
    y[len(train["mr"][0]) :, 1] = train["r8"][1]
    joint = _pipeline(model, max_epochs, seed, calibration="temperature")
    result["joint_fit_s"], result["joint_fit_cpu_s"] = _timed_fit(joint, texts, y)
    result["joint_epochs"] = joint[-1].n_epochs_
    for k, name in enumerate(corpora):
        predicted = joint.predict(test[name][0])[:, k]
        result[f"joint_{name}"] = float(np.mean(predicted == np.asarray(test[name][1])))
    for name in corpora:
        separate = _pipeline(model, max_epochs, seed, calibration="temperature")
        wall, cpu = _timed_fit(separate, *train[name])
        result[f"separate_{name}"] = float(separate.score(*test[name]))
        result[f"calibration_{name}"] = dict(
            _calibration(separate, *test[name]),
            fit_s=wall,
            fit_cpu_s=cpu,
            n_epochs=separate[-1].n_epochs_,
        )
    for unit in ("fit_s", "fit_cpu_s"):
        result[f"separate_{unit}"] = sum(result[f"calibration_{n}"][unit] for n in corpora)
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


def _scores(proba, codes, n_classes):
    from sklearn.metrics import log_loss

    return {
        "accuracy": float(np.mean(proba.argmax(axis=1) == codes)),
        "ece": expected_calibration_error(proba, codes),
        "log_loss": float(log_loss(codes, proba, labels=np.arange(n_classes))),
    }


def _calibration(pipe, X_test, y_test):
    """Accuracy, ECE and log-loss of a pipeline fitted with a temperature, at T = 1 and fitted."""
    from scipy.special import softmax

    classes = pipe[-1].classes_
    codes = np.searchsorted(classes, np.asarray(y_test))
    scores = pipe.decision_function(X_test)
    logits = np.stack([np.zeros_like(scores), scores], 1) if scores.ndim == 1 else scores
    return {
        "temperature": float(pipe[-1].temperature_[0]),
        "before": _scores(softmax(logits, axis=1), codes, len(classes)),
        "after": _scores(pipe.predict_proba(X_test), codes, len(classes)),
    }


def calibrated_cv_cell(model, corpus, train_limit, max_epochs):
    """``CalibratedClassifierCV`` of the default pipeline: accuracy, ECE, log-loss, fit cost."""
    from sklearn.calibration import CalibratedClassifierCV

    from sklearn_lama import datasets

    loader = getattr(datasets, f"load_{corpus}")
    X, y = _head(*loader(subset="train", return_X_y=True), train_limit)
    X_test, y_test = loader(subset="test", return_X_y=True)
    _warm_up(model)
    calibrated = CalibratedClassifierCV(
        _pipeline(model, max_epochs), method=CV_METHOD, cv=CV_FOLDS
    )
    fit_s, fit_cpu_s = _timed_fit(calibrated, X, y)
    codes = np.searchsorted(calibrated.classes_, np.asarray(y_test))
    proba = calibrated.predict_proba(X_test)
    return dict(
        _scores(proba, codes, len(calibrated.classes_)),
        fit_s=fit_s,
        fit_cpu_s=fit_cpu_s,
        n_epochs=[c.estimator[-1].n_epochs_ for c in calibrated.calibrated_classifiers_],
    )


def run(cfg, threads, corpora, log):
    # The multi-label cells of the models come last: a run stopped early
    # keeps the measurements that only this part makes.
    rows = {"multilabel": [], "multitask": [], "calibrated_cv": []}
    common = {"train_limit": cfg["train_limit"], "max_epochs": cfg["max_epochs"]}
    for section, target, kwargs in cells(cfg):
        r = run_cell(f"benchmarks.multilabel:{target}", threads, {**kwargs, **common})
        r.update(kwargs)
        log(f"{section} {kwargs}: {r}")
        rows[section].append(r)
    return {"name": NAME, "config": cfg, "results": rows}


def join(payloads):
    """One result of the rows of several runs of this part, e.g. one per ``--model``.

    The runs must be of one size, and each model measured in one of them;
    the OneVsRest baseline is the first run's. Each row keeps the index of
    its run (``run``), and ``runs`` keeps the runs' stamps, which the report
    lists.
    """
    rows = {"multilabel": [], "multitask": [], "calibrated_cv": []}
    models = []
    first = payloads[0]["config"]
    for i, payload in enumerate(payloads):
        cfg = payload["config"]
        if (cfg["train_limit"], cfg["max_epochs"]) != (first["train_limit"], first["max_epochs"]):
            raise ValueError(f"run {i} is of another size than run 0; join runs of one size.")
        twice = set(cfg["models"]) & set(models)
        if twice:
            raise ValueError(f"run {i} measures {sorted(twice)} again; each model in one run.")
        models += cfg["models"]
        for section, found in payload["results"].items():
            rows[section] += [
                dict(r, run=i) for r in found if i == 0 or r.get("model") != "tfidf_lr"
            ]
    config = dict(payloads[0]["config"], models=[m for m in MODELS if m in models])
    return {
        "name": NAME,
        "config": config,
        "runs": [p["meta"] for p in payloads],
        "results": rows,
    }


def cells(cfg):
    """``(section, cell function, its arguments)`` of each measurement of a run, in order."""
    order = [("multilabel", "multilabel_cell", {"model": "tfidf_lr"})]
    for model in cfg["models"]:
        order.append(("multitask", "multitask_cell", {"model": model}))
        for corpus in ("mr", "r8"):
            order.append(
                ("calibrated_cv", "calibrated_cv_cell", {"model": model, "corpus": corpus})
            )
    order += [("multilabel", "multilabel_cell", {"model": model}) for model in cfg["models"]]
    return order


def _name(model):
    return "OneVsRest(TF-IDF+LR)" if model == "tfidf_lr" else LABELS[model]


def render(payload):
    """The report of a :func:`run` result (also of one read back from JSON)."""
    cfg, rows = payload["config"], payload["results"]
    rep = Report(payload["name"], "Multi-label, multi-task and calibrated probabilities")
    size = (
        "All training documents, default epochs."
        if cfg["train_limit"] is None
        else f"{cfg['train_limit']} training documents of each corpus drawn with a fixed "
        "seed, "
        + ("default epochs" if cfg["max_epochs"] is None else f"max_epochs={cfg['max_epochs']}")
        + "; the test splits whole."
    )
    measured = ", ".join(LABELS[m] for m in cfg["models"])
    if len(cfg["models"]) < len(MODELS):
        size += f" Only {measured} measured ({', '.join(LABELS[m] for m in MODELS)} in the suite)."
    rep.text(
        "Multi-label: R8 topics plus their sector (economy, commodities, corporate), 11 "
        "labels, two per document. Multi-task: MR and R8 as two columns of one y, each "
        "document labelled for its own corpus only; fit time includes the vectorizers, "
        "CPU seconds are the fitting process's. Calibration: temperature scaling fitted on "
        "the validation split the classifier holds out (the separate models of the "
        f"multi-task table) against CalibratedClassifierCV(method={CV_METHOD!r}, "
        f"cv={CV_FOLDS}) wrapping the same default pipeline; ECE over 15 bins of the top "
        "probability, on the test split. " + size
    )
    for i, meta in enumerate(payload.get("runs", [])):
        rep.text(
            f"Run {i} ({', '.join(LABELS.get(m, _name(m)) for m in _run_models(rows, i))}): "
            f"``{meta['command']}`` at commit {meta['git_commit']}, {meta['date']}, "
            f"{meta['wall_s']:.0f} s, 1-minute load average {meta['loadavg_start']} at start "
            f"and {meta['loadavg_end']} at end."
        )
    ok = [r for r in rows["multilabel"] if "error" not in r]
    baseline = next((r for r in ok if r["model"] == "tfidf_lr"), None)
    rep.table(
        ["model", "micro F1", "macro F1", "fit s", "fit CPU s", "micro F1 >= baseline"],
        [
            [
                _name(r["model"]),
                f"{r['micro_f1']:.4f}",
                f"{r['macro_f1']:.4f}",
                sig(r["fit_s"]),
                sig(r["fit_cpu_s"]) if "fit_cpu_s" in r else "n/a",
                ""
                if baseline is None or r is baseline
                else ("met" if r["micro_f1"] >= baseline["micro_f1"] else "missed"),
            ]
            for r in ok
        ],
    )
    multitask = [r for r in rows["multitask"] if "error" not in r]
    table = []
    for r in multitask:
        gains = [r["joint_mr"] - r["separate_mr"], r["joint_r8"] - r["separate_r8"]]
        met = max(gains) >= 0 and min(gains) >= -0.005 and r["joint_fit_s"] < r["separate_fit_s"]
        table.append(
            [
                LABELS[r["model"]],
                f"{r['joint_mr']:.4f} / {r['separate_mr']:.4f}",
                f"{r['joint_r8']:.4f} / {r['separate_r8']:.4f}",
                f"{sig(r['joint_fit_s'])} / {sig(r['separate_fit_s'])}",
                f"{sig(r['joint_fit_cpu_s'])} / {sig(r['separate_fit_cpu_s'])}",
                "met" if met else "missed",
            ]
        )
    if table:
        rep.table(
            [
                "model",
                "MR acc. joint / separate",
                "R8 acc. joint / separate",
                "fit s",
                "fit CPU s",
                "target",
            ],
            table,
        )
    else:
        rep.text("Multi-task: no result in this run.")
    calibration = _calibration_rows(multitask, rows["calibrated_cv"])
    table, targets = [], []
    for model, corpus, temperature, cv in calibration:
        b, a = temperature["before"], temperature["after"]
        shown = [
            ("T = 1", b, temperature),
            (f"fitted T = {temperature['temperature']:.3f}", a, temperature),
        ]
        if cv is not None:
            shown.append((f"CalibratedClassifierCV ({CV_METHOD}, cv={CV_FOLDS})", cv, cv))
        for i, (method, scores, fit) in enumerate(shown):
            table.append(
                [
                    LABELS[model] if i == 0 else "",
                    corpus.upper() if i == 0 else "",
                    method,
                    f"{scores['accuracy']:.4f}",
                    f"{scores['ece']:.4f}",
                    f"{scores['log_loss']:.4f}",
                    "" if i == 0 else sig(fit["fit_s"]),
                    "" if i == 0 else sig(fit["fit_cpu_s"]),
                ]
            )
        met = a["ece"] <= b["ece"] / 2 and a["accuracy"] >= b["accuracy"]
        targets.append(
            f"{LABELS[model]} {corpus.upper()}: test ECE {b['ece']:.4f} -> {a['ece']:.4f} "
            f"({a['ece'] / b['ece']:.2f}x), accuracy {b['accuracy']:.4f} -> "
            f"{a['accuracy']:.4f}: target (ECE at least halved, no accuracy cost) "
            + ("met" if met else "missed")
            + (
                ""
                if cv is None
                else f"; CalibratedClassifierCV ECE {cv['ece']:.4f}, accuracy "
                f"{cv['accuracy']:.4f}, {cv['fit_cpu_s'] / temperature['fit_cpu_s']:.1f}x the "
                "CPU seconds of the fit with a temperature"
            )
        )
    if table:
        rep.table(
            [
                "model",
                "corpus",
                "probabilities",
                "accuracy",
                "ECE",
                "log-loss",
                "fit s",
                "fit CPU s",
            ],
            table,
        )
        rep.bullets(targets)
    else:
        rep.text("Calibration: no result in this run.")
    return rep, _plotter(ok, calibration)


def _run_models(rows, run):
    """The models (and the baseline) of run ``run`` of a joined result, in the order measured."""
    found = [r["model"] for section in rows.values() for r in section if r.get("run") == run]
    return list(dict.fromkeys(found))


def _calibration_rows(multitask, calibrated_cv):
    """``(model, corpus, temperature scores, CalibratedClassifierCV scores or None)``."""
    cv = {(r["model"], r["corpus"]): r for r in calibrated_cv if "error" not in r}
    return [
        (r["model"], corpus, r[f"calibration_{corpus}"], cv.get((r["model"], corpus)))
        for r in multitask
        for corpus in ("r8", "mr")
    ]


def _plotter(multilabel, calibration):
    def plot(fig):
        ax_f1, ax_ece = fig.add_subplot(1, 2, 1), fig.add_subplot(1, 2, 2)
        names = [_name(r["model"]).replace("Classifier", "") for r in multilabel]
        xs = np.arange(len(multilabel))
        ax_f1.bar(xs - 0.2, [r["micro_f1"] for r in multilabel], 0.4, label="micro F1")
        ax_f1.bar(xs + 0.2, [r["macro_f1"] for r in multilabel], 0.4, label="macro F1")
        ax_f1.set_xticks(xs, names, fontsize=8)
        # Every score is above 0.75: a bar from 0 would hide the differences.
        ax_f1.set(title="R8 topics + sectors (11 labels), test F1", ylim=(0.75, 1))
        labels = [f"{LABELS[m][:-10]} {c.upper()}" for m, c, _, _ in calibration]
        xs = np.arange(len(calibration))
        bars = [
            ("T = 1", [t["before"]["ece"] for _, _, t, _ in calibration]),
            ("fitted T", [t["after"]["ece"] for _, _, t, _ in calibration]),
            (
                f"CalibratedClassifierCV ({CV_METHOD})",
                [np.nan if cv is None else cv["ece"] for _, _, _, cv in calibration],
            ),
        ]
        for k, (label, heights) in enumerate(bars):
            ax_ece.bar(xs + (k - 1) * 0.27, heights, 0.27, label=label)
        ax_ece.set_xticks(xs, labels, fontsize=8)
        ax_ece.set(title="test ECE (lower is better)")
        for ax, where in ((ax_f1, "lower right"), (ax_ece, "upper left")):
            ax.grid(True, alpha=0.3)
            ax.legend(fontsize=8, loc=where)

    return plot
