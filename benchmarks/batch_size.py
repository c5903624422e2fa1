"""Whether a larger batch suits a large corpus: chosen on a hold-out of the training split.

``python -m benchmarks.batch_size --model lama --corpus <path> [--limit N]
[--batch 32 --batch 64] [--seed 0 --seed 1 --seed 2] [--jobs 2]`` fits the
model's default pipeline (shipped GloVe, early stopping included) at each
``batch_size`` (the learning rate unchanged) on a stratified 80 % of the
corpus's *training* split (a stratified ``N`` of its documents first) and
scores it on the other 20 % (never the test split), each fit on one torch
thread, ``--jobs`` fits at a time. It prints each fit's seconds, epochs and
hold-out accuracy, then each batch size's means over the seeds (± half the
range).
"""

import argparse
import concurrent.futures
import multiprocessing

from ._drivers import MODELS


def _cell(model, corpus, limit, batch_size, seed):
    from .workers import fit_on_hold_out

    pipe, result = fit_on_hold_out(
        model, corpus, limit, seed, batch_size=batch_size, torch_threads=1
    )
    return {**result, "epochs": int(pipe[-1].n_epochs_), "batch": batch_size, "seed": seed}


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchmarks.batch_size", description=__doc__)
    parser.add_argument("--model", default="lama", choices=sorted(MODELS))
    parser.add_argument("--corpus", required=True)
    parser.add_argument("--limit", type=int)
    parser.add_argument("--batch", type=int, action="append")
    parser.add_argument("--seed", type=int, action="append")
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args(argv)
    batches, seeds = args.batch or [32, 64], args.seed or [0, 1, 2]
    cells = [(b, s) for s in seeds for b in batches]
    context = multiprocessing.get_context("spawn")
    rows = []
    with concurrent.futures.ProcessPoolExecutor(args.jobs, mp_context=context) as pool:
        futures = [pool.submit(_cell, args.model, args.corpus, args.limit, b, s) for b, s in cells]
        for future in concurrent.futures.as_completed(futures):
            row = future.result()
            rows.append(row)
            print(
                f"batch {row['batch']}, seed {row['seed']}: {row['seconds']:.1f} s, "
                f"{row['epochs']} epochs, hold-out accuracy {row['accuracy']:.4f}",
                flush=True,
            )
    for b in batches:
        mine = [r for r in rows if r["batch"] == b]
        summary = []
        for key in ("accuracy", "seconds", "epochs"):
            values = [r[key] for r in mine]
            half = (max(values) - min(values)) / 2
            summary.append(f"{key} {sum(values) / len(values):.4f} (±{half:.4f})")
        print(f"batch {b}: " + ", ".join(summary), flush=True)


if __name__ == "__main__":
    main()
