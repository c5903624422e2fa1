"""Where a joint MR + R8 model loses MR accuracy: the shared word vectors or the shared network.

On the folds of :mod:`benchmarks.multitask_batches` (MR's and R8's training
splits cut in stratified halves, two folds), MR alone, each model's default
pipeline (``random_state=0``) fitted on the MR half and scored on the other
MR half, with

- ``mr``: the embedding step fitted on the MR half's texts (a separate model);
- ``both``: the embedding step fitted on the texts of the MR and R8 halves,
  as a joint model's is, and the classifier on the MR half only.

Against the joint models' MR accuracy of ``multitask-batches.json``
(grouped batches): if ``both`` loses what the joint model loses, the word
vectors trained on both corpora are the cause; if it keeps the separate
model's accuracy, the shared network is.

Run ``python -m benchmarks.multitask_sources`` after
``python -m benchmarks.multitask_batches``; it writes
``benchmarks/results/multitask-sources.{json,md}``.
"""

import json
import os
import time

import numpy as np

from ._harness import experiment_parser, run_experiment
from .multitask_batches import FOLDS

MODELS = ("lama", "fcsr", "duo")
VECTORS = ("mr", "both")


def cell(model, vectors, fold):
    """MR accuracy on the held-out half of one MR-only classifier (child process)."""
    from .multilabel import _pipeline
    from .multitask_batches import training_halves

    halves = training_halves(fold)
    mr_texts, mr_labels, held_out, held_out_labels = halves["mr"]
    pipe = _pipeline(model, None)
    start = time.process_time()
    pipe[0].fit(mr_texts if vectors == "mr" else mr_texts + halves["r8"][0])
    pipe[1].fit(pipe[0].transform(mr_texts), mr_labels)
    return {
        "mr": float(np.mean(pipe.predict(held_out) == held_out_labels)),
        "fit_cpu_s": time.process_time() - start,
        "epochs": pipe[1].n_epochs_,
    }


def markdown(meta, rows, joint):
    lines = [
        "# MR accuracy of a joint MR + R8 model: shared word vectors or shared network "
        "(2-fold CV on the training splits)",
        "",
        f"- date: {meta['date']}; commit: {meta['git_commit']}; command: ``{meta['command']}``",
        f"- machine: {meta['machine']['cpu']}, {meta['machine']['cores']} cores; one torch "
        "thread per fit, two fits at a time",
        "",
        "MR CV accuracy (mean of the two folds of ``multitask-batches``): a model of MR alone "
        "with word vectors trained on the MR half (``mr``) or on the MR and R8 halves "
        "(``both``), and the joint model of both tasks (grouped batches, from "
        "``multitask-batches.json``).",
        "",
        "| model | MR alone, MR vectors | MR alone, MR + R8 vectors | joint model |",
        "|---|---:|---:|---:|",
    ]
    for model in MODELS:
        acc = {
            v: np.mean([r["mr"] for r in rows if r["model"] == model and r["vectors"] == v])
            for v in VECTORS
        }
        lines.append(
            f"| {model} | {acc['mr']:.4f} | {acc['both']:.4f} | "
            + (f"{joint[model]:.4f} |" if model in joint else "n/a |")
        )
    return "\n".join(lines + [""])


def main(argv=None):
    args = experiment_parser(__doc__).parse_args(argv)
    joint = {}
    batches = os.path.join(args.out_dir, "multitask-batches.json")
    if os.path.exists(batches):
        with open(batches) as fh:
            found = [r for r in json.load(fh)["rows"] if r["batching"] == "grouped"]
        for model in MODELS:
            accs = [r["mr"] for r in found if r["model"] == model]
            if accs:
                joint[model] = float(np.mean(accs))
    kwargs = [
        {"model": m, "vectors": v, "fold": f}
        for m in MODELS
        for v in VECTORS
        for f in range(FOLDS)
    ]
    run_experiment(
        "multitask-sources",
        "benchmarks.multitask_sources:cell",
        kwargs,
        args.jobs,
        args.out_dir,
        lambda meta, rows: markdown(meta, rows, joint),
    )


if __name__ == "__main__":
    main()
