"""One parameter of a default pipeline chosen on a hold-out of a corpus's training split.

``python -m benchmarks.hold_out --model lama --corpus <path> --param NAME
--value V [--value V ...] [--set NAME=VALUE ...] [--limit N] [--seed 0 --seed 1
--seed 2] [--jobs 2]`` fits the model's default pipeline (shipped GloVe,
early stopping included) with the pipeline parameter ``NAME`` (e.g.
``clf__batch_size`` or ``emb__max_len``) at each value (a Python literal,
else a string; ``None`` for none), and with those of ``--set`` (e.g.
``clf__n_workers=2``), on a stratified 80 % of the corpus's *training*
split (a stratified ``N`` of its documents first) and scores it on the
other 20 % (never the test split), each fit on one torch thread, ``--jobs``
fits at a time. It prints each fit's seconds, epochs and hold-out accuracy,
then each value's means over the seeds (± half the range).
"""

import argparse
import concurrent.futures
import multiprocessing

from ._drivers import MODELS
from ._options import literal, setting


def _cell(model, corpus, limit, fixed, param, value, seed):
    from .workers import fit_on_hold_out

    pipe, result = fit_on_hold_out(
        model, corpus, limit, seed, pipeline_params={**fixed, param: value}, torch_threads=1
    )
    return {**result, "epochs": int(pipe[-1].n_epochs_), "value": value, "seed": seed}


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchmarks.hold_out", description=__doc__)
    parser.add_argument("--model", default="lama", choices=sorted(MODELS))
    parser.add_argument("--corpus", required=True)
    parser.add_argument("--limit", type=int)
    parser.add_argument("--param", required=True, help="a pipeline parameter, e.g. emb__max_len")
    parser.add_argument(
        "--value",
        action="append",
        required=True,
        type=literal,
        help="a value of --param (a Python literal, else a string); repeatable",
    )
    parser.add_argument(
        "--set",
        action="append",
        type=setting,
        default=[],
        metavar="NAME=VALUE",
        help="a pipeline parameter of every fit (e.g. clf__n_workers=2); repeatable",
    )
    parser.add_argument("--seed", type=int, action="append")
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args(argv)
    values = args.value
    seeds = args.seed or [0, 1, 2]
    cells = [(v, s) for s in seeds for v in values]
    fixed = dict(args.set)
    context = multiprocessing.get_context("spawn")
    rows = []
    with concurrent.futures.ProcessPoolExecutor(args.jobs, mp_context=context) as pool:
        futures = [
            pool.submit(_cell, args.model, args.corpus, args.limit, fixed, args.param, v, s)
            for v, s in cells
        ]
        for future in concurrent.futures.as_completed(futures):
            row = future.result()
            rows.append(row)
            print(
                f"{args.param}={row['value']!r}, seed {row['seed']}: {row['seconds']:.1f} s, "
                f"{row['epochs']} epochs, hold-out accuracy {row['accuracy']:.4f}",
                flush=True,
            )
    for v in values:
        mine = [r for r in rows if r["value"] == v]
        summary = []
        for key in ("accuracy", "seconds", "epochs"):
            found = [r[key] for r in mine]
            half = (max(found) - min(found)) / 2
            summary.append(f"{key} {sum(found) / len(found):.4f} (±{half:.4f})")
        print(f"{args.param}={v!r}: " + ", ".join(summary), flush=True)


if __name__ == "__main__":
    main()
