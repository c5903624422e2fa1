"""Selection of the defaults by cross-validation on a training split; the test split is never read.

For each of LAMA, FCSR and Duo, a few candidate settings of the levers the
library adds to the papers (Naive Bayes weights, cross-fitting folds,
embedding dropout, optimiser) are scored by stratified k-fold
cross-validation on the training split of the selection corpus only, each
fold a fit of the README's pipeline (``random_state`` 0) on the other folds.
The default stays unless another candidate's mean CV accuracy beats it by
more than half a point (``MARGIN``, about the standard error of a CV
accuracy on MR's training split); the test accuracy of the chosen defaults
is measured afterwards, once, by the ``accuracy`` part. On every
further corpus given, the chosen candidate and the first one (the
reference) are cross-validated again on its training split, to see that the
choice holds on a corpus it was not made on.
"""

import numpy as np

from ._data import corpus_name
from ._harness import run_cells
from ._report import Report, sig

NAME = "select"

# The first candidate of each model is its reference: the papers' inputs
# (no Naive Bayes features, no embedding dropout) with the library's
# training stack (Adam, weight average, early stopping); the second is the
# library's default.
_DEFAULT_LAMA = {"nb_unigram_weight": 3.0, "nb_bigram_weight": 0.5, "embedding_dropout": 0.3}
CANDIDATES = {
    "lama": [
        {"nb_unigram_weight": 0.0, "nb_bigram_weight": 0.0, "embedding_dropout": 0.0},
        _DEFAULT_LAMA,
        {**_DEFAULT_LAMA, "lr": 3e-4},
    ],
    "duo": [
        {"nb_unigram_weight": 0.0, "nb_bigram_weight": 0.0, "embedding_dropout": 0.0},
        {"nb_unigram_weight": 3.0, "nb_bigram_weight": 1.0, "embedding_dropout": 0.5},
    ],
    "fcsr": [
        {"nb_unigram_weight": 0.0, "nb_bigram_weight": 0.0, "embedding_dropout": 0.0},
        {"nb_unigram_weight": 0.0, "nb_bigram_weight": 3.0, "embedding_dropout": 0.0},
    ],
}
SIZES = {
    "quick": {
        "train_limit": 300,
        "cv": 2,
        "models": ["lama"],
        "candidates": 2,
        "overrides": {"max_epochs": 1},
        "jobs": 1,
    },
    "full": {
        "train_limit": None,
        "cv": 2,
        "models": ["lama", "duo", "fcsr"],
        "candidates": None,
        "overrides": {},
        "jobs": 2,
    },
}
DEFAULT_CORPORA = ["mr"]


def cell(corpus, model, candidate, fold, cv, train_limit, overrides):
    """Fit on the other folds of ``corpus``'s training split, score on fold ``fold``."""
    import time

    from sklearn.model_selection import StratifiedKFold

    from ._data import head, load
    from ._models import make

    X, y, _, _ = load(corpus)  # the test split is dropped here, unread
    X, y = head(X, y, train_limit)
    X, y = np.asarray(X, dtype=object), np.asarray(y)
    folds = StratifiedKFold(cv, shuffle=True, random_state=0).split(X, y)
    train, valid = list(folds)[fold]
    settings = {**candidate, **overrides}
    # Keys with a step prefix ("emb__epochs") are the pipeline's, the others the classifier's.
    estimator = make(model, seed=0, **{k: v for k, v in settings.items() if "__" not in k})
    estimator.set_params(**{k: v for k, v in settings.items() if "__" in k})
    start, cpu_start = time.perf_counter(), time.process_time()
    estimator.fit(list(X[train]), y[train])
    fit_s, cpu_s = time.perf_counter() - start, time.process_time() - cpu_start
    accuracy = float(np.mean(estimator.predict(list(X[valid])) == y[valid]))
    history = estimator[-1].net_.history
    # Early stopping holds nothing out of a corpus too small for a stratified split.
    losses = history[:, "valid_loss"] if "valid_loss" in history[-1] else []
    return {
        "n_train": len(train),
        "n_valid": len(valid),
        "accuracy": accuracy,
        "fit_s": fit_s,
        "fit_cpu_s": cpu_s,
        "epochs": len(history),
        # The epoch of least validation loss (early stopping's), counted from 1.
        "best_epoch": int(np.argmin(losses)) + 1 if len(losses) else None,
    }


def _cv(corpus, jobs, cfg, threads, log):
    """The CV rows of every ``(model, candidate)`` of ``jobs`` on ``corpus``."""

    def done(kwargs, r):
        log(
            f"{corpus_name(corpus):4s} {kwargs['model']:5s} {kwargs['candidate']} "
            f"fold {kwargs['fold']}: "
            + (
                f"acc {r['accuracy']:.4f} fit {r['fit_s']:.1f} s "
                f"epochs {r['epochs']} (best {r['best_epoch']})"
                if "error" not in r
                else f"FAILED {r['error']}"
            )
        )

    cells = [
        dict(
            corpus=corpus,
            model=model,
            candidate=candidate,
            fold=fold,
            cv=cfg["cv"],
            train_limit=cfg["train_limit"],
            overrides=cfg["overrides"],
        )
        for model, candidate in jobs
        for fold in range(cfg["cv"])
    ]
    reused = _previous(cfg.get("reuse"))
    key = lambda k: (corpus_name(k["corpus"]), k["model"], _key(k["candidate"]), k["fold"])  # noqa: E731
    todo = [k for k in cells if key(k) not in reused]
    fitted = iter(run_cells("benchmarks.select:cell", threads, todo, cfg["jobs"], done))
    rows = [dict(reused[key(k)], reused=True) if key(k) in reused else next(fitted) for k in cells]
    for kwargs, r in zip(cells, rows):
        r.update(
            corpus=corpus_name(corpus),
            model=kwargs["model"],
            candidate=kwargs["candidate"],
            fold=kwargs["fold"],
        )
    return rows


def _previous(path):
    """The rows of a previous run's JSON at ``path``, by (corpus, model, candidate, fold)."""
    if not path:
        return {}
    import json

    with open(path) as fh:
        rows = json.load(fh)["results"]
    previous = {}
    for r in rows:
        if "error" not in r:
            corpus, candidate = r.get("fitted", (r["corpus"], r["candidate"]))
            previous[(corpus, r["model"], _key(candidate), r["fold"])] = {
                k: v for k, v in r.items() if k not in ("fitted", "reused")
            }
    return previous


def _cells(rows, corpus, model, candidate):
    """The rows of ``candidate`` of ``model`` on ``corpus`` that did not fail."""
    return [
        r
        for r in rows
        if (r["corpus"], r["model"], r["candidate"]) == (corpus, model, candidate)
        and "error" not in r
    ]


def _mean(rows, corpus, model, candidate):
    acc = [r["accuracy"] for r in _cells(rows, corpus, model, candidate)]
    return float(np.mean(acc)) if acc else float("nan")


# A CV accuracy over MR's 7,108 training documents has a standard error of
# about half a point: a smaller gain does not move a default.
MARGIN = 0.005


def choose(candidates, means):
    """The default (the second candidate) unless another's CV mean beats it by ``MARGIN``."""
    incumbent = min(1, len(candidates) - 1)
    best = int(np.nanargmax(means))
    return candidates[best if means[best] - means[incumbent] > MARGIN else incumbent]


def run(cfg, threads, corpora, log):
    corpora = corpora or DEFAULT_CORPORA
    selection = corpora[0]
    jobs = [(m, c) for m in cfg["models"] for c in CANDIDATES[m][: cfg["candidates"]]]
    rows = _cv(selection, jobs, cfg, threads, log)
    name, chosen = corpus_name(selection), {}
    for model in cfg["models"]:
        candidates = CANDIDATES[model][: cfg["candidates"]]
        chosen[model] = choose(candidates, [_mean(rows, name, model, c) for c in candidates])
        log(f"{model}: chosen {chosen[model]}")
    confirm = [
        (m, dict(key))
        for m in cfg["models"]
        for key in dict.fromkeys(map(_key, (CANDIDATES[m][0], chosen[m])))
    ]
    for corpus in corpora[1:]:
        rows += _cv(corpus, confirm, cfg, threads, log)
    return {
        "name": NAME,
        "config": {**cfg, "corpora": corpora, "candidates_tried": CANDIDATES},
        "chosen": chosen,
        "results": rows,
    }


def epochs_run(rows):
    """``"best of run"`` epochs of each CV row (the epochs alone without a held-out split)."""
    return ", ".join(
        f"{r['best_epoch']} of {r['epochs']}"
        if r.get("best_epoch") is not None
        else str(r["epochs"])
        for r in rows
    )


def _key(candidate):
    return tuple(sorted(candidate.items()))


def _describe(candidate):
    return ", ".join(
        f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in candidate.items()
    )


def render(
    payload, doc=__doc__, title="Defaults chosen by cross-validation on the training split"
):
    """The report of a selection's ``payload``: ``title``, then the body of ``doc``."""
    cfg, rows = payload["config"], payload["results"]
    rep = Report(payload["name"], title)
    rep.text(doc.split("\n\n", 1)[1].replace("\n", " "))
    rep.text(
        f"{cfg['cv']}-fold stratified CV (shuffled, seed 0); every fit with the README's "
        f"pipeline at its defaults but for the candidate's settings"
        + (f" and {cfg['overrides']}" if cfg["overrides"] else "")
        + (
            f"; at most {cfg['train_limit']} training documents (checks the suite only)"
            if cfg["train_limit"]
            else ""
        )
        + ". CV accuracy: mean over the folds; the chosen candidate of each model "
        "is marked."
    )
    if cfg.get("note"):
        rep.text(cfg["note"])
    for corpus in dict.fromkeys(r["corpus"] for r in rows):
        table = []
        for model in dict.fromkeys(r["model"] for r in rows if r["corpus"] == corpus):
            reference = cfg["candidates_tried"][model][0]
            base = _mean(rows, corpus, model, reference)
            for key in dict.fromkeys(
                _key(r["candidate"]) for r in rows if (r["corpus"], r["model"]) == (corpus, model)
            ):
                candidate = dict(key)
                part = [
                    r
                    for r in rows
                    if (r["corpus"], r["model"], _key(r["candidate"])) == (corpus, model, key)
                ]
                ok = [r for r in part if "error" not in r]
                mean = _mean(rows, corpus, model, candidate)
                chosen = _key(payload["chosen"].get(model, {})) == key
                table.append(
                    [
                        model.upper() if model != "duo" else "Duo",
                        _describe(candidate) + (" (chosen)" if chosen else ""),
                        f"{mean:.4f}" if ok else "failed",
                        ", ".join(f"{r['accuracy']:.4f}" for r in ok),
                        f"{(mean - base) * 100:+.2f}" if ok and np.isfinite(base) else "",
                        sig(np.mean([r["fit_s"] for r in ok])) if ok else "",
                        sig(np.mean([r["fit_cpu_s"] for r in ok]))
                        if ok and all("fit_cpu_s" in r for r in ok)
                        else "n/a",
                        epochs_run(ok),
                    ]
                )
        rep.text(f"**{corpus}** (training split only)")
        rep.table(
            [
                "model",
                "candidate",
                "CV accuracy",
                "per fold",
                "vs first candidate (points)",
                "fit s (mean)",
                "fit CPU s (mean)",
                "epochs (best of run)",
            ],
            table,
        )
    return rep, _plotter(payload)


def _plotter(payload):
    rows = payload["results"]

    def plot(fig):
        corpora = list(dict.fromkeys(r["corpus"] for r in rows))
        for i, corpus in enumerate(corpora):
            ax = fig.add_subplot(1, len(corpora), i + 1)
            labels, means, colours = [], [], []
            for model in dict.fromkeys(r["model"] for r in rows if r["corpus"] == corpus):
                for key in dict.fromkeys(
                    _key(r["candidate"])
                    for r in rows
                    if (r["corpus"], r["model"]) == (corpus, model)
                ):
                    labels.append(f"{model}: " + _describe(dict(key)).replace("nb_", ""))
                    means.append(_mean(rows, corpus, model, dict(key)))
                    chosen = _key(payload["chosen"].get(model, {})) == key
                    colours.append("#1f77b4" if chosen else "#999999")
            ax.barh(range(len(labels)), means, color=colours)
            ax.set_yticks(range(len(labels)), labels, fontsize=6)
            finite = [m for m in means if np.isfinite(m)] or [0.5]
            ax.set(
                title=f"{corpus}: CV accuracy on the training split (chosen in blue)",
                xlim=(min(finite) - 0.01, max(finite) + 0.005),
            )

    return plot
