"""Where a default pipeline's fit and prediction time goes, beside the tuned peers' fit time.

``python -m benchmarks cost`` (``--section pipelines``, the default). For each
of the README's pipelines (``sklearn_lama._main._pipelines.default_pipeline``,
``random_state=0``) on each corpus, in its own process:

* the vectorizer's ``fit_transform`` (word vectors and token ids);
* the classifier's ``fit``: epochs run, the epoch with the lowest
  validation loss (the weights kept), seconds per epoch split into the
  training batches (forward, loss, backward, optimizer step), the
  validation batches, and the rest (data loading between batches, callbacks,
  the weight average), timed by a skorch callback around every batch;
* training tokens per second, and the FLOP-bound limit: the floating-point
  operations of one training epoch, counted by ``torch.utils.flop_counter``
  on a one-epoch fit of a subset and scaled per token, divided into the rate
  of one large float32 matrix product on the same threads. Operations the
  counter does not know (the GRU's fused kernels among them) are not
  counted, so the limit is an upper bound on attainable speed only for the
  counted part;
* prediction of the whole test split, raw text in: the vectorizer's
  ``transform`` and the classifier's ``predict``, in documents/s;
* a ``torch.profiler`` breakdown of a one-epoch fit of a subset: the
  operators with the most self CPU time.

The peers (TF-IDF + LogisticRegression and, when installed, fastText, both
tuned as in the ``accuracy`` part) are fitted in the same run, so the fit-time
ratios are measured on the same machine under the same load. A run on other
corpora than MR and R8 writes ``cost-<corpus>...``.
"""

import time

from skorch.callbacks import Callback

from .._data import LONG, corpus_name
from .._harness import run_cell
from .._models import (
    OURS,
    OURS_CORPUS,
    OURS_GLOVE,
    PEERS,
    SHORT,
    fasttext_status,
    glove_status,
    labels,
)
from .._report import Report, sig

NAME = "cost"
OPTIONS = {
    "threads": "torch/BLAS threads of every cell (fastText's too)",
    "corpus": "default: mr and r8; other corpora write cost-<corpus>",
    "model": "among tfidf_lr, fasttext, lama, fcsr, duo, lama-corpus, fcsr-corpus, duo-corpus, "
    "lama-glove, fcsr-glove, duo-glove (default: all)",
    "set": "a parameter of our classifiers in every pipeline, over the size's settings",
}
SIZES = {
    "quick": {
        "train_limit": 1000,
        "test_limit": 500,
        "overrides": {"max_epochs": 2},
        "count_docs": 64,
        "profile_docs": 200,
    },
    "full": {
        "train_limit": None,
        "test_limit": None,
        "overrides": {},
        "count_docs": 512,
        "profile_docs": 1000,
    },
}
DEFAULT_CORPORA = ["mr", "r8"]
# On a long corpus a cell is stopped past this many seconds (the 10
# minutes for a fit, and a minute for loading and prediction), and its
# operator counts and profile are skipped: they would cost minutes more.
LONG_LIMIT_S = 660
PROFILE_ROWS = 12


class BatchClock(Callback):
    """A skorch callback summing the seconds of training and of validation batches per epoch.

    A class of the module, not of a function, so that a net fitted with it can be pickled.
    """

    def on_epoch_begin(self, net, **kwargs):
        self.seconds_ = {True: 0.0, False: 0.0}

    def on_batch_begin(self, net, batch=None, training=None, **kwargs):
        self.start_ = time.perf_counter()

    def on_batch_end(self, net, batch=None, training=None, **kwargs):
        self.seconds_[bool(training)] += time.perf_counter() - self.start_

    def on_epoch_end(self, net, **kwargs):
        net.history.record("train_batches_s", self.seconds_[True])
        net.history.record("valid_batches_s", self.seconds_[False])


def _matmul_gflops():
    """Rate of one 1024 x 1024 float32 matrix product on this process's threads."""
    import torch

    a, b = torch.randn(1024, 1024), torch.randn(1024, 1024)
    torch.mm(a, b)
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        torch.mm(a, b)
        best = min(best, time.perf_counter() - start)
    return 2 * 1024**3 / best / 1e9


def _subset(Z, y, n):
    import numpy as np

    rows = np.random.default_rng(0).permutation(len(y))[:n]
    return Z[rows], np.asarray(y)[rows]


def _one_epoch(clf, Z, y):
    from sklearn.base import clone

    return clone(clf).set_params(max_epochs=1, early_stopping=False, verbose=0).fit(Z, y)


def _flops_per_token(clf, Z, y):
    """Floating-point operations of one training epoch per training token, and their split."""
    from torch.utils.flop_counter import FlopCounterMode

    counter = FlopCounterMode(display=False)
    with counter:
        _one_epoch(clf, Z, y)
    tokens = int(Z.lengths.sum())
    by_op = {str(op): n for op, n in counter.get_flop_counts().get("Global", {}).items()}
    return counter.get_total_flops() / tokens, by_op


def _profile(clf, Z, y):
    """The operators with the most self CPU time in a one-epoch fit."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        _one_epoch(clf, Z, y)
    events = prof.key_averages()
    total = sum(e.self_cpu_time_total for e in events)
    rows = sorted(events, key=lambda e: e.self_cpu_time_total, reverse=True)[:PROFILE_ROWS]
    return [
        {
            "op": e.key,
            "self_s": e.self_cpu_time_total / 1e6,
            "share": e.self_cpu_time_total / total,
            "calls": e.count,
        }
        for e in rows
    ]


def fit_clocked(clf, Z, y):
    """Fit the classifier ``clf`` on the vectors or ids ``Z`` with the batch clock; its figures.

    Seconds and CPU seconds of the fit, epochs run, the epoch kept (lowest
    validation loss), the mean epoch split into training batches, validation
    batches and the rest, and training tokens per second of training-batch
    time. The clock is removed again after the fit. A batch's time ends when
    skorch reads its loss, which waits for a GPU's work too.
    """
    import numpy as np

    clf.set_params(callbacks=[*(clf.callbacks or []), BatchClock()])
    start, cpu = time.perf_counter(), time.process_time()
    clf.fit(Z, y)
    classifier_s, classifier_cpu_s = time.perf_counter() - start, time.process_time() - cpu
    clf.set_params(callbacks=clf.callbacks[:-1] or None)
    history = clf.net_.history
    # Early stopping holds no documents out of data too small for a useful split.
    held_out = "valid_loss" in history[-1]
    valid_loss = history[:, "valid_loss"] if held_out else []
    epoch_s = history[:, "dur"]
    train_batches_s = history[:, "train_batches_s"]
    valid_batches_s = history[:, "valid_batches_s"]
    train_tokens = int(Z.lengths.sum()) * (1 - clf.validation_fraction * held_out)
    mean = lambda values: float(np.mean(values))  # noqa: E731
    return {
        "train_tokens": int(Z.lengths.sum()),
        "classifier_s": classifier_s,
        "classifier_cpu_s": classifier_cpu_s,
        "epochs": len(history),
        "best_epoch": int(np.argmin(valid_loss)) + 1 if len(valid_loss) else None,
        "epoch_s": mean(epoch_s),
        "train_batches_s": mean(train_batches_s),
        "valid_batches_s": mean(valid_batches_s),
        "other_s": mean(np.subtract(epoch_s, np.add(train_batches_s, valid_batches_s))),
        "train_tokens_per_s": train_tokens / mean(train_batches_s),
    }


def predict_timed(emb, clf, X_test, y_test):
    """Accuracy and speed of the fitted ``emb`` then ``clf`` on the raw test texts."""
    import numpy as np

    start = time.perf_counter()
    Z_test = emb.transform(X_test)
    transform_s = time.perf_counter() - start
    start = time.perf_counter()
    predicted = clf.predict(Z_test)
    predict_s = time.perf_counter() - start
    return {
        "accuracy": float(np.mean(predicted == np.asarray(y_test))),
        "transform_s": transform_s,
        "predict_s": predict_s,
        "docs_per_s": len(X_test) / (transform_s + predict_s),
        "classifier_docs_per_s": len(X_test) / predict_s,
    }


def cell(corpus, model, threads, train_limit, test_limit, overrides, count_docs, profile_docs):
    """Fit ``model`` on ``corpus`` and break its cost down (child process)."""
    import numpy as np

    from .._data import head, load
    from .._harness import peak_rss_mib
    from .._models import make

    X, y, X_test, y_test = load(corpus)
    X, y = head(X, y, train_limit)
    X_test, y_test = head(X_test, y_test, test_limit)
    y_test = np.asarray(y_test)
    estimator = make(model, threads, **(overrides if model not in PEERS else {}))
    if model in PEERS:
        start, cpu = time.perf_counter(), time.process_time()
        estimator.fit(X, y)
        fit_s, fit_cpu_s = time.perf_counter() - start, time.process_time() - cpu
        start = time.perf_counter()
        predicted = estimator.predict(X_test)
        predict_s = time.perf_counter() - start
        return {
            "n_train": len(X),
            "n_test": len(X_test),
            "fit_s": fit_s,
            "fit_cpu_s": fit_cpu_s,
            "accuracy": float(np.mean(predicted == y_test)),
            "predict_s": predict_s,
            "docs_per_s": len(X_test) / predict_s,
            "peak_rss_mib": peak_rss_mib(),
        }
    emb, clf = estimator.named_steps["emb"], estimator.named_steps["clf"]
    start, cpu = time.perf_counter(), time.process_time()
    Z = emb.fit_transform(X, y)
    vectorizer_s, vectorizer_cpu_s = time.perf_counter() - start, time.process_time() - cpu
    fitted = fit_clocked(clf, Z, y)
    classifier_cpu_s = fitted.pop("classifier_cpu_s")
    predicted = predict_timed(emb, clf, X_test, y_test)
    # Before the FLOP count and the profile, which fit again on a subset.
    peak_rss = peak_rss_mib()
    gflops = _matmul_gflops()
    flops, flops_by_op = (
        _flops_per_token(clf, *_subset(Z, y, count_docs)) if count_docs else (None, {})
    )
    profile = _profile(clf, *_subset(Z, y, profile_docs)) if profile_docs else []
    return {
        "n_train": len(X),
        "n_test": len(X_test),
        **fitted,
        **predicted,
        "fit_s": vectorizer_s + fitted["classifier_s"],
        "fit_cpu_s": vectorizer_cpu_s + classifier_cpu_s,
        "vectorizer_s": vectorizer_s,
        "peak_rss_mib": peak_rss,
        "flops_per_token": flops,
        "flops_by_op": flops_by_op,
        "matmul_gflops": gflops,
        "flop_bound_tokens_per_s": gflops * 1e9 / flops if flops else None,
        "profile": profile,
        "profile_docs": min(profile_docs, len(X)),
    }


def run(cfg, threads, corpora, log):
    corpora = corpora or DEFAULT_CORPORA
    cfg = dict(cfg)
    models = cfg.pop("models", None) or PEERS + OURS + OURS_CORPUS + OURS_GLOVE
    missing = fasttext_status()
    no_glove = glove_status()
    rows = []
    for corpus in corpora:
        for model in models:
            if model == "fasttext" and missing:
                r = {"error": missing}
            elif model in OURS_GLOVE and no_glove:
                r = {"error": no_glove}
            else:
                long = corpus in LONG
                r = run_cell(
                    "benchmarks.cost.pipelines:cell",
                    threads,
                    {
                        "corpus": corpus,
                        "model": model,
                        "threads": threads,
                        **cfg,
                        **({"count_docs": 0, "profile_docs": 0} if long else {}),
                    },
                    timeout=LONG_LIMIT_S if long else None,
                )
            r.update(corpus=corpus_name(corpus), model=model)
            log(
                f"{r['corpus']:6s} {model:9s} "
                + (
                    f"acc {r['accuracy']:.4f} fit {r['fit_s']:7.1f} s"
                    + (
                        f" (vectors {r['vectorizer_s']:.1f} s, {r['epochs']} epochs x "
                        f"{r['epoch_s']:.2f} s, best {r['best_epoch']})"
                        if "epochs" in r
                        else ""
                    )
                    if "error" not in r
                    else f"FAILED {r['error']}"
                )
            )
            rows.append(r)
    name = NAME if corpora == DEFAULT_CORPORA else NAME + "-" + "-".join(map(corpus_name, corpora))
    return {
        "name": name,
        "config": {
            **cfg,
            "corpora": corpora,
            "models": models,
            "fasttext": missing or "installed",
        },
        "results": rows,
    }


def render(payload):
    """The report and plot of a :func:`run` result (also of one read back from JSON)."""
    cfg, rows = payload["config"], payload["results"]
    names = labels(payload.get("meta"))
    rep = Report(payload["name"], "Where the fit and prediction time goes")
    if cfg["train_limit"] is not None:
        rep.text(
            f"Quick size: at most {cfg['train_limit']} training and {cfg['test_limit']} test "
            f"documents, our classifiers with {cfg['overrides']}: these numbers check the "
            "suite, not the models."
        )
    rep.text(
        "Defaults, random_state=0, raw text in; each cell in its own process, the peers "
        "fitted in the same run. Fit x: the whole pipeline's fit time over tuned fastText's "
        "(the fastest tuned peer's when fastText is not installed). An epoch is its training "
        "batches (forward, "
        "backward, step), its validation batches and the rest (loading, callbacks, the weight "
        "average). Tokens/s: training tokens over training-batch seconds; FLOP bound: one "
        "1024 x 1024 float32 matrix product's rate over the counted FLOPs of a training token "
        "(forward and backward). Fit CPU s: the process's CPU seconds during the fit, "
        "steadier than wall time on a loaded machine (not recorded by runs before it "
        "was added: n/a). Docs/s: the test split predicted from raw text. Peak MiB: the "
        "cell process's peak resident memory from its start (the corpus read) through the "
        "fit and the prediction (n/a in runs before it was recorded)."
    )
    if cfg["fasttext"] != "installed":
        rep.text(f"fastText: {cfg['fasttext']}.")
    for corpus in dict.fromkeys(r["corpus"] for r in rows):
        part = [r for r in rows if r["corpus"] == corpus]
        peers = [r for r in part if r["model"] in PEERS and "error" not in r]
        # fastText is the yardstick; without it, the fastest peer.
        ref = next((r for r in peers if r["model"] == "fasttext"), None) or (
            min(peers, key=lambda r: r["fit_s"]) if peers else None
        )
        ours = [r for r in part if r["model"] not in PEERS and "error" not in r]
        rep.text(
            f"**{corpus}** ({part[0].get('n_train', '?')} training / "
            f"{part[0].get('n_test', '?')} test documents); fit x against "
            + (f"{SHORT[ref['model']]} {sig(ref['fit_s'])} s" if ref else "none")
        )
        rep.table(
            ["model", "accuracy", "fit s", "fit x", "fit CPU s", "docs/s", "peak MiB"],
            [
                [
                    names[r["model"]],
                    f"{r['accuracy']:.4f}",
                    sig(r["fit_s"]),
                    sig(r["fit_s"] / ref["fit_s"]) if ref else "n/a",
                    sig(r["fit_cpu_s"]) if "fit_cpu_s" in r else "n/a",
                    f"{r['docs_per_s']:,.0f}",
                    f"{r['peak_rss_mib']:,.0f}" if "peak_rss_mib" in r else "n/a",
                ]
                for r in part
                if "error" not in r
            ],
        )
        failed = [r for r in part if "error" in r]
        if failed:
            rep.text(
                "Not in the table: "
                + "; ".join(f"{names[r['model']]}: {r['error']}" for r in failed)
                + "."
            )
        if ours:
            rep.table(
                [
                    "model",
                    "vectors s",
                    "classifier s",
                    "epochs",
                    "best",
                    "epoch s",
                    "train",
                    "valid",
                    "other",
                    "tokens/s",
                    "FLOP bound",
                    "predict docs/s",
                ],
                [
                    [
                        SHORT[r["model"]],
                        sig(r["vectorizer_s"]),
                        sig(r["classifier_s"]),
                        str(r["epochs"]),
                        str(r["best_epoch"]),
                        sig(r["epoch_s"]),
                        sig(r["train_batches_s"]),
                        sig(r["valid_batches_s"]),
                        sig(r["other_s"]),
                        f"{r['train_tokens_per_s']:,.0f}",
                        f"{r['flop_bound_tokens_per_s']:,.0f}"
                        if r.get("flop_bound_tokens_per_s")
                        else "n/a",
                        f"{r['classifier_docs_per_s']:,.0f}",
                    ]
                    for r in ours
                ],
            )
    profiled = [r for r in rows if r.get("profile")]
    for r in profiled[: len(OURS)]:
        rep.text(
            f"Profile of one epoch, {SHORT[r['model']]} on {r['corpus']} "
            f"({r['profile_docs']} documents), by self CPU time:"
        )
        rep.table(
            ["operator", "self s", "share", "calls"],
            [
                [f"``{p['op']}``", sig(p["self_s"]), f"{p['share']:.0%}", str(p["calls"])]
                for p in r["profile"]
            ],
        )
    return rep, _plotter(rows)


def _plotter(rows):
    def plot(fig):
        corpora = list(dict.fromkeys(r["corpus"] for r in rows))
        for i, corpus in enumerate(corpora):
            ax = fig.add_subplot(1, len(corpora), i + 1)
            part = [r for r in rows if r["corpus"] == corpus and "error" not in r]
            names = [SHORT[r["model"]] for r in part]
            stacks = [
                ("vectors", [r.get("vectorizer_s", 0) for r in part]),
                (
                    "training batches",
                    [r.get("train_batches_s", 0) * r.get("epochs", 0) for r in part],
                ),
                (
                    "validation + other",
                    [
                        (r.get("valid_batches_s", 0) + r.get("other_s", 0)) * r.get("epochs", 0)
                        for r in part
                    ],
                ),
                (
                    "peer fit",
                    [r["fit_s"] if r["model"] in PEERS else 0 for r in part],
                ),
            ]
            # Horizontal bars: the pipelines' names, up to "Duo (GloVe)", fit beside them.
            left = [0.0] * len(part)
            for label, values in stacks:
                ax.barh(names, values, left=left, label=label)
                left = [b + v for b, v in zip(left, values)]
            ax.invert_yaxis()
            ax.set(xlabel="fit time (s)", title=corpus)
            ax.grid(True, axis="x", alpha=0.3)
            ax.legend(fontsize=7)

    return plot
