"""Where a default pipeline's fit and prediction time goes, beside the tuned peers' fit time.

For each of the README's pipelines (``sklearn_lama._main._pipelines.default_pipeline``,
``random_state=0``) on each corpus, in its own process:

* the vectorizer's ``fit_transform`` (word2vec training and token ids);
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
ratios are measured on the same machine under the same load.

Three more sections (``--section``), each a question of cost:

* ``corpus-size``: fit time and peak memory as the corpus grows (MR's
  training sentences cycled, later copies with their words shuffled, so
  documents keep their lengths), one epoch per fit; linearity read from the
  least-squares line ``time = a + b x tokens``, its R², and the marginal cost
  between the two largest sizes;
* ``doc-length``: one epoch's fit cost per token on R8's documents joined to
  500-20,000 tokens, the corpus size fixed; LAMA also with its exact
  recurrence (``chunk_length=None``), and the chunked predictions against the
  exact ones for the same weights;
* ``paper-length``: one training step (forward, loss, backward) of the
  modules alone against the sequence length, the LAMA Encoder, LAMA (BiGRU)
  and FCSR against a Transformer encoder (§5.2 and Fig. 2 of the LAMA paper,
  Mehta & Rangwala); an "epoch" is the steps of one pass over an R8-sized
  corpus (5,485 documents); memory is the peak resident set size during the
  first full-size step above the size before it (:mod:`benchmarks._harness`).
"""

import math
import time

import numpy as np
from skorch.callbacks import Callback

from ._data import LONG, corpus_name
from ._harness import run_cell
from ._models import (
    LABELS,
    OURS,
    OURS_CORPUS,
    OURS_GLOVE,
    PEERS,
    SHORT,
    fasttext_status,
    glove_status,
)
from ._report import Report, sig

NAME = "cost"
PIPELINE_SIZES = {
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

    from ._data import head, load
    from ._harness import peak_rss_mib
    from ._models import make

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


def run_pipelines(cfg, threads, corpora, log):
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
                    "benchmarks.cost:cell",
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


def render_pipelines(payload):
    """The report and plot of a :func:`run_pipelines` result (also of one read back from JSON)."""
    cfg, rows = payload["config"], payload["results"]
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
                    LABELS[r["model"]],
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
                + "; ".join(f"{LABELS[r['model']]}: {r['error']}" for r in failed)
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


# ----- corpus-size
SIZE_NAME = "scaling"
SIZE_SIZES = {
    "quick": {
        "n_docs": [1000, 2000, 4000],
        "overrides": {"max_epochs": 1, "early_stopping": False},
    },
    "full": {
        "n_docs": [1000, 3000, 10000, 30000, 100000],
        "overrides": {"max_epochs": 1, "early_stopping": False},
    },
}


def size_cell(corpus, model, n_docs, threads, overrides):
    """Fit vectorizer and classifier on ``n_docs`` grown documents (child process)."""
    import time

    from ._data import grow, load
    from ._harness import peak_rss_mib, start_peak
    from ._models import make

    texts, labels = grow(*load(corpus)[:2], n_docs)
    pipe = make(model, threads, **overrides)
    base = start_peak()
    start = time.perf_counter()
    X = pipe[0].fit_transform(texts)
    vectorizer_s = time.perf_counter() - start
    pipe[1].fit(X, labels)
    total_s = time.perf_counter() - start
    return {
        "n_docs": n_docs,
        "tokens": int(np.sum(X.lengths)),
        "vocabulary": int(X.tables[0].shape[0]),
        "vectorizer_s": vectorizer_s,
        "classifier_s": total_s - vectorizer_s,
        "total_s": total_s,
        "peak_rss_delta_mib": peak_rss_mib() - base,
    }


def run_size(cfg, threads, corpora, log):
    corpus = (corpora or ["mr"])[0]
    rows = []
    for model in cfg.get("models") or OURS:
        for n in cfg["n_docs"]:
            r = run_cell(
                "benchmarks.cost:size_cell",
                threads,
                dict(
                    corpus=corpus,
                    model=model,
                    n_docs=n,
                    threads=threads,
                    overrides=cfg["overrides"],
                ),
            )
            r.update(model=model, n_docs=n)
            log(
                f"{model:5s} n={n:7d} "
                + (
                    f"{r['tokens']:>9,} tokens  w2v {r['vectorizer_s']:6.1f} s  clf "
                    f"{r['classifier_s']:6.1f} s  peak +{r['peak_rss_delta_mib']:6.0f} MiB"
                    if "error" not in r
                    else f"FAILED {r['error']}"
                )
            )
            rows.append(r)
    fits = {m: _size_fit([r for r in rows if r["model"] == m and "error" not in r]) for m in OURS}
    name = SIZE_NAME if corpora is None else f"{SIZE_NAME}-{corpus_name(corpus)}"
    return {"name": name, "config": {**cfg, "corpus": corpus}, "results": rows, "fits": fits}


def render_size(payload):
    """The report and plot of a :func:`run_size` result (also of one read back from JSON)."""
    rows = payload["results"]
    return _size_report(
        payload["name"], payload["config"]["corpus"], rows, payload["fits"]
    ), _size_plotter(rows)


def _size_line(x, y):
    """Least squares ``y = a + b x``: ``(a, b, r2)``."""
    b, a = np.polyfit(x, y, 1)
    residual = np.sum((np.asarray(y) - (a + b * np.asarray(x))) ** 2)
    spread = np.sum((np.asarray(y) - np.mean(y)) ** 2)
    return float(a), float(b), float(1 - residual / spread) if spread else 1.0


def _size_fit(rows):
    if len(rows) < 2:
        return None
    x = [r["tokens"] for r in rows]
    out = {}
    for key in ("total_s", "classifier_s", "vectorizer_s", "peak_rss_delta_mib"):
        y = [r[key] for r in rows]
        a, b, r2 = _size_line(x, y)
        out[key] = {
            "intercept": a,
            "per_token": b,
            "r2": r2,
            "marginal_top2": (y[-1] - y[-2]) / (x[-1] - x[-2]),
        }
    return out


def _size_report(name, corpus, rows, fits):
    rep = Report(name, "Fit time and peak memory vs corpus size (one epoch)")
    rep.text(
        f"Corpus: {corpus_name(corpus)} training split grown by shuffled copies; "
        "Word2VecVectorizer() + each classifier with max_epochs=1, early_stopping=False, "
        "random_state=0. Tokens: those the classifier sees (words below min_count dropped). The "
        "vocabulary grows while copies lift rare words over min_count=5."
    )
    rep.table(
        [
            "model",
            "docs",
            "tokens",
            "vocabulary",
            "word2vec s",
            "classifier s",
            "total s",
            "us/token",
            "peak MiB",
        ],
        [
            [LABELS[r["model"]].replace("Word2Vec + ", ""), f"{r['n_docs']:,}"]
            + (
                ["failed"] + ["n/a"] * 6
                if "error" in r
                else [
                    f"{r['tokens']:,}",
                    f"{r['vocabulary']:,}",
                    sig(r["vectorizer_s"]),
                    sig(r["classifier_s"]),
                    sig(r["total_s"]),
                    sig(r["total_s"] / r["tokens"] * 1e6),
                    sig(r["peak_rss_delta_mib"]),
                ]
            )
            for r in rows
        ],
    )
    rep.table(
        [
            "model",
            "total us/token (slope)",
            "R²",
            "marginal us/token (top 2)",
            "fixed s",
            "classifier us/token",
            "word2vec us/token",
            "memory bytes/token",
            "memory R²",
        ],
        [
            [
                LABELS[m].replace("Word2Vec + ", ""),
                f"{f['total_s']['per_token'] * 1e6:.2f}",
                f"{f['total_s']['r2']:.4f}",
                f"{f['total_s']['marginal_top2'] * 1e6:.2f}",
                f"{f['total_s']['intercept']:.1f}",
                f"{f['classifier_s']['per_token'] * 1e6:.2f}",
                f"{f['vectorizer_s']['per_token'] * 1e6:.2f}",
                f"{f['peak_rss_delta_mib']['per_token'] * 2**20:.0f}",
                f"{f['peak_rss_delta_mib']['r2']:.3f}",
            ]
            for m, f in fits.items()
            if f
        ],
    )
    rep.bullets(_size_findings(rows, fits))
    return rep


def _size_findings(rows, fits):
    out = []
    for m, f in fits.items():
        if not f:
            continue
        pts = [r for r in rows if r["model"] == m and "error" not in r]
        per_token = [r["total_s"] / r["tokens"] for r in pts]
        # Per-token cost between the two largest sizes: flat when the cost is
        # linear (fixed costs have faded by then), rising when it grows faster.
        growth = per_token[-1] / per_token[-2]
        t = f["total_s"]
        verdict = (
            "linear"
            if 0.8 <= growth <= 1.25
            else "per-token cost not flat: superlinear, or the CPU got busier (see the load "
            "average)"
        )
        out.append(
            f"{LABELS[m]}: {t['per_token'] * 1e6:.1f} us per token fitted (R² {t['r2']:.3f}); "
            f"per token {per_token[-2] * 1e6:.1f} us at {pts[-2]['tokens']:,} tokens and "
            f"{per_token[-1] * 1e6:.1f} us at {pts[-1]['tokens']:,} ({growth:.2f}x): {verdict}. "
            f"Peak memory grows by {f['peak_rss_delta_mib']['per_token'] * 2**20:.0f} bytes per "
            "token."
        )
    return out


def _size_plotter(rows):
    def plot(fig):
        ax_t, ax_m = fig.add_subplot(1, 2, 1), fig.add_subplot(1, 2, 2)
        for model, colour in zip(OURS, ("tab:blue", "tab:orange", "tab:green")):
            pts = [r for r in rows if r["model"] == model and "error" not in r]
            if not pts:
                continue
            x = [r["tokens"] for r in pts]
            ax_t.plot(
                x, [r["total_s"] for r in pts], "o-", color=colour, label=f"{SHORT[model]} total"
            )
            ax_t.plot(
                x,
                [r["classifier_s"] for r in pts],
                "x:",
                color=colour,
                label=f"{SHORT[model]} classifier",
            )
            ax_m.plot(
                x, [r["peak_rss_delta_mib"] for r in pts], "o-", color=colour, label=SHORT[model]
            )
        ax_t.set(
            xscale="log",
            yscale="log",
            xlabel="tokens",
            ylabel="fit time, one epoch (s)",
            title="fit time vs tokens",
        )
        ax_m.set(
            xscale="log",
            yscale="log",
            xlabel="tokens",
            ylabel="peak RSS above start of fit (MiB)",
            title="peak memory",
        )
        for ax in (ax_t, ax_m):
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=7)

    return plot


# ``--length``: fit cost per token as documents grow, the corpus size fixed.
LENGTH = {
    "quick": {"lengths": [500, 2000], "tokens": 8000},
    "full": {"lengths": [500, 2000, 10000, 20000], "tokens": 40000},
}
# LAMA twice: with the BiGRU chunked past chunk_length (the default) and exact.
LENGTH_MODELS = {"lama": {}, "lama_exact": {"chunk_length": None}, "fcsr": {}, "duo": {}}


def joined(texts, labels, length, n_tokens, seed=0):
    """Documents of ``length`` whitespace tokens, R8 documents joined in a random order.

    Each takes the label of its first document; ``n_tokens`` in all (at
    least one document).
    """
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(texts))
    docs, doc_labels, words, position = [], [], [], 0
    while len(docs) < max(n_tokens // length, 1):
        j = order[position % len(order)]
        position += 1
        if not words:
            doc_labels.append(labels[j])
        words.extend(texts[j].split())
        if len(words) >= length:
            docs.append(" ".join(words[:length]))
            words = []
    return docs, np.asarray(doc_labels, dtype=object)


def length_cell(model, length, n_tokens, threads):
    """One epoch of ``model`` on documents of ``length`` tokens (child process)."""
    import os
    import time

    import torch

    from ._data import load
    from ._models import make

    texts, labels = joined(*load("r8")[:2], length, n_tokens)
    overrides = {"max_epochs": 1, "early_stopping": False, **LENGTH_MODELS[model]}
    pipe = make(model.replace("_exact", ""), threads, **overrides)
    X = pipe[0].fit_transform(texts)
    start = time.perf_counter()
    pipe[1].fit(X, labels)
    fit_s = time.perf_counter() - start
    tokens = int(np.sum(X.lengths))
    out = {
        "docs": len(texts),
        "tokens": tokens,
        "fit_s": fit_s,
        "us_per_token": fit_s / tokens * 1e6,
        "loadavg": round(os.getloadavg()[0], 2),
    }
    encoder = getattr(pipe[1].net_.module_.core, "encoder", None)
    if model == "lama" and encoder is not None and encoder.chunk_length is not None:
        # The same weights read exactly: how far the chunked recurrence moves the predictions.
        chunked = pipe[1].predict_proba(X)
        encoder.chunk_length = None
        with torch.no_grad():
            exact = pipe[1].predict_proba(X)
        out.update(
            max_proba_difference=float(np.abs(chunked - exact).max()),
            same_prediction=float(np.mean(chunked.argmax(1) == exact.argmax(1))),
        )
    return out


def run_length(cfg, threads, log):
    rows = []
    for length in cfg["lengths"]:
        for model in LENGTH_MODELS:
            r = run_cell(
                "benchmarks.cost:length_cell",
                threads,
                dict(model=model, length=length, n_tokens=cfg["tokens"], threads=threads),
            )
            r.update(model=model, length=length)
            log(
                f"{model:10s} length {length:6d} "
                + (
                    f"{r['tokens']:,} tokens  fit {r['fit_s']:7.1f} s  "
                    f"{r['us_per_token']:8.1f} us/token  load {r['loadavg']}"
                    if "error" not in r
                    else f"FAILED {r['error']}"
                )
            )
            rows.append(r)
    return {"name": f"{SIZE_NAME}-length", "config": cfg, "results": rows}


def render_length(payload):
    rows = payload["results"]
    rep = Report(payload["name"], "Fit cost per token vs document length (one epoch)")
    rep.text(
        f"R8 training documents joined (random order) into documents of each length, "
        f"{payload['config']['tokens']:,} whitespace tokens in all per cell (tokens: those "
        "the classifier sees); Word2VecVectorizer() fitted first, then each classifier "
        "timed for one epoch (max_epochs=1, early_stopping=False, random_state=0), one "
        "torch thread, one process per cell. LAMA (exact) is "
        "LAMAClassifier(chunk_length=None), the recurrence over whole documents; LAMA "
        "is the default chunk_length=1024. The last column compares the chunked LAMA's "
        "predictions with those of the same weights read exactly."
    )
    base = {
        r["model"]: r["us_per_token"] for r in rows if r["length"] == 2000 and "error" not in r
    }
    names = {"lama": "LAMA", "lama_exact": "LAMA (exact)", "fcsr": "FCSR", "duo": "Duo"}
    rep.table(
        [
            "model",
            "length",
            "docs",
            "tokens",
            "fit s",
            "us/token",
            "vs 2,000 tokens",
            "load average",
            "chunked vs exact: max abs. difference, same label",
        ],
        [
            [names[r["model"]], f"{r['length']:,}"]
            + (
                ["failed"] + ["n/a"] * 6
                if "error" in r
                else [
                    f"{r['docs']:,}",
                    f"{r['tokens']:,}",
                    sig(r["fit_s"]),
                    sig(r["us_per_token"]),
                    f"{r['us_per_token'] / base[r['model']]:.2f}x"
                    if r["model"] in base
                    else "n/a",
                    f"{r['loadavg']}",
                    f"{r['max_proba_difference']:.3f}, {r['same_prediction']:.1%}"
                    if "max_proba_difference" in r
                    else "",
                ]
            )
            for r in rows
        ],
    )
    return rep, _length_plotter(rows, names)


def _length_plotter(rows, names):
    def plot(fig):
        ax = fig.add_subplot(1, 1, 1)
        for model in LENGTH_MODELS:
            pts = [r for r in rows if r["model"] == model and "error" not in r]
            ax.plot(
                [r["length"] for r in pts],
                [r["us_per_token"] for r in pts],
                "o-",
                label=names[model],
            )
        ax.set(
            xscale="log",
            yscale="log",
            xlabel="tokens per document",
            ylabel="fit us per token, one epoch",
            title="fit cost per token vs document length",
        )
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)

    return plot


# ----- paper-length
PAPER_NAME = "runtime_vs_length"
PAPER_MODELS = ("lama_encoder", "lama", "fcsr", "transformer")
PAPER_LABELS = {
    "lama_encoder": "LAMA Encoder",
    "lama": "LAMA (BiGRU)",
    "fcsr": "FCSR",
    "transformer": "Transformer",
}
EPOCH_DOCUMENTS = 5485
TARGET_LENGTH, TARGET_SPEEDUP = 1000, 3.0
PAPER_SIZES = {
    "quick": {"lengths": [50, 200, 1000], "batch": 16, "width": 128, "nhead": 4, "repeats": 2},
    "full": {
        "lengths": [50, 100, 200, 500, 1000, 2000],
        "batch": 16,
        "width": 128,
        "nhead": 4,
        "repeats": 5,
    },
}


def paper_module(model, width, nhead, n_classes):
    """The classifier module named ``model`` for ``width``-wide inputs."""
    from sklearn_lama.modules import FCSRModule, LAMAModule

    from ._baselines import TransformerEncoderClassifier

    if model == "lama_encoder":
        return LAMAModule(width, n_classes, encoder="none")
    if model == "lama":
        return LAMAModule(width, n_classes)
    if model == "fcsr":
        return FCSRModule(width, n_classes)
    return TransformerEncoderClassifier(width, n_classes, n_heads=nhead)


def paper_cell(model, length, batch, width, nhead, repeats, n_classes=8):
    """Time and peak memory of one training step of ``model`` at ``length`` (child process)."""
    import torch

    from ._harness import median_time, peak_rss_mib, start_peak

    torch.manual_seed(0)
    net = paper_module(model, width, nhead, n_classes).train()

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


def run_paper(cfg, threads, corpora, log):
    rows = []
    for length in cfg["lengths"]:
        for model in PAPER_MODELS:
            r = run_cell(
                "benchmarks.cost:paper_cell",
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
    ratios = _paper_ratios(rows, cfg["lengths"])
    return {"name": PAPER_NAME, "config": cfg, "results": rows, "ratios": ratios}


def render_paper(payload):
    """The report and plot of a :func:`run_paper` result (also of one read back from JSON)."""
    cfg, rows = payload["config"], payload["results"]
    return _paper_report(cfg, rows, payload["ratios"]), _paper_plotter(cfg, rows)


def _paper_ratios(rows, lengths):
    """Transformer / model, time and memory, per length (>1: the model is cheaper)."""
    by = {(r["model"], r["length"]): r for r in rows if "error" not in r}
    out = []
    for T in lengths:
        te = by.get(("transformer", T))
        entry = {"length": T}
        for model in PAPER_MODELS[:-1]:
            other = by.get((model, T))
            if te and other:
                entry[model] = {
                    "time": te["median_s"] / other["median_s"],
                    "memory": te["peak_rss_delta_mib"] / max(other["peak_rss_delta_mib"], 1e-9),
                }
        out.append(entry)
    return out


def _paper_fmt(r, key):
    return "failed" if "error" in r else sig(r[key])


def _paper_report(cfg, rows, ratios):
    by = {(r["model"], r["length"]): r for r in rows}
    rep = Report(
        PAPER_NAME,
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
            + [f"{PAPER_LABELS[m]} {unit}" for m in PAPER_MODELS]
            + [f"TE / {PAPER_LABELS[m]} {ratio}" for m in PAPER_MODELS[:-1]],
            [
                [str(T)]
                + [_paper_fmt(by[(m, T)], key) for m in PAPER_MODELS]
                + [f"{e[m][ratio]:.2f}" if m in e else "n/a" for m in PAPER_MODELS[:-1]]
                for T, e in zip(cfg["lengths"], ratios)
            ],
        )
    first = by[(PAPER_MODELS[0], cfg["lengths"][0])]
    rep.text(
        "Parameters: "
        + ", ".join(
            f"{PAPER_LABELS[m]} {by[(m, cfg['lengths'][0])].get('n_params', 0):,}"
            for m in PAPER_MODELS
        )
        + "; step times in ms are in the JSON file "
        + f"({first.get('torch_threads', '?')} torch thread(s))."
    )
    rep.bullets(_paper_findings(cfg, ratios))
    return rep


def _paper_findings(cfg, ratios):
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
                f"{PAPER_LABELS[model]} "
                "(quadratic vs linear in T)."
            )
    return out


def _paper_plotter(cfg, rows):
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
            for model in PAPER_MODELS:
                pts = [
                    (r["length"], r[key]) for r in rows if r["model"] == model and "error" not in r
                ]
                if pts:
                    ax.plot(*zip(*pts), "o-", color=colours[model], label=PAPER_LABELS[model])
            ax.set(xscale="log", yscale="log", xlabel="sequence length T", ylabel=label)
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=8)
        fig.suptitle(
            f"Training step vs length (batch {cfg['batch']}, width {cfg['width']})", fontsize=10
        )

    return plot


# The sections of the part (``--section``): how each runs, the name of its results.
SECTIONS = {
    "pipelines": run_pipelines,
    "corpus-size": run_size,
    "doc-length": lambda cfg, threads, corpora, log: run_length(cfg, threads, log),
    "paper-length": run_paper,
}
_SECTION_SIZES = {
    "pipelines": PIPELINE_SIZES,
    "corpus-size": SIZE_SIZES,
    "doc-length": LENGTH,
    "paper-length": PAPER_SIZES,
}
SIZES = {
    size: {"sizes": {k: v[size] for k, v in _SECTION_SIZES.items()}} for size in ("quick", "full")
}
# The stems of the results files the sections write.
STEMS = (NAME, SIZE_NAME, PAPER_NAME)


def run(cfg, threads, corpora, log):
    """Run the section ``cfg["section"]`` (default: pipelines) at its size in ``cfg["sizes"]``."""
    section = cfg.get("section") or "pipelines"
    if section not in SECTIONS:
        raise SystemExit(f"cost has no section {section!r}: one of {', '.join(SECTIONS)}")
    sized = dict(cfg["sizes"][section])
    if "models" in cfg:
        sized["models"] = cfg["models"]
    if "overrides" in cfg:
        if "overrides" not in sized:
            raise SystemExit(f"cost's section {section!r} takes no classifier parameters (--set)")
        sized["overrides"] = {**sized["overrides"], **cfg["overrides"]}
    return SECTIONS[section](sized, threads, corpora, log)


def render(payload):
    """The report and plot of any section's result, chosen by its name."""
    name = payload["name"]
    if name == SIZE_NAME + "-length":
        return render_length(payload)
    if name.startswith(SIZE_NAME):
        return render_size(payload)
    if name == PAPER_NAME:
        return render_paper(payload)
    return render_pipelines(payload)
