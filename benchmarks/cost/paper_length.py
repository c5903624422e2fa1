"""A training step against the sequence length, vs a Transformer: ``cost --section paper-length``.

One training step (forward, loss, backward) of the modules alone against the
sequence length: the LAMA Encoder, LAMA (BiGRU) and FCSR against a
Transformer encoder (§5.2 and Fig. 2 of the LAMA paper, Mehta & Rangwala). An
"epoch" is the steps of one pass over an R8-sized corpus (5,485 documents);
memory is the peak resident set size during the first full-size step above
the size before it (:mod:`benchmarks._harness`).
"""

import math

from .._harness import run_cell
from .._report import Report, sig

NAME = "runtime_vs_length"
OPTIONS = {"threads": "torch/BLAS threads of every step"}
MODELS = ("lama_encoder", "lama", "fcsr", "transformer")
LABELS = {
    "lama_encoder": "LAMA Encoder",
    "lama": "LAMA (BiGRU)",
    "fcsr": "FCSR",
    "transformer": "Transformer",
}
EPOCH_DOCUMENTS = 5485
TARGET_LENGTH, TARGET_SPEEDUP = 1000, 3.0
SIZES = {
    "quick": {"lengths": [50, 200, 1000], "batch": 16, "width": 128, "nhead": 4, "repeats": 2},
    "full": {
        "lengths": [50, 100, 200, 500, 1000, 2000],
        "batch": 16,
        "width": 128,
        "nhead": 4,
        "repeats": 5,
    },
}


def network(model, width, nhead, n_classes):
    """The classifier module named ``model`` for ``width``-wide inputs."""
    from sklearn_lama.modules import FCSRModule, LAMAModule

    from .._baselines import TransformerEncoderClassifier

    if model == "lama_encoder":
        return LAMAModule(width, n_classes, encoder="none")
    if model == "lama":
        return LAMAModule(width, n_classes)
    if model == "fcsr":
        return FCSRModule(width, n_classes)
    return TransformerEncoderClassifier(width, n_classes, n_heads=nhead)


def cell(model, length, batch, width, nhead, repeats, n_classes=8):
    """Time and peak memory of one training step of ``model`` at ``length`` (child process)."""
    import torch

    from .._harness import median_time, peak_rss_mib, start_peak

    torch.manual_seed(0)
    net = network(model, width, nhead, n_classes).train()

    def step(x, mask, y):
        out = net(x, mask)
        logits, penalty = out if isinstance(out, tuple) else (out, 0.0)
        (torch.nn.functional.cross_entropy(logits, y) + penalty).backward()

    def inputs(T):
        return (
            torch.randn(batch, T, width),
            torch.ones(batch, T, dtype=torch.bool),
            torch.randint(n_classes, (batch,)),
        )

    step(*inputs(8))  # loads the kernels before the memory baseline
    full = inputs(length)
    net.zero_grad(set_to_none=False)
    base = start_peak()
    step(*full)  # the first full-size step sets the high-water mark and warms up
    peak = peak_rss_mib() - base
    # Fewer repeats where one step takes seconds: the spread is small there.
    timing = median_time(
        lambda: step(*full), repeats if length < 1000 else max(2, repeats - 2), warmup=0
    )
    return {
        "model": model,
        "length": length,
        **timing,
        "peak_rss_delta_mib": peak,
        "n_params": sum(p.numel() for p in net.parameters()),
    }


def run(cfg, threads, corpora, log):
    rows = []
    for length in cfg["lengths"]:
        for model in MODELS:
            r = run_cell(
                "benchmarks.cost.paper_length:cell",
                threads,
                dict(
                    model=model,
                    length=length,
                    batch=cfg["batch"],
                    width=cfg["width"],
                    nhead=cfg["nhead"],
                    repeats=cfg["repeats"],
                ),
            )
            r.update(model=model, length=length)
            if "error" not in r:
                r["epoch_s"] = r["median_s"] * math.ceil(EPOCH_DOCUMENTS / cfg["batch"])
                r["tokens_per_s"] = cfg["batch"] * length / r["median_s"]
                log(
                    f"{model:13s} T={length:5d} step {r['median_s'] * 1e3:9.1f} ms  peak "
                    f"+{r['peak_rss_delta_mib']:7.1f} MiB"
                )
            else:
                log(f"{model:13s} T={length:5d} FAILED {r['error']}")
            rows.append(r)
    ratios = _ratios(rows, cfg["lengths"])
    return {"name": NAME, "config": cfg, "results": rows, "ratios": ratios}


def render(payload):
    """The report and plot of a :func:`run` result (also of one read back from JSON)."""
    cfg, rows = payload["config"], payload["results"]
    return _report(cfg, rows, payload["ratios"]), _plotter(cfg, rows)


def _ratios(rows, lengths):
    """Transformer / model, time and memory, per length (>1: the model is cheaper)."""
    by = {(r["model"], r["length"]): r for r in rows if "error" not in r}
    out = []
    for T in lengths:
        te = by.get(("transformer", T))
        entry = {"length": T}
        for model in MODELS[:-1]:
            other = by.get((model, T))
            if te and other:
                entry[model] = {
                    "time": te["median_s"] / other["median_s"],
                    "memory": te["peak_rss_delta_mib"] / max(other["peak_rss_delta_mib"], 1e-9),
                }
        out.append(entry)
    return out


def _fmt(r, key):
    return "failed" if "error" in r else sig(r[key])


def _report(cfg, rows, ratios):
    by = {(r["model"], r["length"]): r for r in rows}
    rep = Report(
        NAME,
        "Training time and memory vs sequence length: LAMA Encoder, LAMA, FCSR vs Transformer",
    )
    rep.text(
        f"One training step (forward, loss, backward) on a batch of {cfg['batch']} documents of "
        f"T tokens, {cfg['width']}-d inputs, Transformer with {cfg['nhead']} heads and "
        f"feed-forward {4 * cfg['width']}; median of {cfg['repeats']} steps after a warm-up "
        f"(fewer at T >= 1000). Epoch = ceil({EPOCH_DOCUMENTS} / {cfg['batch']}) steps (an "
        "R8-sized corpus). Memory: peak RSS during the first step above the RSS before it "
        "(kernel high-water mark reset), one process per cell."
    )
    # One table of time, one of memory: each model's figure, then the Transformer's ratio to it.
    for unit, key, ratio in (
        ("epoch s", "epoch_s", "time"),
        ("peak MiB", "peak_rss_delta_mib", "memory"),
    ):
        rep.table(
            ["T"]
            + [f"{LABELS[m]} {unit}" for m in MODELS]
            + [f"TE / {LABELS[m]} {ratio}" for m in MODELS[:-1]],
            [
                [str(T)]
                + [_fmt(by[(m, T)], key) for m in MODELS]
                + [f"{e[m][ratio]:.2f}" if m in e else "n/a" for m in MODELS[:-1]]
                for T, e in zip(cfg["lengths"], ratios)
            ],
        )
    first = by[(MODELS[0], cfg["lengths"][0])]
    rep.text(
        "Parameters: "
        + ", ".join(
            f"{LABELS[m]} {by[(m, cfg['lengths'][0])].get('n_params', 0):,}" for m in MODELS
        )
        + "; step times in ms are in the JSON file "
        + f"({first.get('torch_threads', '?')} torch thread(s))."
    )
    rep.bullets(_findings(cfg, ratios))
    return rep


def _findings(cfg, ratios):
    at = {e["length"]: e for e in ratios}
    out = []
    target = at.get(TARGET_LENGTH, {}).get("lama_encoder")
    if target:
        met = "met" if target["time"] >= TARGET_SPEEDUP else "NOT met"
        out.append(
            f"Target: LAMA Encoder >= {TARGET_SPEEDUP:.0f}x faster than the Transformer per "
            f"epoch at T = {TARGET_LENGTH}: {target['time']:.2f}x, {met}."
        )
    short = [e for e in ratios if e["length"] <= 250 and "lama_encoder" in e]
    if short:
        held = all(e["lama_encoder"]["time"] > 1 for e in short)
        out.append(
            "Paper (Fig. 2, T = 50-250): TE is slower per epoch than LAMA Encoder at every "
            "length. Here: "
            + ", ".join(
                f"TE/LE = {e['lama_encoder']['time']:.2f}x at T = {e['length']}" for e in short
            )
            + (" (held)." if held else " (did not hold everywhere).")
        )
    longest = ratios[-1]
    for model in ("fcsr", "lama"):
        if model in longest:
            out.append(
                f"At T = {longest['length']} the Transformer takes {longest[model]['time']:.2f}x "
                f"the time and {longest[model]['memory']:.2f}x the memory of "
                f"{LABELS[model]} "
                "(quadratic vs linear in T)."
            )
    return out


def _plotter(cfg, rows):
    def plot(fig):
        colours = {
            "lama_encoder": "tab:blue",
            "lama": "tab:purple",
            "fcsr": "tab:orange",
            "transformer": "tab:green",
        }
        for i, (key, label) in enumerate(
            (
                ("epoch_s", "seconds per epoch (R8-sized corpus)"),
                ("peak_rss_delta_mib", "peak memory of one step (MiB)"),
            )
        ):
            ax = fig.add_subplot(1, 2, i + 1)
            for model in MODELS:
                pts = [
                    (r["length"], r[key]) for r in rows if r["model"] == model and "error" not in r
                ]
                if pts:
                    ax.plot(*zip(*pts), "o-", color=colours[model], label=LABELS[model])
            ax.set(xscale="log", yscale="log", xlabel="sequence length T", ylabel=label)
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=8)
        fig.suptitle(
            f"Training step vs length (batch {cfg['batch']}, width {cfg['width']})", fontsize=10
        )

    return plot
