"""Training tokens per second of each classifier, at two batch sizes, on MR.

For each of the README's pipelines (``random_state=0``), the vectorizer is
fitted once on MR's training split (word2vec at ``--vector-epochs`` epochs:
the vectors' values do not change a training step's cost), then the
classifier is fitted at each batch size for ``--max-epochs`` epochs with the
cost part's batch clock (``benchmarks.cost.fit_clocked``), one torch thread.
Reported per fit:

* training tokens/s of the training batches (forward, loss, backward,
  optimizer step), as the cost part counts them;
* training tokens/s of the training loop: the epoch less its validation
  batches, so also the per-batch callbacks (the weight average) and loading;
* the last epoch's training and validation loss, to 17 digits: a change that
  should leave the numbers alone must leave these identical.

Run ``python -m benchmarks.train_speed`` (writes
``benchmarks/results/train-speed.json`` and ``.md``); ``--out-dir`` elsewhere
for before/after runs, ``--models`` and ``--batch-sizes`` for a part.
"""

import argparse
import json
import os
import time

from ._env import ROOT, stamp

MODELS = ("lama", "fcsr", "duo")
BATCH_SIZES = (32, 128)


def _vectorizer_epochs(emb, epochs):
    """Set ``epochs`` on the word2vec step (or each source of Duo's meta-embedding)."""
    if hasattr(emb, "sources"):
        emb.set_params(**{f"{name}__epochs": epochs for name, _ in emb.sources})
    else:
        emb.set_params(epochs=epochs)


def measure(model, batch_sizes, max_epochs, vector_epochs, log=print):
    """Rows of training speed of ``model`` on MR, one per batch size."""
    import torch
    from sklearn.base import clone

    from sklearn_lama.datasets import load_mr

    from ._models import make
    from .cost import fit_clocked

    torch.set_num_threads(1)
    X, y = load_mr(subset="train", return_X_y=True)
    pipeline = make(model, seed=0, max_epochs=max_epochs)
    emb, clf = pipeline.named_steps["emb"], pipeline.named_steps["clf"]
    _vectorizer_epochs(emb, vector_epochs)
    start = time.perf_counter()
    Z = emb.fit_transform(X, y)
    log(f"{model}: vectors in {time.perf_counter() - start:.1f} s")
    rows = []
    for batch_size in batch_sizes:
        fitted_clf = clone(clf).set_params(batch_size=batch_size)
        r = fit_clocked(fitted_clf, Z, y)
        history = fitted_clf.net_.history
        train_tokens = r["train_tokens_per_s"] * r["train_batches_s"]
        loop_s = r["epoch_s"] - r["valid_batches_s"]
        row = {
            "model": model,
            "batch_size": batch_size,
            **r,
            "loop_tokens_per_s": train_tokens / loop_s,
            "last_train_loss": repr(float(history[-1, "train_loss"])),
            "last_valid_loss": repr(float(history[-1, "valid_loss"])),
        }
        log(
            f"{model} batch {batch_size}: {row['train_tokens_per_s']:,.0f} tokens/s in batches, "
            f"{row['loop_tokens_per_s']:,.0f} in the loop; epoch {r['epoch_s']:.2f} s; "
            f"losses {row['last_train_loss']} {row['last_valid_loss']}"
        )
        rows.append(row)
    return rows


def render(payload):
    """Markdown of a :func:`main` payload."""
    cfg, meta = payload["config"], payload["meta"]
    lines = [
        "# Training tokens per second on MR",
        "",
        f"- date {meta['date']}, commit {meta['git_commit']}, {meta['machine']['cpu']}; "
        f"1-minute load average {meta['loadavg_start']} at start, {meta['loadavg_end']} at end",
        f"- command: ``{cfg['command']}``",
        f"- {cfg['max_epochs']} epochs per fit, word2vec vectors at {cfg['vector_epochs']} "
        "epochs, random_state=0, one torch thread",
        "",
        "Batches: training tokens over the training batches' seconds (forward, loss, "
        "backward, step). Loop: over the epoch less its validation batches (adds the "
        "per-batch callbacks and loading). Losses: the last epoch's, for identity checks.",
        "",
        "| model | batch | batches tok/s | loop tok/s | epoch s | train s | valid s | other s "
        "| train loss | valid loss |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    for r in payload["results"]:
        lines.append(
            f"| {r['model']} | {r['batch_size']} | {r['train_tokens_per_s']:,.0f} "
            f"| {r['loop_tokens_per_s']:,.0f} | {r['epoch_s']:.3f} | {r['train_batches_s']:.3f} "
            f"| {r['valid_batches_s']:.3f} | {r['other_s']:.3f} | {r['last_train_loss']} "
            f"| {r['last_valid_loss']} |"
        )
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS)
    parser.add_argument("--batch-sizes", nargs="+", type=int, default=list(BATCH_SIZES))
    parser.add_argument("--max-epochs", type=int, default=2)
    parser.add_argument("--vector-epochs", type=int, default=5)
    parser.add_argument("--out-dir", default=os.path.join(ROOT, "benchmarks", "results"))
    parser.add_argument("--name", default="train-speed")
    args = parser.parse_args(argv)
    rows = []
    for model in args.models:
        rows += measure(model, args.batch_sizes, args.max_epochs, args.vector_epochs)
    payload = {
        "meta": stamp("full", 1),
        "config": {
            "command": "python -m benchmarks.train_speed " + " ".join(argv or []),
            "max_epochs": args.max_epochs,
            "vector_epochs": args.vector_epochs,
        },
        "results": rows,
    }
    payload["meta"]["loadavg_end"] = round(os.getloadavg()[0], 2)
    os.makedirs(args.out_dir, exist_ok=True)
    base = os.path.join(args.out_dir, args.name)
    with open(base + ".json", "w") as fh:
        json.dump(payload, fh, indent=1)
    with open(base + ".md", "w") as fh:
        fh.write(render(payload))


if __name__ == "__main__":
    main()
