"""One FCSR layer vs one Transformer encoder layer on CPU: time and peak memory.

Compares, at equal width ``n`` and for growing sequence length ``T``:

* ``fcsr``: :class:`sklearn_lama.modules._fcsr.FCSRCell` (FOFE contexts +
  both sub-cells: a sequence-to-sequence layer, output 4n features);
* ``transformer``: ``torch.nn.TransformerEncoderLayer(n, nhead,
  dim_feedforward=4n, batch_first=True)`` (default dropout 0.1, train mode).

Both get the boolean padding mask a classifier would pass (every token real
here; ``--no-padding-mask`` drops it) and are timed for one training step: forward, ``sum()`` of the output,
backward.  Time is the median of ``--repeats`` steps after one warm-up step.

Memory: ``tracemalloc`` does not see torch's allocations and there is no peak
counter for CPU tensors, so each (model, length) runs in a fresh Python
process and we report the growth of the process's peak resident set size
(``resource.getrusage(...).ru_maxrss``) caused by the first training step,
measured after the model, the inputs and a tiny warm-up step (T=8, which loads
the kernels) exist.  That is the step's high-water mark of activations,
gradients and temporaries, excluding the parameters themselves; it is
allocator-level (page) granularity, so small values (a few MiB) are noisy.

Runs with one torch thread by default (``--threads 0`` for torch's default):
on a CPU shared with other jobs, multi-threaded small ops stall on OpenMP
barriers and the timings become meaningless.

Run: ``python benchmarks/bench_fcsr_vs_transformer.py`` (about 3 minutes on a
2-core CPU); writes ``benchmarks/results/fcsr_vs_transformer.{json,md}``.
"""

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
MODELS = ("fcsr", "transformer")


def _worker(args):
    import resource

    import torch

    sys.path.insert(0, ROOT)
    from sklearn_lama.modules._fcsr import FCSRCell

    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    B, T, n = args.batch, args.length, args.width
    if args.model == "fcsr":
        model = FCSRCell(n, alpha=0.2)

        def step(x, mask):
            model(x, mask if args.padding_mask else None).sum().backward()

    else:
        model = torch.nn.TransformerEncoderLayer(n, args.nhead, dim_feedforward=4 * n, batch_first=True)

        def step(x, mask):
            model(x, src_key_padding_mask=~mask if args.padding_mask else None).sum().backward()

    model.train()
    x_small, m_small = torch.randn(B, 8, n), torch.ones(B, 8, dtype=torch.bool)
    x, mask = torch.randn(B, T, n), torch.ones(B, T, dtype=torch.bool)
    step(x_small, m_small)
    model.zero_grad(set_to_none=False)
    base_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    step(x, mask)  # first full-size step: memory high-water mark, also the warm-up
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    times = []
    for _ in range(args.repeats):
        model.zero_grad(set_to_none=False)
        t0 = time.perf_counter()
        step(x, mask)
        times.append(time.perf_counter() - t0)
    print(
        json.dumps(
            {
                "model": args.model,
                "length": T,
                "median_s": statistics.median(times),
                "times_s": times,
                "peak_rss_delta_mib": (peak_kib - base_kib) / 1024.0,
                "n_params": sum(p.numel() for p in model.parameters()),
                "threads": torch.get_num_threads(),
            }
        )
    )


def _cpu_name():
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _run_one(args, model, length):
    cmd = [
        sys.executable,
        os.path.abspath(__file__),
        "--worker",
        "--model",
        model,
        "--length",
        str(length),
        "--batch",
        str(args.batch),
        "--width",
        str(args.width),
        "--nhead",
        str(args.nhead),
        "--repeats",
        str(args.repeats if length < 1000 else max(1, args.repeats - 1)),
        "--threads",
        str(args.threads),
    ] + ([] if args.padding_mask else ["--no-padding-mask"])
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def _markdown(meta, rows, lengths):
    by = {(r["model"], r["length"]): r for r in rows}
    lines = [
        "# One FCSR layer vs one Transformer encoder layer (CPU)",
        "",
        f"- date: {meta['date']}",
        f"- machine: {meta['platform']}, {meta['processor']}, {meta['cpu_count']} CPUs, "
        f"{meta['threads']} torch threads",
        f"- python {meta['python']}, torch {meta['torch']}",
        f"- batch {meta['batch']}, width n = {meta['width']}, Transformer nhead = {meta['nhead']}, "
        f"dim_feedforward = {4 * meta['width']}; FCSR alpha = 0.2",
        f"- time: one training step (forward + sum + backward), median of {meta['repeats']} after one warm-up "
        "(one fewer at T >= 1000)",
        f"- padding mask passed to both layers: {meta['padding_mask']}",
        "- memory: growth of the process's peak RSS during the first full-size step, fresh process per cell "
        "(see the script's docstring)",
        f"- load average when run: {meta['loadavg']}"
        + (
            " — the CPU was shared with other jobs, so short-sequence timings are noisy (2x seen between runs)"
            if meta.get("shared_cpu")
            else ""
        ),
        "",
        "| T | FCSR ms | Transformer ms | time ratio T/F | FCSR peak MiB | Transformer peak MiB | memory ratio T/F |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for T in lengths:
        f, t = by[("fcsr", T)], by[("transformer", T)]
        mem_ratio = t["peak_rss_delta_mib"] / f["peak_rss_delta_mib"] if f["peak_rss_delta_mib"] > 0 else float("nan")
        lines.append(
            f"| {T} | {f['median_s'] * 1e3:.1f} | {t['median_s'] * 1e3:.1f} | {t['median_s'] / f['median_s']:.2f} "
            f"| {f['peak_rss_delta_mib']:.1f} | {t['peak_rss_delta_mib']:.1f} | {mem_ratio:.2f} |"
        )
    f0, t0 = by[("fcsr", lengths[0])], by[("transformer", lengths[0])]
    lines += [
        "",
        f"Parameters: FCSR cell {f0['n_params']:,}, Transformer layer {t0['n_params']:,}.",
        "",
    ]
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--lengths", type=int, nargs="+", default=[50, 100, 200, 500, 1000, 2000])
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--width", type=int, default=128)
    p.add_argument("--nhead", type=int, default=4)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument(
        "--threads", type=int, default=1, help="torch threads (default 1: robust on a shared CPU; 0: torch's default)"
    )
    p.add_argument(
        "--no-padding-mask",
        dest="padding_mask",
        action="store_false",
        help="call both layers without a padding mask (lets the Transformer use its fused attention path)",
    )
    p.add_argument("--out-dir", default=os.path.join(HERE, "results"))
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--model", choices=MODELS, help=argparse.SUPPRESS)
    p.add_argument("--length", type=int, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.width % args.nhead:
        p.error("--nhead must divide --width")
    if args.worker:
        _worker(args)
        return

    import torch

    load_before = os.getloadavg()
    rows = []
    for T in args.lengths:
        for model in MODELS:
            r = _run_one(args, model, T)
            rows.append(r)
            print(f"{model:12s} T={T:5d} {r['median_s'] * 1e3:9.1f} ms  peak +{r['peak_rss_delta_mib']:8.1f} MiB", flush=True)
    meta = {
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "platform": platform.platform(),
        "processor": _cpu_name(),
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "threads": rows[0]["threads"],
        "batch": args.batch,
        "width": args.width,
        "nhead": args.nhead,
        "repeats": args.repeats,
        "padding_mask": args.padding_mask,
        "loadavg": "before {:.2f}, after {:.2f} (1-min)".format(load_before[0], os.getloadavg()[0]),
        "shared_cpu": max(load_before[0], os.getloadavg()[0]) > (os.cpu_count() or 1),
    }
    os.makedirs(args.out_dir, exist_ok=True)
    with open(os.path.join(args.out_dir, "fcsr_vs_transformer.json"), "w") as fh:
        json.dump({"meta": meta, "results": rows}, fh, indent=2)
    md = _markdown(meta, rows, args.lengths)
    with open(os.path.join(args.out_dir, "fcsr_vs_transformer.md"), "w") as fh:
        fh.write(md)
    print(md)


if __name__ == "__main__":
    main()
