"""Cheaper training settings (batch size, learning rate, word2vec epochs, algorithm), chosen by CV.

The ``select`` part's procedure (stratified k-fold CV on the training split of
the selection corpus, each fold a fit of the README's pipeline,
``random_state`` 0; the test split is never read), with a rule that weighs
cost: each model's candidates change one lever at a time from the base (the
library's defaults before this selection): the batch size with the learning
rate scaled by its square root (Adam's usual rule) or kept, early stopping's
patience, and the epochs and algorithm (skip-gram or CBOW) of the word2vec
step. Within each lever the
choice is the candidate of least fit CPU time whose CV accuracy is at most
``TOLERANCE`` below the base's; the levers' choices are then combined and
cross-validated together, and the combination is kept if it too stays within
``TOLERANCE`` of the base (else the faster single choice). The chosen setting
and the base are cross-validated again on every further corpus given, and with
pretrained vectors (GloVe 6B 50d) when they are installed.
"""

import numpy as np

from ._data import corpus_name
from .select import _cv, _key, _mean
from .select import render as _select_render

NAME = "speed-select"
GLOVE = "glove-wiki-gigaword-50"

# A quarter point: half the standard error of a CV accuracy on MR's training
# split, so that a setting is taken for speed only where accuracy is not
# measurably lower.
TOLERANCE = 0.0025

# Each model's base learning rate, scaled by sqrt(batch / 32) where a candidate scales it.
_LR = {"lama": 1e-3, "fcsr": 1e-2, "duo": 1e-3}


def _batch(model, size, scale=True):
    change = {"batch_size": size}
    if scale:
        change["lr"] = float(f"{_LR[model] * (size / 32) ** 0.5:.3g}")
    return change


def _vectors(model, **params):
    """``params`` for the word2vec step(s) of ``model``'s pipeline (Duo's two tables alike)."""
    if model == "duo":
        # Duo's corpus tables are CBOW 50 and skip-gram 100: their epochs only.
        tables = ("cbow", "skipgram")
        return {f"emb__{table}__{k}": v for table in tables for k, v in params.items()}
    return {f"emb__{k}": v for k, v in params.items()}


def _levers(model):
    levers = [
        ("base", {}),
        ("batch", _batch(model, 64)),
        ("batch", _batch(model, 128)),
        ("batch", _batch(model, 256)),
        ("batch", _batch(model, 128, scale=False)),
        ("patience", {"patience": 1}),
        ("vectors", _vectors(model, epochs=10)),
        ("vectors", _vectors(model, epochs=5)),
    ]
    if model != "duo":
        levers += [
            ("vectors", _vectors(model, sg=0)),
            ("vectors", _vectors(model, sg=0, epochs=5)),
        ]
    return levers


LEVERS = {model: _levers(model) for model in ("lama", "fcsr", "duo")}
SIZES = {
    "quick": {
        "train_limit": 300,
        "cv": 2,
        "models": ["duo"],
        "levers": 3,
        "overrides": {"max_epochs": 1},
        "jobs": 1,
        "pretrained": False,
    },
    "full": {
        "train_limit": None,
        "cv": 2,
        "models": ["lama", "fcsr", "duo"],
        "levers": None,
        "overrides": {},
        "jobs": 1,
        "pretrained": True,
    },
}
DEFAULT_CORPORA = ["mr", "r8"]


def _cpu(rows, corpus, model, candidate):
    cpu = [
        r["fit_cpu_s"]
        for r in rows
        if (r["corpus"], r["model"], _key(r["candidate"])) == (corpus, model, _key(candidate))
        and "error" not in r
    ]
    return float(np.mean(cpu)) if cpu else float("inf")


def fastest_within(options, base_mean):
    """The option ``(candidate, mean, cpu)`` of least CPU time within ``TOLERANCE`` of the base."""
    kept = [o for o in options if np.isfinite(o[1]) and o[1] >= base_mean - TOLERANCE]
    return min(kept, key=lambda o: o[2]) if kept else None


def choose(model, rows, corpus, levers, log, cv_more):
    """The chosen settings of ``model``: per lever the fastest within tolerance, then combined."""
    base = LEVERS[model][0][1]
    score = lambda c: (c, _mean(rows, corpus, model, c), _cpu(rows, corpus, model, c))  # noqa: E731
    base_option = score(base)
    picks = []
    for lever in dict.fromkeys(lv for lv, _ in levers[1:]):
        options = [base_option] + [score(c) for lv, c in levers if lv == lever]
        pick = fastest_within(options, base_option[1])
        if pick is not None and _key(pick[0]) != _key(base):
            picks.append(pick)
    if len(picks) > 1:
        combined = {k: v for pick in picks for k, v in pick[0].items()}
        rows += cv_more([(model, combined)])
        picks.append(score(combined))
    chosen = fastest_within([base_option, *picks], base_option[1])
    log(f"{model}: chosen {chosen[0]}")
    return chosen[0]


def on_pretrained(model, candidate):
    """``candidate`` for the pipeline of ``model`` on GloVe: the word2vec levers where they apply.

    A pretrained table is not trained, so LAMA's and FCSR's word2vec levers
    fall away; Duo's second table (skip-gram 100 on the corpus, source
    ``"corpus"``) takes those of its corpus skip-gram table.
    """
    prefix = "emb__skipgram__"
    changes = {
        ("emb__corpus__" + k[len(prefix) :] if k.startswith(prefix) else k): v
        for k, v in candidate.items()
        if not k.startswith("emb__") or (model == "duo" and k.startswith(prefix))
    }
    return {"pretrained": GLOVE, **changes}


def _cv_pretrained(corpus, jobs, cfg, threads, log):
    """CV rows of ``jobs`` on GloVe, filed as corpus ``"<corpus> (GloVe 50)"``."""
    from sklearn_lama.text._pretrained import PRETRAINED

    if PRETRAINED[GLOVE].find() is None:
        log(f"{GLOVE} is not installed: the pretrained confirmation is skipped")
        return []
    rows = _cv(corpus, [(m, on_pretrained(m, c)) for m, c in jobs], cfg, threads, log)
    for (_, candidate), r in zip([job for job in jobs for _ in range(cfg["cv"])], rows):
        r.update(corpus=f"{corpus_name(corpus)} (GloVe 50)", candidate=candidate)
    return rows


def run(cfg, threads, corpora, log):
    corpora = corpora or DEFAULT_CORPORA
    selection, name = corpora[0], corpus_name(corpora[0])
    levers = {m: LEVERS[m][: cfg["levers"]] for m in cfg["models"]}
    rows = _cv(selection, [(m, c) for m in cfg["models"] for _, c in levers[m]], cfg, threads, log)

    def cv_more(jobs):
        return _cv(selection, jobs, cfg, threads, log)

    chosen = {m: choose(m, rows, name, levers[m], log, cv_more) for m in cfg["models"]}
    confirm = [
        (m, dict(key)) for m in cfg["models"] for key in dict.fromkeys(map(_key, ({}, chosen[m])))
    ]
    for corpus in corpora[1:]:
        rows += _cv(corpus, confirm, cfg, threads, log)
    if cfg["pretrained"]:
        rows += _cv_pretrained(selection, confirm, cfg, threads, log)
    return {
        "name": NAME,
        "config": {
            **cfg,
            "corpora": corpora,
            "tolerance": TOLERANCE,
            "candidates_tried": {m: [c for _, c in levers[m]] for m in cfg["models"]},
        },
        "chosen": chosen,
        "results": rows,
    }


def render(payload):
    return _select_render(
        payload,
        __doc__,
        "Cheaper training settings chosen by cross-validation on the training split",
    )
