"""Command line of the suite.

``python -m benchmarks [PART ...] --size quick|full``, the parts named in ``PARTS``.
"""

import argparse
import glob
import json
import os
import sys
import time

from . import (
    accuracy,
    cost,
    explain,
    export,
    multilabel,
    params,
    peers,
    pretrained_select,
    runtime,
    scaling,
    select,
    speed,
    speed_select,
    targets,
    translation,
)
from ._env import ROOT, stamp
from ._report import write

PARTS = {
    "params": params,
    "runtime": runtime,
    "peers": peers,
    "accuracy": accuracy,
    "scaling": scaling,
    "targets": targets,
    "translation": translation,
    "multilabel": multilabel,
    "cost": cost,
    "speed": speed,
    "select": select,
    "speed-select": speed_select,
    "pretrained-select": pretrained_select,
    "export": export,
    "explain": explain,
}


def _measure(name, args, out_dir):
    part = PARTS[name]
    print(f"== {name} ({args.size}) ==", flush=True)
    meta = stamp(args.size, args.threads)
    start = time.perf_counter()
    log = lambda msg: print("  " + msg, flush=True)  # noqa: E731
    if getattr(args, "length", False) and part is scaling:
        payload = scaling.run_length(scaling.LENGTH[args.size], args.threads, log)
    else:
        cfg = dict(part.SIZES[args.size])
        if args.jobs and "jobs" in cfg:
            cfg["jobs"] = args.jobs
        if args.reuse:
            cfg["reuse"] = os.path.join(args.reuse, part.NAME + ".json")
        if args.model:
            cfg["models"] = args.model
        payload = part.run(cfg, args.threads, args.corpus, log)
    meta.update(
        wall_s=time.perf_counter() - start,
        loadavg_end=round(os.getloadavg()[0], 2),
        command="python -m benchmarks " + " ".join(sys.argv[1:]),
    )
    _write(part, meta, payload, out_dir)
    print(f"  {name}: {meta['wall_s']:.0f} s", flush=True)


def _write(part, meta, payload, out_dir):
    length = part is scaling and payload["name"].endswith("-length")
    report, plot = (scaling.render_length if length else part.render)(payload)
    for path in write(report, meta, payload, plot, out_dir):
        print("  wrote " + os.path.relpath(path, ROOT))


def _render_again(names, out_dir):
    """Rewrite the Markdown, rst and PNG of the results in ``out_dir`` (after a change of wording).

    The plots are drawn again too.
    """
    by_stem = {PARTS[n].NAME: PARTS[n] for n in names}
    for path in sorted(glob.glob(os.path.join(out_dir, "*.json"))):
        stem = os.path.basename(path)[: -len(".json")]
        part = by_stem.get(stem, by_stem.get(stem.split("-")[0]))
        if part is not None:
            with open(path) as fh:
                payload = json.load(fh)
            payload.setdefault("name", stem)
            _write(part, payload.pop("meta"), payload, out_dir)


def _join(names, dirs, out_dir):
    """Write one report of a part from the JSON results of its runs in ``dirs`` (``--join``)."""
    if len(names) != 1 or not hasattr(PARTS[names[0]], "join"):
        joinable = [n for n, part in PARTS.items() if hasattr(part, "join")]
        raise SystemExit(f"--join takes one part among {', '.join(joinable)}")
    part = PARTS[names[0]]
    payloads = []
    for d in dirs:
        with open(os.path.join(d, part.NAME + ".json")) as fh:
            payloads.append(json.load(fh))
    payload = part.join(payloads)
    meta = dict(payloads[0]["meta"])
    meta.update(
        date=max(p["meta"]["date"] for p in payloads),
        wall_s=sum(p["meta"]["wall_s"] for p in payloads),
        loadavg_start=max(p["meta"]["loadavg_start"] for p in payloads),
        loadavg_end=max(p["meta"]["loadavg_end"] for p in payloads),
        git_commit=" / ".join(dict.fromkeys(p["meta"]["git_commit"] for p in payloads)),
        command="python -m benchmarks " + " ".join(sys.argv[1:]),
    )
    _write(part, meta, payload, out_dir)


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    p.add_argument(
        "parts",
        nargs="*",
        metavar="part",
        help=f"parts to run, among {', '.join(PARTS)} (default: all, in that order)",
    )
    p.add_argument(
        "--size",
        choices=["quick", "full"],
        default="quick",
        help="quick: minutes, for checking the suite; full: the committed results",
    )
    p.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch/BLAS threads of every measurement (default 1: on a shared CPU, "
        "multi-threaded small ops stall on barriers and timings become noise)",
    )
    p.add_argument(
        "--corpus",
        action="append",
        default=None,
        metavar="NAME_OR_PATH",
        help="peers and scaling: 'r8', 'mr', a directory with train.jsonl[.gz] and "
        "test.jsonl[.gz], or one .jsonl[.gz] file (split 80/20); repeatable "
        "(default: r8 and mr for peers, mr for scaling)",
    )
    p.add_argument(
        "--model",
        action="append",
        default=None,
        metavar="NAME",
        help="cost, accuracy, speed and select: only these pipelines ('lama', 'fcsr', "
        "'duo'; for cost and accuracy also the peers 'tfidf_lr', 'fasttext'); repeatable "
        "(default: every one the part measures)",
    )
    p.add_argument(
        "--length",
        action="store_true",
        help="scaling: fit cost per token of R8 documents joined to 500-20,000 tokens, "
        "instead of the corpus-size scan",
    )
    p.add_argument(
        "--out-dir",
        default=None,
        help="default: benchmarks/results (full) or benchmarks/results/quick (quick)",
    )
    p.add_argument(
        "--jobs",
        type=int,
        default=None,
        help="accuracy and the selection parts: cells at a time (default: the size's, "
        "one per core for the full accuracy run)",
    )
    p.add_argument(
        "--reuse",
        default=None,
        metavar="DIR",
        help="select, pretrained-select, speed-select: take the CV cells (corpus, model, "
        "candidate, fold) that the part's JSON in DIR measured instead of fitting them again",
    )
    p.add_argument(
        "--render-only",
        action="store_true",
        help="measure nothing: rewrite the .md, .rst and .png of the JSON results in the "
        "output folder",
    )
    p.add_argument(
        "--join",
        action="append",
        default=None,
        metavar="DIR",
        help="measure nothing: write one report of the part (multilabel) from the JSON "
        "results of its runs in these folders (e.g. one run per --model); repeatable",
    )
    args = p.parse_args(argv)
    unknown = set(args.parts) - set(PARTS)
    if unknown:
        p.error(f"unknown part(s) {', '.join(sorted(unknown))}; choose among {', '.join(PARTS)}")
    names = args.parts or list(PARTS)
    out_dir = args.out_dir or os.path.join(
        ROOT, "benchmarks", "results", *(["quick"] if args.size == "quick" else [])
    )
    if args.render_only:
        _render_again(names, out_dir)
        return
    if args.join:
        _join(names, args.join, out_dir)
        return
    for name in names:
        _measure(name, args, out_dir)


if __name__ == "__main__":
    main()
