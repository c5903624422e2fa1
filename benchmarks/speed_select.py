"""Cheaper training settings (batch size, learning rate, word2vec epochs, algorithm), chosen by CV.

The successor of the ``speed`` part (a fixed list of levers, none of which
held on both corpora in 0.9.0). The ``select`` part's procedure (stratified
k-fold CV on the training split of the selection corpus, each fold a fit of
the README's pipeline, ``random_state`` 0; the test split is never read),
with a rule that weighs cost: each model's candidates change one lever at a
time from the base (the library's defaults before this selection): the batch
size with the learning rate scaled by its square root (Adam's usual rule) or
kept, early stopping's patience, and the epochs and algorithm (skip-gram or
CBOW) of the word2vec step. Within each lever the choice is the candidate of
least fit CPU time whose CV accuracy is at most ``TOLERANCE`` below the
base's; the levers' choices are then combined and cross-validated together,
and the combination is kept if it too stays within ``TOLERANCE`` of the base
(else the faster single choice). The chosen setting and the base are
cross-validated again on every further corpus given; where the choice falls
more than ``TOLERANCE`` below the base there, its levers are cross-validated
there one at a time, and only those within tolerance on every corpus are
kept (their combination cross-validated on each). The final choice and the
base are also cross-validated with pretrained vectors (GloVe 6B 50d) when
they are installed.
"""

import numpy as np

from ._data import corpus_name
from .select import _cells, _cv, _key, _mean
from .select import render as _select_render
from .speed import TOLERANCE, _word2vec

NAME = "speed-select"
GLOVE = "glove-wiki-gigaword-50"

# Each model's base learning rate, scaled by sqrt(batch / 32) where a candidate scales it.
_LR = {"lama": 1e-3, "fcsr": 1e-2, "duo": 1e-3}


def _batch(model, size, scale=True):
    change = {"batch_size": size}
    if scale:
        change["lr"] = float(f"{_LR[model] * (size / 32) ** 0.5:.3g}")
    return change


def _levers(model):
    levers = [
        ("base", {}),
        ("batch", _batch(model, 64)),
        ("batch", _batch(model, 128)),
        ("batch", _batch(model, 256)),
        ("batch", _batch(model, 128, scale=False)),
        ("patience", {"patience": 1}),
        ("vectors", _word2vec(model, epochs=10)),
        ("vectors", _word2vec(model, epochs=5)),
    ]
    if model != "duo":
        levers += [
            ("vectors", _word2vec(model, sg=0)),
            ("vectors", _word2vec(model, sg=0, epochs=5)),
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
    cpu = [r["fit_cpu_s"] for r in _cells(rows, corpus, model, candidate)]
    return float(np.mean(cpu)) if cpu else float("inf")


def fastest_within(options, base_mean):
    """The option ``(candidate, mean, cpu)`` of least CPU time within ``TOLERANCE`` of the base."""
    kept = [o for o in options if np.isfinite(o[1]) and o[1] >= base_mean - TOLERANCE]
    return min(kept, key=lambda o: o[2]) if kept else None


def choose(model, rows, corpus, levers, log, cv_more):
    """The chosen settings of ``model`` and the single levers' picks they combine.

    Per lever the fastest candidate within tolerance of the base; then those
    picks combined, and the fastest of base, picks and combination within
    tolerance.
    """
    base = LEVERS[model][0][1]
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
    log(f"{model}: chosen {chosen[0]}")
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
        # Shown under the corpus candidate; what was fitted stays, for --reuse.
        r.update(
            corpus=f"{corpus_name(corpus)} (GloVe 50)",
            candidate=candidate,
            fitted=(r["corpus"], r["candidate"]),
        )
    return rows


def run(cfg, threads, corpora, log):
    corpora = corpora or DEFAULT_CORPORA
    selection, name = corpora[0], corpus_name(corpora[0])
    levers = {m: LEVERS[m][: cfg["levers"]] for m in cfg["models"]}
    rows = _cv(selection, [(m, c) for m in cfg["models"] for _, c in levers[m]], cfg, threads, log)

    def cv_on(corpus, jobs):
        by_name = {corpus_name(c): c for c in corpora}
        return _cv(by_name[corpus], jobs, cfg, threads, log)

    def with_base(chosen):
        """``(model, candidate)`` of each model's base and ``chosen[model]`` (once if the same)."""
        return [
            (m, dict(key))
            for m in cfg["models"]
            for key in dict.fromkeys(map(_key, ({}, chosen[m])))
        ]

    chosen, picks = {}, {}
    for m in cfg["models"]:
        chosen[m], picks[m] = choose(m, rows, name, levers[m], log, lambda j: cv_on(name, j))
    confirm = with_base(chosen)
    for corpus in corpora[1:]:
        rows += _cv(corpus, confirm, cfg, threads, log)
    names = [corpus_name(c) for c in corpora]
    for m in cfg["models"]:
        chosen[m] = hold_on(m, rows, names, chosen[m], picks[m], log, cv_on)
    confirm = with_base(chosen)
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
