"""Defaults chosen by cross-validation on a training split; the test split is never read.

Each fold is a fit of the README's pipeline (``random_state`` 0) on the other
folds of the selection corpus's training split (stratified k-fold); the test
accuracy of the chosen defaults is measured afterwards, once, by the
``accuracy`` part. Three grids of candidates (``--grid``), each model's
candidates a change of one lever at a time from its base:

* ``defaults``: the levers the library adds to the papers (Naive Bayes
  weights, embedding dropout, learning rate), against the papers' inputs;
* ``pretrained``: the same pipelines on the full GloVe 6B 50d: how words
  GloVe lacks get vectors, frozen embeddings, the Naive Bayes columns, the
  dropout and the learning rate (its results of 0.9.0 also coupled Duo's
  GloVe with corpus tables);
* ``speed``: cheaper training of the default pipelines: larger batches with
  the learning rate scaled by the square root of the batch's growth (or
  kept), early stopping's ``tol`` and Duo's patience;
* ``default``: the default pipelines, each ``Word2VecVectorizer()`` (GloVe
  6B 50d's 100,000 most frequent words, shipped with the package) and its
  classifier: how words the table lacks get vectors, frozen embeddings, the
  full 400,000-word table and, for Duo, the corpus-trained skip-gram 100
  table coupled with GloVe (the previous default on pretrained vectors);
  then the classifiers' training levers on that table (early stopping's
  patience, the weight average's horizon, the learning rate, dropout, FCSR's
  batch size, FOFE factor and width).

The ``defaults``, ``pretrained`` and ``default`` grids take each lever's best change that
beats the base by more than ``MARGIN`` (half a point, about the standard
error of a CV accuracy on MR's training split), cross-validate those changes
together, and keep the best candidate if it beats the base by ``MARGIN``,
else the base. The ``speed`` grid takes per lever the candidate of least fit
CPU time within ``TOLERANCE`` of the base's CV accuracy, combines the picks,
and keeps the fastest option within tolerance; where the choice falls below
the base on a further corpus, only the levers that hold on every corpus stay.
The choice and the base are cross-validated again on every further corpus,
to see that it holds where it was not made; a ``margin`` choice below the base
on a further corpus gives way to the base.
"""

import numpy as np

from ._data import corpus_name
from ._harness import run_cells
from ._report import Report, sig

GLOVE = "glove-wiki-gigaword-50"
# A CV accuracy over MR's 7,108 training documents has a standard error of
# about half a point: a smaller gain does not move a default.
MARGIN = 0.005
# A cheaper setting may cost at most a quarter point of CV accuracy.
TOLERANCE = 0.0025
_OFF = {"nb_unigram_weight": 0.0, "nb_bigram_weight": 0.0, "embedding_dropout": 0.0}
_OOV = {"lama": "emb__oov_vectors", "fcsr": "emb__oov_vectors", "duo": "emb__oov_vectors"}
# Each model's default batch size and learning rate; a batch candidate scales the
# learning rate by the square root of the batch's ratio to the default (Adam's usual rule).
_BATCH = {"lama": (32, 1e-3), "fcsr": (32, 1e-2), "duo": (128, 2e-3)}


def _batch(model, size, scale=True):
    default_size, default_lr = _BATCH[model]
    return {
        "batch_size": size,
        **({"lr": float(f"{default_lr * (size / default_size) ** 0.5:.3g}")} if scale else {}),
    }


def _speed_levers(model):
    size = _BATCH[model][0]
    return [
        ("base", {}),
        ("batch", _batch(model, 2 * size)),
        ("batch", _batch(model, 4 * size)),
        ("batch", _batch(model, 8 * size)),
        ("batch", _batch(model, 4 * size, scale=False)),
        *([("patience", {"patience": 1})] if model == "duo" else []),
        # FCSR keeps the most per token for its backward pass (the reliability page).
        *([("tokens", {"max_batch_tokens": 8192})] if model == "fcsr" else []),
        ("tol", {"tol": 1e-3}),
        ("tol", {"tol": 3e-3}),
        ("tol", {"tol": 1e-2}),
    ]


# Per grid: the output's name, the corpora by default, the rule, and per model
# the base settings and the levers ``(lever, change to the base)``. Where a
# "reference" comes first (the papers' inputs: no Naive Bayes columns, no
# dropout on the token vectors), the report's differences are against it.
GRIDS = {
    "defaults": {
        "name": "select",
        "corpora": ["mr"],
        "rule": "margin",
        # On corpus word2vec, the pipelines' vectors when this grid chose (0.8.0).
        "base": {
            "lama": {
                "pretrained": None,
                "nb_unigram_weight": 3.0,
                "nb_bigram_weight": 0.5,
                "embedding_dropout": 0.3,
            },
            "duo": {
                "pretrained": None,
                "nb_unigram_weight": 3.0,
                "nb_bigram_weight": 1.0,
                "embedding_dropout": 0.5,
            },
            "fcsr": {
                "pretrained": None,
                "nb_unigram_weight": 0.0,
                "nb_bigram_weight": 3.0,
                "embedding_dropout": 0.0,
            },
        },
        "levers": {
            "lama": [("reference", _OFF), ("base", {}), ("lr", {"lr": 3e-4})],
            "duo": [("reference", _OFF), ("base", {})],
            "fcsr": [("reference", _OFF), ("base", {})],
        },
    },
    "pretrained": {
        "name": "pretrained-select",
        "corpora": ["mr", "r8"],
        "rule": "margin",
        "base": {m: {"pretrained": GLOVE, _OOV[m]: "random"} for m in _OOV},
        "levers": {
            m: [
                ("reference", _OFF),
                ("base", {}),
                ("oov", {_OOV[m]: "train"}),
                ("oov", {_OOV[m]: "drop"}),
                ("freeze", {"freeze_embeddings": True}),
                *extra,
            ]
            for m, extra in {
                "lama": [
                    ("nb", {"nb_unigram_weight": 0.0, "nb_bigram_weight": 0.0}),
                    ("nb", {"nb_unigram_weight": 1.5, "nb_bigram_weight": 0.25}),
                    ("dropout", {"embedding_dropout": 0.0}),
                    ("dropout", {"embedding_dropout": 0.5}),
                    ("lr", {"lr": 3e-3}),
                    ("lr", {"lr": 3e-4}),
                ],
                "fcsr": [
                    ("nb", {"nb_unigram_weight": 0.0, "nb_bigram_weight": 1.5}),
                    ("nb", {"nb_unigram_weight": 3.0, "nb_bigram_weight": 3.0}),
                    ("dropout", {"embedding_dropout": 0.3}),
                    ("lr", {"lr": 3e-3}),
                    ("lr", {"lr": 0.03}),
                ],
                "duo": [
                    ("nb", {"nb_unigram_weight": 0.0, "nb_bigram_weight": 0.0}),
                    ("nb", {"nb_unigram_weight": 1.5, "nb_bigram_weight": 0.5}),
                    ("dropout", {"embedding_dropout": 0.2}),
                    ("dropout", {"embedding_dropout": 0.0}),
                    ("lr", {"lr": 3e-3}),
                    ("lr", {"lr": 3e-4}),
                    # Until 0.9.0 Duo coupled GloVe with corpus tables here (source names
                    # "pretrained" and "corpus"); the "default" grid compares the couple now.
                ],
            }.items()
        },
    },
    "speed": {
        "name": "speed-select",
        "corpora": ["mr", "r8"],
        "rule": "cost",
        # The default pipelines (the shipped GloVe table, nothing trained before the
        # classifier); until 0.9.0 this grid ran on corpus word2vec, with the
        # word2vec step's passes and algorithm as levers.
        "base": {m: {} for m in _BATCH},
        "levers": {m: _speed_levers(m) for m in _BATCH},
    },
}
_TRAINING = {
    "lama": [
        ("patience", {"patience": 2}),
        ("ema", {"ema_horizon": 1.0}),
        ("lr", {"lr": 2e-3}),
        ("dropout", {"embedding_dropout": 0.0}),
    ],
    "fcsr": [
        ("patience", {"patience": 2}),
        ("ema", {"ema_horizon": 1.0}),
        ("ema", {"ema_horizon": 2.0}),
        ("lr", {"lr": 3e-3}),
        ("dropout", {"dropout": 0.5}),
        ("batch", {"batch_size": 64}),
        ("alpha", {"alpha": 0.5}),
        ("hidden", {"hidden_size": 100}),
    ],
    "duo": [
        ("patience", {"patience": 3}),
        ("ema", {"ema_horizon": 1.0}),
        ("ema", {"ema_horizon": 2.0}),
        ("lr", {"lr": 1e-3}),
        ("dropout", {"embedding_dropout": 0.3}),
    ],
}
GRIDS["default"] = {
    "name": "default-select",
    "corpora": ["mr", "r8"],
    "rule": "margin",
    "base": {m: {} for m in _OOV},
    "levers": {
        m: [
            # The reference: the same pipeline on corpus word2vec (the previous default).
            ("reference", {"pretrained": None}),
            ("base", {}),
            ("oov", {"emb__oov_vectors": "drop"}),
            ("oov", {"emb__oov_vectors": "train"}),
            ("freeze", {"freeze_embeddings": m != "lama"}),
            ("table", {"emb__pretrained": GLOVE}),
            *([("couple", {"emb": "GloVe + skip-gram 100"})] if m == "duo" else []),
            # The classifiers' own training levers on that table: one more epoch of
            # patience, a longer weight average, the step size and per model a
            # regulariser or its batch and FOFE factor.
            *_TRAINING[m],
        ]
        for m in _OOV
    },
}
STEMS = tuple(g["name"] for g in GRIDS.values())


def embedding(name, seed):
    """The embedding step a candidate's ``"emb"`` names, in place of the pipeline's."""
    from sklearn_lama import MetaEmbeddingTransformer, Word2VecVectorizer

    if name != "GloVe + skip-gram 100":
        raise ValueError(f"no embedding step {name!r}")
    return MetaEmbeddingTransformer(
        [
            ("pretrained", Word2VecVectorizer(random_state=seed)),
            ("corpus", Word2VecVectorizer(pretrained=None, sg=1, random_state=seed)),
        ]
    )


NAME = "select"
OPTIONS = {
    "threads": "torch/BLAS threads of every fit",
    "corpus": "the selection corpus first, then the corpora the choice is checked on "
    "(default: the grid's)",
    "model": "among lama, fcsr, duo (default: the size's)",
    "set": "a parameter of the classifiers in every fit, over the candidates' settings",
    "jobs": "fits at a time (default: the size's)",
    "reuse": "take the CV cells that the grid's JSON in DIR measured instead of fitting them "
    "again",
    "grid": {
        "choices": list(GRIDS),
        "help": "the candidates: defaults (default: the library's levers against the papers' "
        "inputs), pretrained (on GloVe 6B 50d), speed (cheaper training settings), default "
        "(the default pipelines on the shipped GloVe table)",
    },
}
SIZES = {
    "quick": {
        "train_limit": 300,
        "cv": 2,
        "models": ["lama"],
        "levers": 3,
        "overrides": {"max_epochs": 1},
        "jobs": 1,
    },
    "full": {
        "train_limit": None,
        "cv": 2,
        "models": ["lama", "duo", "fcsr"],
        "levers": None,
        "overrides": {},
        "jobs": 1,
    },
}


def candidates(grid, model, levers=None):
    """``(lever, settings)`` of ``model`` in ``grid``: its base with each change."""
    base = GRIDS[grid]["base"][model]
    return [(lever, {**base, **change}) for lever, change in GRIDS[grid]["levers"][model][:levers]]


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
    estimator = make(
        model, seed=0, **{k: v for k, v in settings.items() if "__" not in k and k != "emb"}
    )
    if "emb" in settings:
        estimator.set_params(emb=embedding(settings["emb"], seed=0))
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
            previous[(r["corpus"], r["model"], _key(r["candidate"]), r["fold"])] = {
                k: v for k, v in r.items() if k != "reused"
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


def by_margin(grid, model, rows, corpus, levers, cv_more):
    """Each lever's best change beating the base by ``MARGIN``, combined; then the best candidate.

    The combination is cross-validated (``cv_more(jobs)`` returns rows) when it
    is not a candidate already; the best candidate replaces the base only when
    it beats it by ``MARGIN``.
    """
    tried = candidates(grid, model, levers)
    base = tried[min(1, len(tried) - 1)][1]
    means = {_key(c): _mean(rows, corpus, model, c) for _, c in tried}
    combined = dict(base)
    for lever in dict.fromkeys(lv for lv, _ in tried[2:]):
        best = max((c for lv, c in tried if lv == lever), key=lambda c: means[_key(c)])
        if means[_key(best)] - means[_key(base)] > MARGIN:
            combined.update(best)
    if _key(combined) not in means:
        rows += cv_more([(model, combined)])
        means[_key(combined)] = _mean(rows, corpus, model, combined)
    best = max(means, key=lambda k: np.nan_to_num(means[k], nan=-1.0))
    return dict(best) if means[best] - means[_key(base)] > MARGIN else base


def held(model, rows, corpora, chosen, grid, log):
    """``chosen`` if it scores at least the base on every further corpus, else the base.

    ``corpora`` are the corpus names, the selection corpus first; a default
    chosen on one corpus must not lose on another.
    """
    base = grid["base"][model]
    for corpus in corpora[1:]:
        if _mean(rows, corpus, model, chosen) < _mean(rows, corpus, model, base):
            log(f"{model}: {chosen} falls below the base on {corpus}; the base stays")
            return base
    return chosen


def _cpu(rows, corpus, model, candidate):
    cpu = [r["fit_cpu_s"] for r in _cells(rows, corpus, model, candidate)]
    return float(np.mean(cpu)) if cpu else float("inf")


def fastest_within(options, base_mean):
    """The option ``(candidate, mean, cpu)`` of least CPU time within ``TOLERANCE`` of the base."""
    kept = [o for o in options if np.isfinite(o[1]) and o[1] >= base_mean - TOLERANCE]
    return min(kept, key=lambda o: o[2]) if kept else None


def by_cost(model, rows, corpus, levers, log, cv_more):
    """The chosen settings of ``model`` and the single levers' picks they combine.

    Per lever the fastest candidate within tolerance of the base; then those
    picks combined, and the fastest of base, picks and combination within
    tolerance.
    """
    base = levers[0][1]
    score = lambda c: (c, _mean(rows, corpus, model, c), _cpu(rows, corpus, model, c))  # noqa: E731
    base_option = score(base)
    picks = []
    for lever in dict.fromkeys(lv for lv, _ in levers[1:]):
        options = [base_option] + [score(c) for lv, c in levers if lv == lever]
        pick = fastest_within(options, base_option[1])
        if pick is not None and _key(pick[0]) != _key(base):
            picks.append(pick)
    options = list(picks)
    if len(picks) > 1:
        combined = _merge(p[0] for p in picks)
        rows += cv_more([(model, combined)])
        options.append(score(combined))
    chosen = fastest_within([base_option, *options], base_option[1])
    return chosen[0], [p[0] for p in picks]


def _merge(candidates):
    return {k: v for c in candidates for k, v in c.items()}


def hold_on(model, rows, corpora, chosen, picks, log, cv_on):
    """``chosen`` if within tolerance of the base on every corpus, else the levers that are.

    ``corpora`` are the corpus names, the selection corpus first; every
    corpus's rows of ``chosen`` and the base exist. Where ``chosen`` falls
    more than ``TOLERANCE`` below the base, each single pick is
    cross-validated there (``cv_on(corpus, jobs)`` returns rows); the picks
    within tolerance there, merged, and each alone are the options, each
    cross-validated where it was not; the option of least CPU time (summed
    over the corpora) within tolerance on every corpus is kept, else the base.
    """
    measured = lambda c, corpus: any(  # noqa: E731
        (r["corpus"], r["model"], _key(r["candidate"])) == (corpus, model, _key(c)) for r in rows
    )
    within = lambda c, corpus: (  # noqa: E731
        _mean(rows, corpus, model, c) >= _mean(rows, corpus, model, {}) - TOLERANCE
    )
    cost = lambda c: sum(_cpu(rows, corpus, model, c) for corpus in corpora)  # noqa: E731
    for corpus in corpora[1:]:
        if within(chosen, corpus):
            continue
        log(f"{model}: {chosen} falls below the base on {corpus}; its levers one at a time")
        rows += cv_on(corpus, [(model, p) for p in picks if _key(p) != _key(chosen)])
        kept = [p for p in picks if within(p, corpus)]
        options = list({_key(o): o for o in [_merge(kept), *kept] if o}.values())
        for option in options:
            for other in corpora:
                if not measured(option, other):
                    rows += cv_on(other, [(model, option)])
        held = [o for o in options if all(within(o, other) for other in corpora)]
        chosen = min(held, key=cost) if held else {}
        log(f"{model}: chosen {chosen}")
    return chosen


def run(cfg, threads, corpora, log):
    grid = GRIDS[cfg.get("grid") or "defaults"]
    corpora = corpora or grid["corpora"]
    selection, name = corpora[0], corpus_name(corpora[0])
    cfg = dict(cfg, reuse=cfg.get("reuse") and f"{cfg['reuse']}/{grid['name']}.json")
    key = cfg.get("grid") or "defaults"
    levers = {m: candidates(key, m, cfg["levers"]) for m in cfg["models"]}
    rows = _cv(selection, [(m, c) for m in cfg["models"] for _, c in levers[m]], cfg, threads, log)

    def cv_on(corpus, jobs):
        return _cv({corpus_name(c): c for c in corpora}[corpus], jobs, cfg, threads, log)

    def with_base(chosen):
        return [
            (m, dict(k))
            for m in cfg["models"]
            for k in dict.fromkeys(map(_key, (grid["base"][m], chosen[m])))
        ]

    chosen, picks = {}, {}
    for m in cfg["models"]:
        if grid["rule"] == "cost":
            chosen[m], picks[m] = by_cost(m, rows, name, levers[m], log, lambda j: cv_on(name, j))
        else:
            chosen[m] = by_margin(key, m, rows, name, cfg["levers"], lambda j: cv_on(name, j))
        log(f"{m}: chosen {chosen[m]}")
    for corpus in corpora[1:]:
        rows += _cv(corpus, with_base(chosen), cfg, threads, log)
    if grid["rule"] == "margin":
        for m in cfg["models"]:
            chosen[m] = held(m, rows, [corpus_name(c) for c in corpora], chosen[m], grid, log)
    if grid["rule"] == "cost":
        names = [corpus_name(c) for c in corpora]
        for m in cfg["models"]:
            chosen[m] = hold_on(m, rows, names, chosen[m], picks[m], log, cv_on)
    return {
        "name": grid["name"],
        "config": {
            **cfg,
            "corpora": corpora,
            "margin": MARGIN,
            "tolerance": TOLERANCE,
            "candidates_tried": {m: [c for _, c in levers[m]] for m in cfg["models"]},
        },
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


# Title and rule of each grid's report, by the name of its results.
_ABOUT = {
    "select": (
        "Defaults chosen by cross-validation on the training split",
        "The levers the library adds to the papers, against the papers' inputs (the first "
        "candidate); the default stays unless another candidate beats it by more than half a "
        "point.",
    ),
    "pretrained-select": (
        "Defaults for pretrained vectors (GloVe 6B 50d) chosen by cross-validation on the "
        "training split",
        "One lever at a time from the base (the library's defaults on GloVe, random vectors "
        "for the words GloVe lacks); a lever moves when its best value beats the base by more "
        "than half a point, the moving levers are combined, and the best candidate replaces "
        "the base only by that margin.",
    ),
    "default-select": (
        "Defaults of the one-line pipelines on the shipped GloVe table, chosen by "
        "cross-validation on the training split",
        "One lever at a time from the base (``Word2VecVectorizer()`` and the classifier at "
        "their defaults: GloVe 6B 50d's 100,000 most frequent words, shipped with the "
        "package); the first candidate is the same pipeline on corpus word2vec "
        "(``pretrained=None``, Duo's CBOW 50 + skip-gram 100 couple). The vectors' levers come "
        "first, then the classifiers' own (patience, weight averaging, learning rate, "
        "regularisers). A lever moves when its best value beats the base by more than half a "
        "point, the moving levers are combined, and the best candidate replaces the base only "
        "by that margin and only if it scores at least the base on the other corpus.",
    ),
    "speed-select": (
        "Cheaper training settings chosen by cross-validation on the training split",
        "One lever at a time from the base; per lever the candidate of least fit CPU time "
        "within a quarter point of the base's CV accuracy, the picks combined, and only the "
        "levers that hold on every corpus kept.",
    ),
}


def render(payload):
    """The report of a selection's ``payload`` (any grid's)."""
    # A run of a grid on other corpora is filed as "<grid's name>-<corpus>".
    name = payload["name"]
    title, about = _ABOUT[name if name in _ABOUT else name.rsplit("-", 1)[0]]
    cfg, rows = payload["config"], payload["results"]
    rep = Report(payload["name"], title)
    rep.text(about)
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
    if cfg.get("trimmed"):  # a candidate of the pretrained grid until 0.10.0
        rep.text(
            f"LAMA also read a trimmed GloVe table ({cfg['trimmed_table']}: the 100,000 most "
            "frequent words, values rounded to float16), to see what a copy small enough to ship "
            "with the package would lose."
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
