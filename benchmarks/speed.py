"""Speed levers, chosen by cross-validation on the training split; the test split is never read.

Every lever is a set of parameters of a README pipeline
(``sklearn_lama._main._pipelines.default_pipeline``) on top of its defaults:
fewer word2vec passes, narrower word vectors, a larger training batch. Each (model, lever) is
scored by stratified k-fold cross-validation on the training split of the
selection corpus, with the ``select`` part's cells (each fold a fit of the
whole pipeline on the other folds, ``random_state`` 0), for CV accuracy and
whole-pipeline fit time (wall and CPU seconds).

The rule: a lever is admissible on a corpus when its CV accuracy there is at
most ``TOLERANCE`` below the baseline's (the defaults before this part) and
its mean fit CPU seconds are below the baseline's (a lever that costs more
somewhere is no speed lever). On
every further corpus given, the baseline and each lever admissible on the
selection corpus are cross-validated again on its training split, so that a
choice must hold on a corpus it was not made on. A model takes the cheapest
lever (least mean fit CPU seconds on the selection corpus) admissible on
every corpus; otherwise it keeps the baseline. Test accuracy and fit time of
the resulting defaults are measured afterwards, once, by the ``accuracy``
and ``cost`` parts.
"""

import numpy as np

from ._data import corpus_name
from ._report import Report, sig
from .select import _cv, _key, epochs_run

NAME = "speed"
OURS = ("lama", "fcsr", "duo")
SHORT = {"lama": "LAMA", "fcsr": "FCSR", "duo": "Duo"}

# A lever may cost at most this much CV accuracy (a quarter point: under the
# seed spread of a test accuracy on MR, so a lever never trades a visible
# loss for speed).
TOLERANCE = 0.0025


def _word2vec(model, **params):
    """``params`` for every word2vec model of ``model``'s pipeline."""
    prefixes = ["emb__cbow__", "emb__skipgram__"] if model == "duo" else ["emb__"]
    return {p + k: v for p in prefixes for k, v in params.items()}


def _vector_size(model, factor):
    """``vector_size`` of ``model``'s word2vec models times ``factor``."""
    if model == "duo":
        return {
            "emb__cbow__vector_size": int(50 * factor),
            "emb__skipgram__vector_size": int(100 * factor),
        }
    return {"emb__vector_size": int(100 * factor)}


# The baseline is the defaults of 0.8.0 (20 word2vec passes, batches of 32 at
# lr 1e-3), spelled out so that the comparison holds after the defaults move.
LEVERS = {
    "baseline": lambda model: {**_word2vec(model, epochs=20), "batch_size": 32, "lr": 1e-3},
    "word2vec 5 passes": lambda model: {
        **_word2vec(model, epochs=5),
        "batch_size": 32,
        "lr": 1e-3,
    },
    # Four times the batch with the learning rate scaled by its square root.
    "batch 128": lambda model: {**_word2vec(model, epochs=20), "batch_size": 128, "lr": 2e-3},
    "word2vec 5 passes, batch 128": lambda model: {
        **_word2vec(model, epochs=5),
        "batch_size": 128,
        "lr": 2e-3,
    },
    # Half the width of every word2vec table (FCSR's gates grow with its square).
    "word vectors of half the width": lambda model: {
        **_word2vec(model, epochs=20),
        **_vector_size(model, 0.5),
        "batch_size": 32,
        "lr": 1e-3,
    },
}
SIZES = {
    "quick": {
        "train_limit": 300,
        "cv": 2,
        "models": ["lama"],
        "levers": ["baseline", "word2vec 5 passes"],
        "overrides": {"max_epochs": 1},
        "jobs": 1,
    },
    "full": {
        "train_limit": None,
        "cv": 2,
        "models": list(OURS),
        "levers": list(LEVERS),
        "overrides": {},
        "jobs": 2,
    },
}
DEFAULT_CORPORA = ["mr"]


def _summary(rows, corpus, model, lever):
    """Mean CV accuracy, wall and CPU fit seconds of ``lever`` (NaN when it failed)."""
    key = _key(LEVERS[lever](model))
    ok = [
        r
        for r in rows
        if (r["corpus"], r["model"], _key(r["candidate"])) == (corpus, model, key)
        and "error" not in r
    ]
    if not ok:
        return float("nan"), float("nan"), float("nan")
    return tuple(float(np.mean([r[k] for r in ok])) for k in ("accuracy", "fit_s", "fit_cpu_s"))


def admissible(levers, summaries):
    """The levers within ``TOLERANCE`` of ``levers[0]``'s CV accuracy and cheaper, cheapest first.

    ``levers[0]`` (the baseline) is always admissible when it was measured.
    """
    base_acc, _, base_cpu = summaries[0]
    kept = [
        (cpu, lever)
        for i, (lever, (acc, _, cpu)) in enumerate(zip(levers, summaries))
        if np.isfinite(acc) and acc >= base_acc - TOLERANCE and (i == 0 or cpu < base_cpu)
    ]
    return [lever for _, lever in sorted(kept)]


def chosen_levers(rows, cfg):
    """Each model's lever under the rule, from the CV rows of every corpus of ``cfg``."""
    levers, corpora = cfg["levers"], [corpus_name(c) for c in cfg["corpora"]]
    chosen = {}
    for model in cfg["models"]:
        per_corpus = [[_summary(rows, c, model, v) for v in levers] for c in corpora]
        # A lever not measured on a further corpus was not admissible on the first.
        confirmed = [admissible(levers, here) for here in per_corpus[1:]]
        chosen[model] = choose(levers, per_corpus[0], confirmed)
    return chosen


def choose(levers, summaries, confirmed=None):
    """The cheapest lever admissible here and, when given, in every set of ``confirmed``."""
    for lever in admissible(levers, summaries):
        if lever == levers[0] or all(lever in c for c in confirmed or []):
            return lever
    return levers[0]


def run(cfg, threads, corpora, log):
    corpora = corpora or DEFAULT_CORPORA
    selection = corpus_name(corpora[0])
    levers = cfg["levers"]
    jobs = [(m, LEVERS[lever](m)) for m in cfg["models"] for lever in levers]
    rows = _cv(corpora[0], jobs, cfg, threads, log)
    candidates = {
        m: [levers[0]]
        + [
            lever
            for lever in admissible(levers, [_summary(rows, selection, m, v) for v in levers])
            if lever != levers[0]
        ]
        for m in cfg["models"]
    }
    for corpus in corpora[1:]:
        jobs = [(m, LEVERS[lever](m)) for m in cfg["models"] for lever in candidates[m]]
        rows += _cv(corpus, jobs, cfg, threads, log)
    config = {**cfg, "corpora": corpora, "tolerance": TOLERANCE}
    for model, lever in chosen_levers(rows, config).items():
        log(f"{model}: chosen {lever!r}")
    return {"name": NAME, "config": config, "results": rows}


def _lever_of(model, candidate):
    key = _key(candidate)
    return next((lever for lever in LEVERS if _key(LEVERS[lever](model)) == key), "?")


def render(payload):
    """The report and plot of a :func:`run` result (also of one read back from JSON)."""
    cfg, rows = payload["config"], payload["results"]
    chosen = chosen_levers(rows, cfg)
    rep = Report(payload["name"], "Speed levers chosen by cross-validation on the training split")
    rep.text(__doc__.split("\n\n", 1)[1].replace("\n", " "))
    if cfg.get("note"):
        rep.text(cfg["note"])
    rep.text(
        f"{cfg['cv']}-fold stratified CV (shuffled, seed 0), {cfg['jobs']} fits at a time; "
        f"tolerance {cfg['tolerance'] * 100:g} point. x: mean fit CPU seconds over the "
        "baseline's; points: CV accuracy minus the baseline's. The chosen lever of each "
        "model is marked."
        + (
            f" Quick size: at most {cfg['train_limit']} training documents and "
            f"{cfg['overrides']}: these numbers check the suite, not the levers."
            if cfg["train_limit"]
            else ""
        )
    )
    for corpus in dict.fromkeys(r["corpus"] for r in rows):
        table = []
        for model in dict.fromkeys(r["model"] for r in rows if r["corpus"] == corpus):
            levers = list(
                dict.fromkeys(
                    _lever_of(model, r["candidate"])
                    for r in rows
                    if (r["corpus"], r["model"]) == (corpus, model)
                )
            )
            base = _summary(rows, corpus, model, levers[0])
            for lever in levers:
                acc, wall, cpu = _summary(rows, corpus, model, lever)
                part = [
                    r
                    for r in rows
                    if (r["corpus"], r["model"], _lever_of(model, r["candidate"]))
                    == (corpus, model, lever)
                    and "error" not in r
                ]
                marked = chosen.get(model) == lever
                table.append(
                    [
                        SHORT[model],
                        lever + (" (chosen)" if marked else ""),
                        f"{acc:.4f}",
                        ", ".join(f"{r['accuracy']:.4f}" for r in part),
                        f"{(acc - base[0]) * 100:+.2f}",
                        sig(wall),
                        sig(cpu),
                        sig(cpu / base[2]),
                        epochs_run(part),
                    ]
                )
        rep.text(f"**{corpus}** (training split only)")
        rep.table(
            [
                "model",
                "lever",
                "CV accuracy",
                "per fold",
                "points",
                "fit s",
                "fit CPU s",
                "x",
                "epochs (best of run)",
            ],
            table,
        )
    failed = [r for r in rows if "error" in r]
    if failed:
        rep.bullets(f"{r['model']} {r['candidate']}: failed, {r['error'][:80]}" for r in failed)
    return rep, _plotter(payload)


def _plotter(payload):
    rows = [r for r in payload["results"] if "error" not in r]

    def plot(fig):
        corpora = list(dict.fromkeys(r["corpus"] for r in rows))
        for i, corpus in enumerate(corpora):
            ax = fig.add_subplot(1, len(corpora), i + 1)
            for model in dict.fromkeys(r["model"] for r in rows if r["corpus"] == corpus):
                levers = dict.fromkeys(
                    _lever_of(model, r["candidate"])
                    for r in rows
                    if (r["corpus"], r["model"]) == (corpus, model)
                )
                points = [(lever, _summary(rows, corpus, model, lever)) for lever in levers]
                ax.plot(
                    [s[2] for _, s in points],
                    [s[0] for _, s in points],
                    marker="o",
                    label=SHORT[model],
                )
                for lever, s in points:
                    ax.annotate(lever, (s[2], s[0]), fontsize=6)
            ax.set(
                xscale="log",
                xlabel="pipeline fit CPU seconds (mean over folds)",
                ylabel="CV accuracy",
                title=f"{corpus}: speed levers",
            )
            ax.grid(True, alpha=0.3)
            ax.legend(fontsize=8)

    return plot
