"""Command line of the suite: ``python -m benchmarks [PART ...] [options]``.

Every part measures one question on the shared harness and writes
``<name>.json`` (every measurement and the configuration), ``<name>.rst`` (the
tables the docs include) and ``<name>.png`` to the output folder, stamped with
the date, machine, versions, commit and load. ``equivalence`` is the one
same-results check between two versions: ``python -m benchmarks equivalence
--help``.
"""

import argparse
import ast
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
    gpu,
    latency,
    multilabel,
    params,
    select,
    side,
    translation,
)
from ._env import ROOT, stamp
from ._report import write

PARTS = {
    "params": params,
    "accuracy": accuracy,
    "cost": cost,
    "select": select,
    "translation": translation,
    "multilabel": multilabel,
    "export": export,
    "latency": latency,
    "explain": explain,
    "side": side,
    "gpu": gpu,
}
# A run without parts runs these; the GPU part runs when named.
DEFAULT = [name for name in PARTS if name != "gpu"]


def _part_of(stem):
    """The part whose results file is ``<stem>.json``."""
    for part in PARTS.values():
        names = getattr(part, "STEMS", (part.NAME,))
        if any(stem == n or stem.startswith(n + "-") for n in names):
            return part
    return None


def _measure(name, args, out_dir):
    part = PARTS[name]
    print(f"== {name} ({args.size}) ==", flush=True)
    meta = stamp(args.size, args.threads)
    start = time.perf_counter()
    cfg = dict(part.SIZES[args.size])
    for option in ("jobs", "reuse", "grid", "section", "precision"):
        if getattr(args, option):
            cfg[option] = getattr(args, option)
    if args.model:
        cfg["models"] = args.model
    if args.set:
        cfg["overrides"] = {**cfg.get("overrides", {}), **dict(args.set)}
    payload = part.run(cfg, args.threads, args.corpus, lambda msg: print("  " + msg, flush=True))
    if "device" in payload:  # a part that ran its cells on a device (gpu) names it
        meta["machine"]["device"] = payload["device"]["device"]
    meta.update(
        wall_s=time.perf_counter() - start,
        loadavg_end=round(os.getloadavg()[0], 2),
        command="python -m benchmarks " + " ".join(sys.argv[1:]),
    )
    _write(part, meta, payload, out_dir)
    print(f"  {name}: {meta['wall_s']:.0f} s", flush=True)


def _write(part, meta, payload, out_dir):
    report, plot = part.render(payload)
    for path in write(report, meta, payload, plot, out_dir):
        print("  wrote " + os.path.relpath(path, ROOT))


def _render_again(names, out_dir):
    """Rewrite the rst and PNG of the JSON results in ``out_dir`` of the parts ``names``."""
    for path in sorted(glob.glob(os.path.join(out_dir, "*.json"))):
        stem = os.path.basename(path)[: -len(".json")]
        part = _part_of(stem)
        if part is None or part not in [PARTS[n] for n in names]:
            continue
        with open(path) as fh:
            payload = json.load(fh)
        payload.setdefault("name", stem)
        try:
            _write(part, payload.pop("meta"), payload, out_dir)
        except KeyError as exc:  # a result in the layout of an earlier version of its part
            print(f"  {stem}: not rendered, an earlier layout (no {exc})")


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
    meta = dict(payloads[0]["meta"])
    meta.update(
        date=max(p["meta"]["date"] for p in payloads),
        wall_s=sum(p["meta"]["wall_s"] for p in payloads),
        loadavg_start=max(p["meta"]["loadavg_start"] for p in payloads),
        loadavg_end=max(p["meta"]["loadavg_end"] for p in payloads),
        git_commit=" / ".join(dict.fromkeys(p["meta"]["git_commit"] for p in payloads)),
        command="python -m benchmarks " + " ".join(sys.argv[1:]),
    )
    _write(part, meta, part.join(payloads), out_dir)


def _setting(text):
    """``NAME=VALUE`` of ``--set`` as ``(name, value)``: a Python literal, else the text."""
    name, sep, value = text.partition("=")
    if not sep or not name.isidentifier():
        raise argparse.ArgumentTypeError(f"{text!r} is not NAME=VALUE (e.g. tol=0.001)")
    try:
        return name, ast.literal_eval(value)
    except (ValueError, SyntaxError):
        return name, value


def parser():
    p = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    p.add_argument(
        "parts",
        nargs="*",
        metavar="part",
        help=f"among {', '.join(PARTS)} (default: all but gpu, in that order)",
    )
    p.add_argument(
        "--size",
        choices=["quick", "full"],
        default="quick",
        help="quick: minutes, checks the suite (its numbers are not results); full: the results",
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
        help="'r8', 'mr', 'r8-long', a directory with train.jsonl[.gz] and test.jsonl[.gz], "
        "or one .jsonl[.gz] file (split 80/20); repeatable (default: the part's)",
    )
    p.add_argument(
        "--model",
        action="append",
        default=None,
        metavar="NAME",
        help="only these pipelines ('lama', 'fcsr', 'duo'; for cost and accuracy also "
        "'lama-glove', ..., and the peers 'tfidf_lr', 'fasttext'); repeatable",
    )
    p.add_argument(
        "--section",
        choices=[*cost.SECTIONS, *gpu.SECTIONS],
        default=None,
        help="cost: pipelines (default: where each default pipeline's fit and prediction "
        "time goes), corpus-size (fit against the corpus's size), doc-length (fit per token "
        "against the documents' length), paper-length (a training step against the length, "
        "LAMA, FCSR vs a Transformer, LAMA paper §5.2); gpu: device (default: the tests and "
        "the pipelines on the GPU), cores (the pipelines' CPU fits on 1, 2, 4, ... threads)",
    )
    p.add_argument(
        "--precision",
        action="append",
        default=None,
        choices=list(gpu.PRECISIONS),
        help="gpu: only these precisions of the classifiers on the device; repeatable",
    )
    p.add_argument(
        "--grid",
        choices=list(select.GRIDS),
        default=None,
        help="select: the candidates (default: defaults; pretrained: on GloVe 6B 50d; "
        "speed: cheaper training settings)",
    )
    p.add_argument(
        "--set",
        action="append",
        type=_setting,
        default=None,
        metavar="NAME=VALUE",
        help="accuracy, cost (pipelines, corpus-size), explain, gpu, select: a parameter of our "
        "classifiers in every pipeline measured, over the size's settings (e.g. "
        "max_batch_tokens=4096; the value a Python literal, else a string); repeatable",
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
        help="accuracy, select: cells at a time (default: the size's)",
    )
    p.add_argument(
        "--reuse",
        default=None,
        metavar="DIR",
        help="select: take the CV cells that the grid's JSON in DIR measured instead of "
        "fitting them again",
    )
    p.add_argument(
        "--render-only",
        action="store_true",
        help="measure nothing: rewrite the .rst and .png of the JSON results in the output folder",
    )
    p.add_argument(
        "--join",
        action="append",
        default=None,
        metavar="DIR",
        help="measure nothing: one report of the part (multilabel, side) from the JSON results of "
        "its runs in these folders (e.g. one run per --model); repeatable",
    )
    return p


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["equivalence"]:
        from . import equivalence

        return equivalence.main(argv[1:])
    p = parser()
    args = p.parse_args(argv)
    unknown = set(args.parts) - set(PARTS)
    if unknown:
        p.error(f"unknown part(s) {', '.join(sorted(unknown))}; choose among {', '.join(PARTS)}")
    names = args.parts or DEFAULT
    out_dir = args.out_dir or os.path.join(
        ROOT, "benchmarks", "results", *(["quick"] if args.size == "quick" else [])
    )
    if args.render_only:
        _render_again(names, out_dir)
    elif args.join:
        _join(names, args.join, out_dir)
    else:
        for name in names:
            _measure(name, args, out_dir)


if __name__ == "__main__":
    main()
