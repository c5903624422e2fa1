"""Which hold-out score early stopping follows: chosen on a hold-out of the training split.

Each default pipeline of the README (shipped GloVe) is fitted at its
defaults (early stopping included) on a stratified 80 % of the corpus's
*training* split and scored on the other 20 % (never the test split), once
for each ``scoring`` of early stopping: ``"loss"`` (the validation loss
falls by more than ``tol``) and ``"accuracy"`` (the validation accuracy
rises by more than ``tol``). The two fits of a seed run one after the
other, alternating. The report gives, per rule, the mean hold-out accuracy
with its spread over the seeds, the epochs trained and the fit's seconds;
the user guide says which rule is the default, and why.
"""

from ._data import corpus_name
from ._harness import run_cell
from ._models import LABELS, OURS
from ._report import Report
from .workers import accuracy_time_plot, fit_on_hold_out, report_failures, summarise

NAME = "stopping"
OPTIONS = {
    "corpus": "default: mr; a path names another (e.g. IMDB, benchmarks/data/prepare_imdb.py)",
    "threads": "cores given to each fit",
    "model": "among lama, fcsr, duo (default: all three)",
}
MODELS = OURS
CORPORA = ("mr",)
SCORINGS = ("loss", "accuracy")
SIZES = {
    "quick": {"train_limit": 2000, "seeds": [0]},
    "sample": {"train_limit": 10000, "seeds": [0, 1, 2]},
    "full": {"train_limit": None, "seeds": [0, 1, 2]},
}


def cell(model, corpus, train_limit, scoring, seed):
    """Fit ``model`` with early stopping on ``scoring`` (child process)."""
    pipe, result = fit_on_hold_out(model, corpus, train_limit, seed, scoring=scoring)
    return {**result, "epochs": int(pipe[-1].n_epochs_)}


def run(cfg, threads, corpora, log):
    rows = []
    for corpus in corpora or CORPORA:
        for model in cfg.get("models", MODELS):
            for seed in cfg["seeds"]:
                # Alternate which rule goes first, so that a drift of the machine
                # weighs on both.
                for scoring in SCORINGS if seed % 2 == 0 else SCORINGS[::-1]:
                    kwargs = dict(
                        model=model,
                        corpus=corpus,
                        train_limit=cfg["train_limit"],
                        scoring=scoring,
                        seed=seed,
                    )
                    r = run_cell("benchmarks.stopping:cell", threads, kwargs)
                    r.update(model=model, corpus=corpus_name(corpus), seed=seed, scoring=scoring)
                    log(
                        f"{corpus} {model} seed {seed} scoring {scoring}: "
                        + (
                            f"{r['seconds']:.1f} s, {r['epochs']} epochs, accuracy "
                            f"{r['accuracy']:.4f}"
                            if "error" not in r
                            else f"FAILED {r['error']}"
                        )
                    )
                    rows.append(r)
    names = sorted({corpus_name(c) for c in corpora or CORPORA})
    name = NAME if names == list(CORPORA) else "-".join([NAME, *names])
    return {"name": name, "config": {**cfg, "threads": threads}, "results": rows}


def _summary(rows):
    """``{(corpus, model, scoring): (mean s, mean epochs, mean accuracy, its range)}``."""
    return summarise(rows, ("corpus", "model", "scoring"))


def render(payload):
    """The report and plot of a :func:`run` result (also of one read back from JSON)."""
    cfg, rows = payload["config"], payload["results"]
    rep = Report(payload["name"], "Early stopping: which hold-out score it follows")
    rep.text(
        f"The default pipelines (early stopping included) fitted on 80 % of "
        f"{cfg['train_limit'] or 'all'} training documents, scored on the other 20 % of the "
        "training split (never the test split); early stopping on the validation loss "
        '(scoring="loss") and on the validation accuracy (scoring="accuracy"), every other '
        f"parameter at its default; each fit a fresh process given {cfg['threads']} cores, "
        f"one after another; seeds {cfg['seeds']}. Speed-up: over the loss rule's fit."
    )
    summary = _summary(rows)
    table = []
    for key in sorted(summary, key=lambda k: (k[0], k[1], SCORINGS.index(k[2]))):
        corpus, model, scoring = key
        sec, epochs, acc, spread = summary[key]
        base = summary.get((corpus, model, "loss"))
        table.append(
            [
                corpus,
                LABELS[model],
                scoring,
                f"{epochs:.1f}",
                f"{sec:.1f}",
                f"{base[0] / sec:.2f}x" if base else "",
                f"{acc:.4f} (±{spread / 2:.4f})",
            ]
        )
    rep.table(
        [
            "corpus",
            "model",
            "scoring",
            "epochs",
            "fit (s)",
            "speed-up",
            "hold-out accuracy (±half range)",
        ],
        table,
    )
    report_failures(rep, rows)
    return rep, accuracy_time_plot(summary, lambda key: key[2])
