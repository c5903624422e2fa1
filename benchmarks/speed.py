"""Speed levers, each measured for fit time and for accuracy on the training data alone.

Every lever is a set of step parameters of a README pipeline
(``sklearn_lama._main._pipelines.default_pipeline``) applied on top of its
defaults. Each (corpus, model, lever, seed) cell fits the pipeline on a
stratified 80 % of the corpus's *training* split and scores it on the other
20 % (the selection split), in its own process with the suite's threads:
the test split is never read, so a lever kept on these numbers was not chosen
on it. Reported per cell: whole-pipeline fit time, the vectorizer's share,
epochs run and the epoch kept (lowest validation loss of the classifier's
own early-stopping split), and selection accuracy. Levers compare by their
ratio to the baseline of the same run and seed.

The levers:

* ``patience 1``: early stopping after one epoch without a lower validation
  loss (today's default waits 5); the weights kept are the best epoch's, so
  the result is unchanged whenever the best epoch comes before the first
  epoch that does not improve;
* ``word2vec N passes``: ``epochs=N`` for every word2vec model of the pipeline
  (today 20);
* ``no NB columns``: ``nb_unigram_weight=0, nb_bigram_weight=0`` with the
  default patience, a diagnosis: does the epoch-1 peak come from the
  in-sample Naive Bayes columns?;
* ``batch 64``: twice the training batch, with the learning rate scaled by
  its square root;
* ``no weight average``: ``ema_horizon=0``.
"""

from ._data import corpus_name
from ._harness import run_cell
from ._report import Report, sig

NAME = "speed"
OURS = ("lama", "fcsr", "duo")
SHORT = {"lama": "LAMA", "fcsr": "FCSR", "duo": "Duo"}
SELECTION_FRACTION = 0.2


def _word2vec(model, **params):
    """``params`` for every word2vec model of ``model``'s pipeline."""
    prefixes = ["emb__cbow__", "emb__skipgram__"] if model == "duo" else ["emb__"]
    return {p + k: v for p in prefixes for k, v in params.items()}


LEVERS = {
    "baseline": lambda model: {},
    "patience 1": lambda model: {"clf__patience": 1},
    "patience 1, word2vec 10 passes": lambda model: {
        "clf__patience": 1,
        **_word2vec(model, epochs=10),
    },
    "patience 1, word2vec 5 passes": lambda model: {
        "clf__patience": 1,
        **_word2vec(model, epochs=5),
    },
    "patience 1, batch 64": lambda model: {
        "clf__patience": 1,
        "clf__batch_size": 64,
        "clf__lr": 1e-3 * 2**0.5,
    },
    "patience 1, no weight average": lambda model: {"clf__patience": 1, "clf__ema_horizon": 0},
    "no NB columns": lambda model: {"clf__nb_unigram_weight": 0.0, "clf__nb_bigram_weight": 0.0},
}
SIZES = {
    "quick": {
        "train_limit": 800,
        "levers": ["baseline", "patience 1"],
        "models": ["lama"],
        "seeds": [0],
        "overrides": {"clf__max_epochs": 2},
    },
    "full": {
        "train_limit": None,
        "levers": list(LEVERS),
        "models": list(OURS),
        "seeds": [0],
        "overrides": {},
    },
}
DEFAULT_CORPORA = ["mr"]


def cell(corpus, model, lever, seed, threads, train_limit, overrides):
    """Fit ``model`` with ``lever`` on 80 % of the training split, score the rest (child)."""
    import time

    import numpy as np
    from sklearn.model_selection import train_test_split

    from ._data import head, load
    from ._models import make

    X, y, _, _ = load(corpus)
    X, y = head(X, y, train_limit)
    X_fit, X_sel, y_fit, y_sel = train_test_split(
        list(X), np.asarray(y), test_size=SELECTION_FRACTION, random_state=0, stratify=y
    )
    pipe = make(model, threads, seed=seed)
    pipe.set_params(**{**LEVERS[lever](model), **overrides})
    emb, clf = pipe.named_steps["emb"], pipe.named_steps["clf"]
    start = time.perf_counter()
    Z = emb.fit_transform(X_fit, y_fit)
    vectorizer_s = time.perf_counter() - start
    clf.fit(Z, y_fit)
    fit_s = time.perf_counter() - start
    history = clf.net_.history
    valid_loss = history[:, "valid_loss"] if clf.early_stopping else []
    return {
        "n_fit": len(X_fit),
        "n_selection": len(X_sel),
        "fit_s": fit_s,
        "vectorizer_s": vectorizer_s,
        "epochs": len(history),
        "best_epoch": int(np.argmin(valid_loss)) + 1 if len(valid_loss) else None,
        "train_loss": [float(v) for v in history[:, "train_loss"]],
        "valid_loss": [float(v) for v in valid_loss],
        "selection_accuracy": float(np.mean(pipe.predict(X_sel) == y_sel)),
    }


def run(cfg, threads, corpora, log):
    corpora = corpora or DEFAULT_CORPORA
    rows = []
    for corpus in corpora:
        for model in cfg["models"]:
            for lever in cfg["levers"]:
                for seed in cfg["seeds"]:
                    r = run_cell(
                        "benchmarks.speed:cell",
                        threads,
                        dict(
                            corpus=corpus,
                            model=model,
                            lever=lever,
                            seed=seed,
                            threads=threads,
                            train_limit=cfg["train_limit"],
                            overrides=cfg["overrides"],
                        ),
                    )
                    r.update(corpus=corpus_name(corpus), model=model, lever=lever, seed=seed)
                    log(
                        f"{r['corpus']:6s} {model:5s} {lever:32s} seed {seed} "
                        + (
                            f"sel acc {r['selection_accuracy']:.4f} fit {r['fit_s']:6.1f} s "
                            f"(vectors {r['vectorizer_s']:.1f} s) epochs {r['epochs']} "
                            f"best {r['best_epoch']}"
                            if "error" not in r
                            else f"FAILED {r['error']}"
                        )
                    )
                    rows.append(r)
    name = NAME if corpora == DEFAULT_CORPORA else NAME + "-" + "-".join(map(corpus_name, corpora))
    return {"name": name, "config": {**cfg, "corpora": corpora}, "results": rows}


def render(payload):
    """The report and plot of a :func:`run` result (also of one read back from JSON)."""
    cfg, rows = payload["config"], payload["results"]
    rep = Report(payload["name"], "Speed levers: fit time and accuracy on a selection split")
    rep.text(
        f"Each lever fitted on a stratified {1 - SELECTION_FRACTION:.0%} of the corpus's "
        f"training split and scored on the other {SELECTION_FRACTION:.0%}; the test split is "
        "never read. Fit: the whole pipeline (word vectors included). x: fit time over the "
        "baseline's of the same model and seed in this run; points: selection accuracy minus "
        f"the baseline's. Seeds: {cfg['seeds']}."
        + (
            ""
            if cfg["train_limit"] is None
            else f" Quick size: {cfg['train_limit']} training documents and "
            f"{cfg['overrides']}: these numbers check the suite, not the levers."
        )
    )
    ok = [r for r in rows if "error" not in r]
    for corpus in dict.fromkeys(r["corpus"] for r in rows):
        table = []
        for r in (r for r in ok if r["corpus"] == corpus):
            base = next(
                (
                    b
                    for b in ok
                    if (b["corpus"], b["model"], b["seed"], b["lever"])
                    == (corpus, r["model"], r["seed"], "baseline")
                ),
                None,
            )
            table.append(
                [
                    SHORT[r["model"]],
                    r["lever"],
                    str(r["seed"]),
                    f"{r['selection_accuracy']:.4f}",
                    f"{(r['selection_accuracy'] - base['selection_accuracy']) * 100:+.2f}"
                    if base
                    else "n/a",
                    sig(r["fit_s"]),
                    sig(r["fit_s"] / base["fit_s"]) if base else "n/a",
                    sig(r["vectorizer_s"]),
                    str(r["epochs"]),
                    str(r["best_epoch"]),
                ]
            )
        rep.text(f"**{corpus}** ({ok[0]['n_fit'] if ok else '?'} fitting documents)")
        rep.table(
            [
                "model",
                "lever",
                "seed",
                "selection acc",
                "points",
                "fit s",
                "x",
                "vectors s",
                "epochs",
                "best",
            ],
            table,
        )
    failed = [r for r in rows if "error" in r]
    if failed:
        rep.bullets(f"{r['model']} {r['lever']}: failed, {r['error'][:80]}" for r in failed)
    return rep, _plotter(ok)


def _plotter(rows):
    def plot(fig):
        ax = fig.add_subplot(1, 1, 1)
        for model in dict.fromkeys(r["model"] for r in rows):
            part = [r for r in rows if r["model"] == model]
            ax.scatter(
                [r["fit_s"] for r in part],
                [r["selection_accuracy"] for r in part],
                label=SHORT[model],
            )
            for r in part:
                ax.annotate(r["lever"], (r["fit_s"], r["selection_accuracy"]), fontsize=6)
        ax.set(xscale="log", xlabel="pipeline fit time (s)", ylabel="selection accuracy")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)

    return plot
