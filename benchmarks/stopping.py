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
from .workers import (
    HOLD_OUT_OPTIONS,
    SUMMARY_COLUMNS,
    accuracy_time_plot,
    fit_on_hold_out,
    named_payload,
    outcome,
    report_failures,
    summarise,
    summary_cells,
)

NAME = "stopping"
OPTIONS = HOLD_OUT_OPTIONS
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
                    log(f"{corpus} {model} seed {seed} scoring {scoring}: {outcome(r)}")
                    rows.append(r)
    return named_payload(NAME, CORPORA, corpora, cfg, threads, rows)


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
    table = [
        [corpus, LABELS[model], scoring]
        + summary_cells(summary[corpus, model, scoring], summary.get((corpus, model, "loss")))
        for corpus, model, scoring in sorted(
            summary, key=lambda k: (k[0], k[1], SCORINGS.index(k[2]))
        )
    ]
    rep.table(["corpus", "model", "scoring", *SUMMARY_COLUMNS], table)
    report_failures(rep, rows, "scoring")
    return rep, accuracy_time_plot(summary, lambda key: key[2])
