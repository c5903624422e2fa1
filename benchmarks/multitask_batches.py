"""Training batches of a multi-task fit, one corpus each or mixed: chosen by cross-validation.

MR and R8 as the two tasks of one model, as in the ``multilabel`` part's
multi-task cell, on their training splits only: two-fold cross-validation
(each corpus's training split cut in two halves stratified by its label;
fold ``k`` trains on half ``k`` of both corpora and scores each task on the
other half of its corpus). For each model's default pipeline and each
batching:

- ``grouped``: training batches of documents labelled for the same tasks,
  each bucketed by length within its group (``MultiOutput.batch_groups``);
- ``mixed``: batches of any documents, bucketed by length together (the
  batching before 0.9.0, ``batch_groups`` returning ``None``).

Rule: the batching of the highest cross-validated accuracy (the mean over
the two tasks, the folds and the models), unless the other is within
``TOLERANCE`` of it and costs fewer CPU seconds in all. Each fit runs in a
process of its own with one torch thread, two at a time.

Run ``python -m benchmarks.multitask_batches`` (about 10 minutes on two
cores); it writes ``benchmarks/results/multitask-batches.{json,md}``.
"""

import numpy as np

from ._harness import experiment_parser, run_experiment

MODELS = ("lama", "fcsr", "duo")
BATCHINGS = ("grouped", "mixed")
FOLDS = 2
# Accuracy points within which the cheaper batching is preferred.
TOLERANCE = 0.0025


def training_halves(fold):
    """``{corpus: (train texts, train labels, held-out texts, held-out labels)}`` of fold ``fold``.

    Each corpus's training split cut in two halves stratified by its label;
    fold ``k`` trains on half ``k``.
    """
    from sklearn.model_selection import StratifiedKFold

    from sklearn_lama.datasets import load_mr, load_r8

    halves = {}
    for name, loader in (("mr", load_mr), ("r8", load_r8)):
        X, y = loader(subset="train", return_X_y=True)
        y = np.asarray(y)
        splits = StratifiedKFold(FOLDS, shuffle=True, random_state=0).split(X, y)
        train, test = list(splits)[fold]
        halves[name] = ([X[i] for i in train], y[train], [X[i] for i in test], y[test])
    return halves


def cell(model, batching, fold, max_epochs=None):
    """Accuracy per task on the held-out halves and fit cost of one joint fit (child process)."""
    from sklearn_lama.classification._targets import MultiOutput

    from .multilabel import _pipeline, _timed_fit

    if batching == "mixed":
        MultiOutput.batch_groups = lambda self, codes: None
    halves = training_halves(fold)
    texts = halves["mr"][0] + halves["r8"][0]
    Y = np.full((len(texts), 2), None, dtype=object)
    Y[: len(halves["mr"][0]), 0] = halves["mr"][1]
    Y[len(halves["mr"][0]) :, 1] = halves["r8"][1]
    pipe = _pipeline(model, max_epochs)
    fit_s, fit_cpu_s = _timed_fit(pipe, texts, Y)
    result = {"fit_s": fit_s, "fit_cpu_s": fit_cpu_s, "epochs": pipe[-1].n_epochs_}
    for k, name in enumerate(halves):
        predicted = pipe.predict(halves[name][2])[:, k]
        result[name] = float(np.mean(predicted == halves[name][3]))
    return result


def summarise(rows):
    """Per model and batching: mean accuracy per task and over tasks, CPU seconds of all folds."""
    table = {}
    for r in rows:
        entry = table.setdefault((r["model"], r["batching"]), {"mr": [], "r8": [], "cpu": 0.0})
        entry["mr"].append(r["mr"])
        entry["r8"].append(r["r8"])
        entry["cpu"] += r["fit_cpu_s"]
    return {
        key: {
            "mr": float(np.mean(v["mr"])),
            "r8": float(np.mean(v["r8"])),
            "mean": float(np.mean(v["mr"] + v["r8"])),
            "fit_cpu_s": v["cpu"],
        }
        for key, v in table.items()
    }


def choose(summary):
    """The batching the rule picks, from :func:`summarise`'s result."""
    models = sorted({m for m, _ in summary})
    accuracy = {b: np.mean([summary[m, b]["mean"] for m in models]) for b in BATCHINGS}
    cost = {b: sum(summary[m, b]["fit_cpu_s"] for m in models) for b in BATCHINGS}
    best = max(BATCHINGS, key=accuracy.get)
    other = next(b for b in BATCHINGS if b != best)
    if accuracy[best] - accuracy[other] <= TOLERANCE and cost[other] < cost[best]:
        return other, accuracy, cost
    return best, accuracy, cost


def markdown(meta, rows):
    summary = summarise(rows)
    chosen, accuracy, cost = choose(summary)
    lines = [
        "# Multi-task training batches: one corpus each, or mixed (2-fold CV on the "
        "training splits)",
        "",
        f"- date: {meta['date']}; commit: {meta['git_commit']}; command: ``{meta['command']}``",
        f"- machine: {meta['machine']['cpu']}, {meta['machine']['cores']} cores; one torch "
        "thread per fit, two fits at a time; 1-minute load average "
        f"{meta['loadavg_start']} at start, {meta['loadavg_end']} at end",
        "",
        "MR and R8 training splits as two tasks of one model; each corpus's training split "
        "cut in two stratified halves, fold k trains on half k of both and scores each task "
        "on the other half. Accuracy: mean of the two folds; CPU seconds: both folds.",
        "",
        "| model | batching | MR CV acc. | R8 CV acc. | mean | fit CPU s (2 folds) |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for (model, batching), s in sorted(summary.items()):
        lines.append(
            f"| {model} | {batching} | {s['mr']:.4f} | {s['r8']:.4f} | {s['mean']:.4f} | "
            f"{s['fit_cpu_s']:.0f} |"
        )
    lines += [
        "",
        "Mean over models: "
        + "; ".join(f"{b} accuracy {accuracy[b]:.4f}, {cost[b]:.0f} CPU s" for b in BATCHINGS)
        + f". Rule (highest accuracy unless the other is within {TOLERANCE * 100:.2f} point "
        f"and cheaper): **{chosen}**.",
        "",
    ]
    return "\n".join(lines)


def main(argv=None):
    p = experiment_parser(__doc__)
    p.add_argument("--model", action="append", choices=MODELS, default=None)
    args = p.parse_args(argv)
    kwargs = [
        {"model": m, "batching": b, "fold": f}
        for m in args.model or MODELS
        for b in BATCHINGS
        for f in range(FOLDS)
    ]
    run_experiment(
        "multitask-batches",
        "benchmarks.multitask_batches:cell",
        kwargs,
        args.jobs,
        args.out_dir,
        markdown,
    )


if __name__ == "__main__":
    main()
