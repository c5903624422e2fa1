"""How the learning rate should grow with the workers: chosen on a hold-out of the training split.

Over ``k`` workers, one optimizer step sees ``k`` batches of ``batch_size``
documents, so an epoch takes ``k`` times fewer steps. Each default pipeline
of the README (shipped GloVe) is fitted at its defaults (early stopping
included) on a stratified 80 % of the corpus's *training* split and scored
on the other 20 % (never the test split): once with one worker and the
process's threads (today's fit), and once over ``k`` workers for each
learning-rate factor of the size (``lr`` times 1, ``sqrt(k)``, ``k``: the
rules of the large-batch literature). The report gives, per configuration,
the mean hold-out accuracy with its spread over the seeds, the epochs
trained and the fit's seconds, and marks the rule of best mean hold-out
accuracy ("best"); the user guide's Scaling out page says which rule the
package follows, and why.
"""

import math

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

NAME = "batch-rule"
OPTIONS = HOLD_OUT_OPTIONS
MODELS = OURS
CORPORA = ("mr",)
SIZES = {
    "quick": {"train_limit": 2000, "workers": 2, "factors": ["1", "k"], "seeds": [0]},
    "full": {
        "train_limit": None,
        "workers": 2,
        "factors": ["1", "sqrt(k)", "k"],
        "seeds": [0, 1, 2],
    },
}
#: The learning-rate factor of each rule, for ``k`` workers.
FACTORS = {"1": lambda k: 1.0, "sqrt(k)": math.sqrt, "k": float}


def cell(model, corpus, train_limit, n_workers, factor, seed):
    """Fit ``model`` over ``n_workers`` workers at ``lr`` times ``factor`` (child process)."""
    from ._models import make

    lr = make(model)[-1].lr * factor
    pipe, result = fit_on_hold_out(model, corpus, train_limit, seed, n_workers=n_workers, lr=lr)
    return {**result, "epochs": int(pipe[-1].n_epochs_)}


def _configs(cfg):
    """``[(n_workers, rule)]``: today's fit (rule ``None``), then every rule over the workers."""
    return [(1, None)] + [(cfg["workers"], rule) for rule in cfg["factors"]]


def run(cfg, threads, corpora, log):
    rows = []
    for corpus in corpora or CORPORA:
        for model in cfg.get("models", MODELS):
            for seed in cfg["seeds"]:
                for k, rule in _configs(cfg):
                    factor = 1.0 if rule is None else FACTORS[rule](k)
                    kwargs = dict(
                        model=model,
                        corpus=corpus,
                        train_limit=cfg["train_limit"],
                        n_workers=k,
                        factor=factor,
                        seed=seed,
                    )
                    r = run_cell("benchmarks.batch_rule:cell", threads, kwargs)
                    r.update(
                        model=model, corpus=corpus_name(corpus), seed=seed, workers=k, rule=rule
                    )
                    log(f"{corpus} {model} seed {seed} workers {k} rule {rule}: {outcome(r)}")
                    rows.append(r)
    return named_payload(NAME, CORPORA, corpora, cfg, threads, rows)


def _summary(rows):
    """``{(corpus, model, workers, rule): (mean s, mean epochs, mean accuracy, its range)}``."""
    return summarise(rows, ("corpus", "model", "workers", "rule"))


def chosen(summary):
    """``{(corpus, model): rule}``: the rule of best mean hold-out accuracy over the workers."""
    best = {}
    for (corpus, model, _, rule), (_, _, accuracy, _) in summary.items():
        if rule is None:
            continue
        if (corpus, model) not in best or accuracy > best[corpus, model][1]:
            best[corpus, model] = (rule, accuracy)
    return {key: rule for key, (rule, _) in best.items()}


def render(payload):
    """The report and plot of a :func:`run` result (also of one read back from JSON)."""
    cfg, rows = payload["config"], payload["results"]
    rep = Report(payload["name"], "Data-parallel training: how the learning rate grows")
    rep.text(
        f"The default pipelines (early stopping included) fitted on 80 % of "
        f"{cfg['train_limit'] or 'all'} training documents, scored on the other 20 % of the "
        f"training split (never the test split); one worker with the default threads, then "
        f"{cfg['workers']} workers (each the default batch, one step sees {cfg['workers']} "
        f"batches) with the learning rate times each rule's factor; each fit a fresh process "
        f"given {cfg['threads']} cores, one after another; seeds {cfg['seeds']}. Speed-up: "
        "over one worker."
    )
    summary = _summary(rows)
    picks = chosen(summary)
    table = []
    for key in sorted(summary, key=lambda k: (k[0], k[1], k[2], k[3] or "")):
        corpus, model, workers, rule = key
        label = "lr (default)" if rule is None else f"lr x {rule}"
        best = rule is not None and picks.get(key[:2]) == rule
        table.append(
            [corpus, LABELS[model], workers, label + (" (best)" if best else "")]
            + summary_cells(summary[key], summary.get((corpus, model, 1, None)))
        )
    rep.table(["corpus", "model", "workers", "learning rate", *SUMMARY_COLUMNS], table)
    report_failures(rep, rows)
    return rep, _plotter(summary)


def _plotter(summary):
    def annotation(key):
        return "1 worker" if key[3] is None else f"{key[2]} x, lr x {key[3]}"

    return accuracy_time_plot(summary, annotation)
