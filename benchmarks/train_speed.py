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
* the FLOP bound of the cost part (``benchmarks.cost``: the counted
  FLOPs of a training token, one epoch of 512 documents, over one large
  matrix product's rate) and the batches' share of it;
* the last epoch's training and validation loss, to 17 digits: a change that
  should leave the numbers alone must leave these identical.

Run ``python -m benchmarks.train_speed`` (writes
``benchmarks/results/train-speed.json`` and ``.md``); ``--out-dir`` elsewhere
for before/after runs, ``--models`` and ``--batch-sizes`` for a part.
``--cv VARIANT ...`` measures accuracy instead: 3-fold cross-validation on
MR's training split (never its test split) of the default pipeline with each
variant of classifier parameters (JSON, ``'{}'`` for the defaults).
"""

import argparse
import json
import os
import shlex
import sys
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


def measure(model, batch_sizes, max_epochs, vector_epochs, params=None, log=print):
    """Rows of training speed of ``model`` on MR, one per batch size.

    ``params`` are further classifier parameters (a dict), the same for every fit.
    """
    import torch
    from sklearn.base import clone

    from sklearn_lama.datasets import load_mr

    from ._models import make
    from .cost import _flops_per_token, _matmul_gflops, _subset, fit_clocked

    torch.set_num_threads(1)
    X, y = load_mr(subset="train", return_X_y=True)
    pipeline = make(model, seed=0, max_epochs=max_epochs)
    emb, clf = pipeline.named_steps["emb"], pipeline.named_steps["clf"]
    _vectorizer_epochs(emb, vector_epochs)
    start = time.perf_counter()
    Z = emb.fit_transform(X, y)
    log(f"{model}: vectors in {time.perf_counter() - start:.1f} s")
    flops, _ = _flops_per_token(clone(clf).set_params(**(params or {})), *_subset(Z, y, 512))
    bound = _matmul_gflops() * 1e9 / flops
    rows = []
    for batch_size in batch_sizes:
        fitted_clf = clone(clf).set_params(**(params or {}), batch_size=batch_size)
        r = fit_clocked(fitted_clf, Z, y)
        history = fitted_clf.net_.history
        train_tokens = r["train_tokens_per_s"] * r["train_batches_s"]
        loop_s = r["epoch_s"] - r["valid_batches_s"]
        row = {
            "model": model,
            "batch_size": batch_size,
            "params": json.dumps(params or {}, sort_keys=True),
            **r,
            "loop_tokens_per_s": train_tokens / loop_s,
            "flop_bound_tokens_per_s": bound,
            "share_of_bound": r["train_tokens_per_s"] / bound,
            "last_train_loss": repr(float(history[-1, "train_loss"])),
            "last_valid_loss": repr(float(history[-1, "valid_loss"])),
        }
        log(
            f"{model} {row['params']} batch {batch_size}: "
            f"{row['train_tokens_per_s']:,.0f} tokens/s in batches, "
            f"{row['loop_tokens_per_s']:,.0f} in the loop ({row['share_of_bound']:.0%} of the "
            f"bound {bound:,.0f}); epoch {r['epoch_s']:.2f} s; "
            f"losses {row['last_train_loss']} {row['last_valid_loss']}"
        )
        rows.append(row)
    return rows


def cross_validate(model, variants, folds=3, log=print):
    """Accuracy of ``model``'s default pipeline under each classifier variant, by folds of MR.

    Stratified ``folds``-fold cross-validation (shuffled, seed 0) on MR's
    training split only; the vectorizer (at its defaults) is fitted once per
    fold, and every variant (a dict of classifier parameters, ``{}`` for the
    defaults) is fitted on its vectors. One row per variant and fold.
    """
    import numpy as np
    import torch
    from sklearn.base import clone
    from sklearn.model_selection import StratifiedKFold

    from sklearn_lama.datasets import load_mr

    from ._models import make

    torch.set_num_threads(1)
    X, y = load_mr(subset="train", return_X_y=True)
    X, y = np.asarray(X, dtype=object), np.asarray(y)
    rows = []
    splits = StratifiedKFold(folds, shuffle=True, random_state=0).split(X, y)
    for fold, (train, test) in enumerate(splits):
        pipeline = make(model, seed=0)
        emb = pipeline.named_steps["emb"]
        Z_train = emb.fit_transform(list(X[train]), y[train])
        Z_test = emb.transform(list(X[test]))
        for variant in variants:
            clf = clone(pipeline.named_steps["clf"]).set_params(**variant)
            start = time.perf_counter()
            clf.fit(Z_train, y[train])
            fit_s = time.perf_counter() - start
            accuracy = float(np.mean(clf.predict(Z_test) == y[test]))
            epochs = len(clf.net_.history)
            log(f"{model} fold {fold} {variant}: accuracy {accuracy:.4f}, {epochs} epochs")
            rows.append(
                {
                    "model": model,
                    "variant": json.dumps(variant, sort_keys=True),
                    "fold": fold,
                    "accuracy": accuracy,
                    "epochs": epochs,
                    "fit_s": fit_s,
                }
            )
    return rows


def render_cv(payload):
    """Markdown of a ``--cv`` payload: each variant's fold accuracies and their mean."""
    import numpy as np

    cfg, meta = payload["config"], payload["meta"]
    lines = [
        "# Accuracy of training variants by cross-validation on MR's training split",
        "",
        f"- date {meta['date']}, commit {meta['git_commit']}; command: ``{cfg['command']}``",
        "",
        "| model | variant | fold accuracies | mean | epochs | fit s |",
        "|---|---|---|---:|---|---:|",
    ]
    groups = {}
    for r in payload["results"]:
        groups.setdefault((r["model"], r["variant"]), []).append(r)
    for (model, variant), rows in groups.items():
        lines.append(
            f"| {model} | ``{variant}`` | "
            + ", ".join(f"{r['accuracy']:.4f}" for r in rows)
            + f" | {np.mean([r['accuracy'] for r in rows]):.4f} | "
            + ", ".join(str(r["epochs"]) for r in rows)
            + f" | {np.mean([r['fit_s'] for r in rows]):.1f} |"
        )
    return "\n".join(lines) + "\n"


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
        "per-batch callbacks and loading). FLOP bound: one 1024 x 1024 float32 matrix "
        "product's rate over the counted FLOPs of a training token (``benchmarks.cost``); "
        "share: batches tok/s over it. Losses: the last epoch's, for identity checks.",
        "",
        "| model | parameters | batch | batches tok/s | loop tok/s | FLOP bound | share "
        "| epoch s | train s | valid s | other s | train loss | valid loss |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    for r in payload["results"]:
        lines.append(
            f"| {r['model']} | ``{r['params']}`` | {r['batch_size']} "
            f"| {r['train_tokens_per_s']:,.0f} "
            f"| {r['loop_tokens_per_s']:,.0f} | {r['flop_bound_tokens_per_s']:,.0f} "
            f"| {r['share_of_bound']:.0%} | {r['epoch_s']:.3f} | {r['train_batches_s']:.3f} "
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
    parser.add_argument(
        "--params", type=json.loads, default={}, help="classifier parameters of every fit (JSON)"
    )
    parser.add_argument(
        "--cv",
        nargs="+",
        metavar="VARIANT",
        help="instead of speed: cross-validated accuracy of these classifier variants "
        "(JSON dicts of parameters, '{}' for the defaults)",
    )
    argv = sys.argv[1:] if argv is None else argv
    args = parser.parse_args(argv)
    meta = stamp("full", 1)
    rows = []
    for model in args.models:
        if args.cv:
            rows += cross_validate(model, [json.loads(v) for v in args.cv])
        else:
            rows += measure(
                model, args.batch_sizes, args.max_epochs, args.vector_epochs, args.params
            )
    payload = {
        "meta": meta,
        "config": {
            "command": shlex.join(["python", "-m", "benchmarks.train_speed", *argv]),
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
        fh.write((render_cv if args.cv else render)(payload))


if __name__ == "__main__":
    main()
