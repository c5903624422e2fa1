"""Text beside tabular columns: do side features help; against TF-IDF + LR on the same columns?

The corpus is 6,000 reviews of Women's E-Commerce Clothing Reviews (Nick
Brooks, 2018, published on Kaggle under CC0 1.0 public domain; one of the
corpora of "Benchmarking Multimodal AutoML for Tabular Data with Text
Fields", Shi, Mueller, Erickson, Li and Smola, 2021), shipped as
``benchmarks/data/clothing_reviews.jsonl.gz`` (``benchmarks/data/README.md``
says how it was cut). Task: does the reviewer recommend the item
(``recommended``, 81% yes)? Text: the review's title and body; side
columns: the star ``rating``, the reviewer's ``age``, the ``feedback``
count (numeric, standardised) and the item's ``department`` and
``class_name`` (one-hot). Split 2:1, stratified, seed 0.

For each model (the names of ``benchmarks/_models.py``: ``fcsr`` on the
default vectors, ``fcsr-corpus`` on word2vec trained on the corpus,
``fcsr-glove`` on the full GloVe 6B 50d): the README's pipeline at its defaults
on the text alone,
and the same steps inside a ``ColumnTransformer`` with the side columns
(``StandardScaler`` and ``OneHotEncoder(handle_unknown="ignore")``), seeds
0, 1, 2; against the project's tuned TF-IDF + LogisticRegression on the
text alone and given the same columns through the same ``ColumnTransformer``
(deterministic: one run). Accuracy and macro-F1 on the test split.

The committed result joins two runs (``--model fcsr-corpus --model
lama-corpus``, then ``--model fcsr-glove --model lama-glove --out-dir DIR``,
joined with ``--join``), measured before the default vectors became the
shipped GloVe 100k; Duo was not measured for want of time on the shared CPU.

Targets (issue 41): the side features help every model over its text
alone, and the pipeline with them beats TF-IDF + LR given the same columns.
"""

import gzip
import json
import os
import statistics

import numpy as np

from ._models import SHORT
from ._report import Report

NAME = "side"
OPTIONS = {
    "model": "among the names of benchmarks/_models.py (default: the size's; TF-IDF + LR "
    "beside them)",
    "join": "measure nothing: one report from the runs in these folders",
}
MODELS = ("fcsr", "lama", "duo")
DATA = os.path.join(os.path.dirname(__file__), "data", "clothing_reviews.jsonl.gz")
TEXT = "review"
NUMERIC = ["rating", "age", "feedback"]
CATEGORICAL = ["department", "class_name"]
TARGET = "recommended"
SIZES = {
    "quick": {"train_limit": 800, "max_epochs": 2, "models": ["fcsr"], "seeds": [0]},
    "full": {"train_limit": None, "max_epochs": None, "models": list(MODELS), "seeds": [0, 1, 2]},
}


def load():
    """``(train, test)`` DataFrames of the shipped reviews, split 2:1 (stratified, seed 0)."""
    import pandas as pd
    from sklearn.model_selection import train_test_split

    with gzip.open(DATA, "rt", encoding="utf-8") as fh:
        frame = pd.DataFrame([json.loads(line) for line in fh])
    return train_test_split(frame, test_size=1 / 3, random_state=0, stratify=frame[TARGET])


def with_side(text_step, sparse_threshold=0.0):
    """``text_step`` on the text column beside the side columns' standard encoders.

    Our text steps join dense outputs only (see the user guide), hence
    ``sparse_threshold=0``; TF-IDF's output stays sparse (the default 0.3).
    """
    from sklearn.compose import ColumnTransformer
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    return ColumnTransformer(
        [
            ("text", text_step, TEXT),
            ("num", StandardScaler(), NUMERIC),
            ("cat", OneHotEncoder(handle_unknown="ignore"), CATEGORICAL),
        ],
        sparse_threshold=sparse_threshold,
    )


def pipelines(model, seed, max_epochs):
    """``{"text": pipeline of the text column, "side": the same steps with the side columns}``."""
    from sklearn.pipeline import Pipeline

    from ._models import make

    def fresh():
        params = {} if max_epochs is None or model == "tfidf_lr" else {"max_epochs": max_epochs}
        return make(model, seed=seed, **params)

    (_, text_step), (_, clf) = fresh().steps
    columns = with_side(text_step, 0.3 if model == "tfidf_lr" else 0.0)
    side = Pipeline([("columns", columns), ("clf", clf)])
    return {"text": fresh(), "side": side}


def run(cfg, threads, corpora, log):
    from sklearn.metrics import accuracy_score, f1_score

    train, test = load()
    if cfg["train_limit"]:
        train = train.sample(cfg["train_limit"], random_state=0)
    rows = []
    for model in ["tfidf_lr", *cfg["models"]]:
        for seed in [0] if model == "tfidf_lr" else cfg["seeds"]:
            for columns, pipe in pipelines(model, seed, cfg["max_epochs"]).items():
                # The text-only pipeline reads the text column, the other the frame.
                X, X_test = (train[TEXT], test[TEXT]) if columns == "text" else (train, test)
                predicted = pipe.fit(X, train[TARGET]).predict(X_test)
                row = {
                    "model": model,
                    "seed": seed,
                    "columns": columns,
                    "accuracy": accuracy_score(test[TARGET], predicted),
                    "macro_f1": f1_score(test[TARGET], predicted, average="macro"),
                }
                log(f"{model:8s} seed {seed} {columns:4s} acc {row['accuracy']:.4f}")
                rows.append(row)
    config = {**cfg, "n_train": len(train), "n_test": len(test)}
    return {"name": NAME, "config": config, "results": rows}


def join(payloads):
    """One result of the rows of several runs of this part, e.g. one per ``--model``.

    TF-IDF+LR, measured by every run (deterministic), is kept from the first.
    """
    first = payloads[0]["config"]
    rows = list(payloads[0]["results"])
    models = list(first["models"])
    for payload in payloads[1:]:
        rows += [r for r in payload["results"] if r["model"] != "tfidf_lr"]
        models += payload["config"]["models"]
    return {"name": NAME, "config": {**first, "models": models}, "results": rows}


def _summary(rows, model, columns, metric):
    values = [r[metric] for r in rows if r["model"] == model and r["columns"] == columns]
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    return statistics.mean(values), sd, len(values)


def render(payload):
    """The report and plot of a :func:`run` result (also of one read back from JSON)."""
    cfg, rows = payload["config"], payload["results"]
    models = list(dict.fromkeys(r["model"] for r in rows))
    rep = Report(payload["name"], "Text beside tabular columns: clothing reviews")
    rep.text(
        f"Does the reviewer recommend the item? {cfg['n_train']:,} training and "
        f"{cfg['n_test']:,} test reviews of Women's E-Commerce Clothing Reviews (CC0). "
        f"'text': the review alone; 'text + side': with {', '.join(NUMERIC)} "
        f"(StandardScaler) and {', '.join(CATEGORICAL)} (OneHotEncoder) through one "
        "ColumnTransformer. Our models at their defaults"
        + (f" ({cfg['max_epochs']} epochs)" if cfg["max_epochs"] else "")
        + f", mean ± sd over seeds {cfg['seeds']}; TF-IDF+LR is deterministic."
    )
    table = []
    for model in models:
        cells = [SHORT[model]]
        for columns in ("text", "side"):
            for metric in ("accuracy", "macro_f1"):
                mean, sd, n = _summary(rows, model, columns, metric)
                cells.append(f"{mean:.4f} ± {sd:.4f}" if n > 1 else f"{mean:.4f}")
        table.append(cells)
    rep.table(
        [
            "model",
            "text: accuracy",
            "text: macro-F1",
            "text + side: accuracy",
            "text + side: macro-F1",
        ],
        table,
    )
    peer = _summary(rows, "tfidf_lr", "side", "accuracy")[0]
    bullets = []
    for model in models:
        alone, side = (_summary(rows, model, c, "accuracy")[0] for c in ("text", "side"))
        line = f"{SHORT[model]}: side features {'help' if side > alone else 'do not help'} "
        line += f"({alone:.4f} → {side:.4f})"
        if model != "tfidf_lr":
            line += f"; {'beats' if side > peer else 'does not beat'} TF-IDF+LR with the same "
            line += f"columns ({peer:.4f})"
        bullets.append(line + ".")
    rep.bullets(bullets)
    return rep, _plotter(rows, models)


def _plotter(rows, models):
    def plot(fig):
        ax = fig.add_subplot(1, 1, 1)
        xs = np.arange(len(models))
        for offset, columns, label in ((-0.2, "text", "text alone"), (0.2, "side", "text + side")):
            means, sds = zip(*(_summary(rows, m, columns, "accuracy")[:2] for m in models))
            ax.bar(xs + offset, means, 0.4, yerr=sds, capsize=3, label=label)
        ax.set_xticks(xs, [SHORT[m] for m in models])
        low = min(r["accuracy"] for r in rows)
        ax.set(title="recommended? (clothing reviews)", ylabel="test accuracy")
        ax.set_ylim(low - 0.02, 1)
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend(fontsize=8)

    return plot
