"""The multi-task comparison of the ``multilabel`` part over three seeds.

The part's multi-task cell (MR and R8 as two tasks of one model against one
model per corpus, all training documents, default epochs, each model's
default pipeline) measured with ``random_state`` 1 and 2 here; seed 0 is
read from the part's result (``multilabel.json`` in the same folder). The
report gives each task's test accuracy, joint and separate, as mean ± std
over the three seeds, the mean gap per task, and each seed's fit CPU
seconds. Each cell runs in a process of its own with one torch thread,
two at a time, so these CPU seconds are comparable among themselves only.

Run ``python -m benchmarks.multitask_seeds`` (about 20 minutes on two cores)
after the ``multilabel`` part at full size; it writes
``benchmarks/results/multitask-seeds.{json,md}``.
"""

import json
import os

import numpy as np

from ._harness import experiment_parser, run_experiment

MODELS = ("lama", "fcsr", "duo")
SEEDS = (1, 2)
TASKS = ("mr", "r8")


def table(rows):
    """Per model: ``{task: (joint accuracies, separate accuracies)}``, CPU seconds per seed."""
    out = {}
    for model in MODELS:
        mine = sorted((r for r in rows if r["model"] == model), key=lambda r: r["seed"])
        if mine:
            out[model] = {
                "seeds": [r["seed"] for r in mine],
                **{
                    t: ([r[f"joint_{t}"] for r in mine], [r[f"separate_{t}"] for r in mine])
                    for t in TASKS
                },
                "cpu": [(r["joint_fit_cpu_s"], r["separate_fit_cpu_s"]) for r in mine],
            }
    return out


def _mean_std(values):
    return f"{np.mean(values):.4f} ± {np.std(values):.4f}"


def markdown(meta, rows):
    lines = [
        "# Multi-task (MR + R8 in one model) against one model per corpus, three seeds",
        "",
        f"- date: {meta['date']}; commit: {meta['git_commit']}; command: ``{meta['command']}``",
        f"- machine: {meta['machine']['cpu']}, {meta['machine']['cores']} cores; one torch "
        "thread per cell, two cells at a time; 1-minute load average "
        f"{meta['loadavg_start']} at start, {meta['loadavg_end']} at end",
        "- seed 0: the ``multilabel`` part's run (``multilabel.json``); seeds 1 and 2: this run",
        "",
        "Test accuracy, mean ± std over the seeds (population std); gap = joint - separate, "
        "in points.",
        "",
        "| model | seeds | MR joint | MR separate | MR gap | R8 joint | R8 separate | R8 gap "
        "| fit CPU s per seed, joint / separate |",
        "|---|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for model, t in table(rows).items():
        gaps = {k: 100 * (np.mean(t[k][0]) - np.mean(t[k][1])) for k in TASKS}
        lines.append(
            f"| {model} | {', '.join(map(str, t['seeds']))} | {_mean_std(t['mr'][0])} | "
            f"{_mean_std(t['mr'][1])} | {gaps['mr']:+.2f} | {_mean_std(t['r8'][0])} | "
            f"{_mean_std(t['r8'][1])} | {gaps['r8']:+.2f} | "
            + ", ".join(f"{j:.0f} / {s:.0f}" for j, s in t["cpu"])
            + " |"
        )
    return "\n".join(lines + [""])


def main(argv=None):
    args = experiment_parser(__doc__).parse_args(argv)
    with open(os.path.join(args.out_dir, "multilabel.json")) as fh:
        first = [
            dict(r, seed=0) for r in json.load(fh)["results"]["multitask"] if "error" not in r
        ]
    kwargs = [
        {"model": m, "train_limit": None, "max_epochs": None, "seed": s}
        for s in SEEDS
        for m in MODELS
    ]
    run_experiment(
        "multitask-seeds",
        "benchmarks.multilabel:multitask_cell",
        kwargs,
        args.jobs,
        args.out_dir,
        lambda meta, rows: markdown(meta, first + rows),
    )


if __name__ == "__main__":
    main()
