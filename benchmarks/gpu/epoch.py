"""One epoch on the GPU against one CPU worker: ``python -m benchmarks gpu --section epoch``.

Each default pipeline's vectorizer is fitted once; its classifier is then
trained for one epoch (no early stopping, so that the work compared is the
same) on the GPU in each precision and, at the same time on the same
machine's CPU, on one torch thread in float32 (one worker). Before each
timed fit the classifier trains once on a few documents, so that neither
side counts its first kernels' loading. The report gives seconds per
epoch, the GPU's speed-up over the CPU worker, training tokens per second
and the GPU's peak memory. No prediction: the test split is not read.
"""

from concurrent.futures import ThreadPoolExecutor

from .._data import corpus_name
from .._env import usable_cores
from .._harness import run_cell, run_cells
from .._models import OURS, SHORT
from .._report import Report, sig
from .device import OPTIONS as DEVICE_OPTIONS
from .device import PRECISIONS, _device

NAME = "gpu-epoch"
# The device section's options, each read the same way here.
OPTIONS = {
    **DEVICE_OPTIONS,
    "threads": "torch threads of the cells on the device (the CPU worker: one)",
    "corpus": "default: mr; a path names another (e.g. IMDB, benchmarks/data/prepare_imdb.py)",
}
SIZES = {
    "quick": {"train_limit": 600, "overrides": {}},
    "full": {"train_limit": None, "overrides": {}},
    # A stratified 10,000 documents of a large corpus (an IMDB epoch's work, shorter).
    "sample": {"train_limit": 10000, "overrides": {}},
}
DEFAULT_CORPORA = ["mr"]
# Documents of the untimed fit before each timed one.
WARM_UP_DOCS = 256
# Seconds a cell on the device may run before it is stopped and reported so.
CELL_TIMEOUT_S = 240


def epoch_cell(corpus, model, device, precisions, train_limit, overrides):
    """One epoch of ``model``'s classifier on ``device`` in each precision (child process)."""
    import time

    import numpy as np
    import torch
    from sklearn.base import clone

    from .._data import head, load
    from .._models import make
    from ..cost.pipelines import fit_clocked

    X, y, _, _ = load(corpus)
    X, y = head(X, y, train_limit)
    pipe = make(model, seed=0, **{**overrides, "max_epochs": 1, "early_stopping": False})
    start = time.perf_counter()
    Z = pipe.named_steps["emb"].fit_transform(X, y)
    vectorizer_s = time.perf_counter() - start
    # Spread over the corpus, whose files may be sorted by class.
    warm_up = np.linspace(0, len(X) - 1, min(WARM_UP_DOCS, len(X))).astype(int)
    rows = []
    for precision in precisions:
        clf = clone(pipe.named_steps["clf"]).set_params(device=device, precision=precision)
        try:
            clone(clf).fit(Z[warm_up], np.asarray(y)[warm_up])
            if device.startswith("cuda"):
                torch.cuda.reset_peak_memory_stats(device)
            row = fit_clocked(clf, Z, y)
        except Exception as exc:  # a precision the device lacks leaves the others' rows
            rows.append({"precision": precision, "error": f"{type(exc).__name__}: {exc}"})
            continue
        if device.startswith("cuda"):
            row["gpu_peak_mib"] = torch.cuda.max_memory_allocated(device) / 2**20
        rows.append(dict(row, precision=precision))
    return {"n_train": len(X), "vectorizer_s": vectorizer_s, "rows": rows}


def run(cfg, threads, corpora, log):
    corpora = corpora or DEFAULT_CORPORA
    models = cfg.get("models") or list(OURS)
    device, facts = _device()
    precisions = cfg.get("precision") or [p for p in PRECISIONS if p != "16-mixed"]
    cells = [
        dict(corpus=c, model=m, train_limit=cfg["train_limit"], overrides=cfg["overrides"])
        for c in corpora
        for m in models
    ]
    on_cpu = [dict(k, device="cpu", precisions=["32"]) for k in cells]
    with ThreadPoolExecutor(1) as pool:
        # The CPU workers run beside the GPU's cells, on the cores those leave.
        cpu = pool.submit(
            run_cells,
            "benchmarks.gpu.epoch:epoch_cell",
            1,
            on_cpu,
            max(1, min(len(on_cpu), usable_cores() - 2)),
            lambda k, r: log(f"{k['corpus']} {k['model']} on one CPU thread: {_brief(r)}"),
        )
        gpu = []
        for kwargs in cells:
            r = run_cell(
                "benchmarks.gpu.epoch:epoch_cell",
                threads,
                dict(kwargs, device=device, precisions=precisions),
                CELL_TIMEOUT_S,
            )
            log(f"{kwargs['corpus']} {kwargs['model']} on {device}: {_brief(r)}")
            gpu.append(r)
        cpu = cpu.result()
    rows = []
    for kwargs, on_gpu, on_cpu_row in zip(cells, gpu, cpu):
        base = on_cpu_row.get("rows", [{}])[0]
        for row in on_gpu.get("rows", [{"error": on_gpu.get("error")}]):
            rows.append(
                dict(
                    row,
                    corpus=corpus_name(kwargs["corpus"]),
                    model=kwargs["model"],
                    n_train=on_gpu.get("n_train"),
                    cpu_epoch_s=base.get("epoch_s"),
                    cpu_tokens_per_s=base.get("train_tokens_per_s"),
                    cpu_error=base.get("error") or on_cpu_row.get("error"),
                )
            )
    names = sorted({corpus_name(c) for c in corpora})
    return {
        "name": "-".join([NAME, *(names if names != DEFAULT_CORPORA else [])]),
        "config": {**cfg, "corpora": corpora, "models": models, "precisions": precisions},
        "device": dict(facts, device=device),
        "rows": rows,
    }


def _brief(result):
    """A log line's account of a cell: each precision's epoch seconds, or the error."""
    if "error" in result:
        return f"FAILED {result['error']}"
    return ", ".join(
        f"{r['precision']}: " + (f"{r['epoch_s']:.2f} s" if "epoch_s" in r else r["error"])
        for r in result["rows"]
    )


def render(payload):
    """The report and plot of a :func:`run` result (also of one read back from JSON)."""
    rep = Report(payload["name"], f"One epoch on a GPU ({payload['device']['gpu']})")
    rep.text(
        "Each default pipeline's classifier trained for one epoch (no early stopping) on "
        "the device in each precision and, at the same time, on one CPU thread of the same "
        "machine in float32 (one worker); each after an untimed fit on "
        f"{WARM_UP_DOCS} documents. Speed-up: the CPU worker's epoch over the device's."
    )
    table = []
    for r in payload["rows"]:
        if "error" in r:
            failed = "failed: " + str(r["error"])[:80]
            table.append([r["corpus"], SHORT[r["model"]], r.get("precision", ""), failed])
            table[-1] += [""] * 5
            continue
        cpu = r.get("cpu_epoch_s")
        table.append(
            [
                r["corpus"],
                SHORT[r["model"]],
                r["precision"],
                f"{r['n_train']:,}",
                sig(r["epoch_s"]),
                sig(cpu) if cpu else "failed: " + str(r.get("cpu_error"))[:60],
                f"{cpu / r['epoch_s']:.1f}x" if cpu else "n/a",
                f"{r['train_tokens_per_s']:,.0f}",
                sig(r["gpu_peak_mib"]) if "gpu_peak_mib" in r else "n/a",
            ]
        )
    rep.table(
        [
            "corpus",
            "model",
            "precision",
            "documents",
            "epoch s",
            "CPU worker epoch s",
            "speed-up",
            "tokens/s",
            "peak MiB",
        ],
        table,
    )
    return rep, _plotter(payload)


def _plotter(payload):
    def plot(fig):
        ax = fig.add_subplot(1, 1, 1)
        rows = [r for r in payload["rows"] if "error" not in r and r.get("cpu_epoch_s")]
        labels = [f"{r['corpus']} {SHORT[r['model']]} {r['precision']}" for r in rows]
        ax.barh(labels, [r["cpu_epoch_s"] / r["epoch_s"] for r in rows])
        ax.invert_yaxis()
        ax.set(xlabel="epoch speed-up over one CPU worker (one thread)", title="one epoch")
        ax.grid(True, axis="x", alpha=0.3)

    return plot
