"""Accuracy of the default pipelines against the tuned peers: mean ± std over 3 seeds.

For R8 and MR: the three pipelines of the README at their defaults
(``Word2VecVectorizer()``, which reads GloVe 6B 50d's 100,000 most frequent
words shipped with the package, then ``LAMAClassifier``, ``FCSRClassifier``
or ``DuoClassifier``), each with ``random_state`` = 0, 1, 2 for every step,
and the peers with the settings of the project's reference measurements:
TF-IDF (bigrams, sublinear tf, ``min_df=2``) + LogisticRegression(C=10), and
fastText (25 epochs, lr 0.5, word bigrams, lower-cased, shuffled lines) with
seeds 0, 1, 2. The same pipelines on word2vec trained on the corpus
(``-corpus``: ``Word2VecVectorizer(pretrained=None)``, and for Duo CBOW 50
coupled with skip-gram 100) and on the full 400,000-word GloVe table
(``-glove``: ``pretrained="glove-wiki-gigaword-50"``). Each fit runs in its own process with one
thread, two fits at a time (one per core); the text step's share of the fit
time (the embedding step of our pipelines) is timed apart. The
previous release's defaults (``PREVIOUS`` below), for the models whose
defaults changed, are fitted with seed 0 on each corpus, for the cost of the
new defaults.
"""

import numpy as np

from ._data import corpus_name
from ._harness import run_cells
from ._models import CORPUS_SUFFIX, GLOVE_SUFFIX, OURS_CORPUS, OURS_GLOVE, PEERS, glove_default
from ._models import OURS as DEFAULTS
from ._report import Report, sig

NAME = "accuracy"
OPTIONS = {
    "threads": "torch/BLAS threads of every fit",
    "corpus": "default: r8 and mr; other corpora write accuracy-<corpus>",
    "model": "among tfidf_lr, fasttext, nbsvm, lama, fcsr, duo, lama-corpus, fcsr-corpus, "
    "duo-corpus, "
    "lama-glove, fcsr-glove, duo-glove (default: the peers and the default pipelines)",
    "set": "a parameter of our classifiers in every pipeline, over the size's settings",
    "jobs": "fits at a time (default: the size's)",
}
SIZES = {
    "quick": {
        "train_limit": 600,
        "test_limit": 300,
        "seeds": [0],
        "previous": False,
        "overrides": {"max_epochs": 2},
    },
    "full": {
        "train_limit": None,
        "test_limit": None,
        "seeds": [0, 1, 2],
        "previous": True,
        "overrides": {},
        # Two fits at a time, one per core: fit times compare within the run.
        "jobs": 2,
    },
}
DEFAULT_CORPORA = ["r8", "mr"]
NBSVM_SETTINGS = (
    "NBSVM-bi with the settings of its paper (Wang & Manning, 2012): binarised word uni- and "
    "bigrams, Naive Bayes log-count ratios with alpha = 1, a linear SVM with C = 1, its weights "
    "interpolated with beta = 0.25."
)
NBSVM_CV_SETTINGS = (
    "NBSVM-bi (CV): the same model with its SVM's C (0.1, 1), the interpolation beta (0.25, 1) "
    "and the tokens (scikit-learn's words of two or more characters, or every word and each "
    "punctuation mark) chosen by 3-fold cross-validation on the training split (scikit-learn's "
    "GridSearchCV, folds shuffled with the seed), then refitted on all of it."
)
OURS = DEFAULTS + OURS_CORPUS + OURS_GLOVE
LABELS = {
    "tfidf_lr": "TF-IDF + LR (tuned)",
    "fasttext": "fastText (tuned)",
    "nbsvm": "NBSVM-bi",
    "nbsvm_cv": "NBSVM-bi (CV)",
    "lama": "LAMA",
    "fcsr": "FCSR",
    "duo": "Duo",
    "lama-corpus": "LAMA, corpus word2vec",
    "fcsr-corpus": "FCSR, corpus word2vec",
    "duo-corpus": "Duo, corpus CBOW + skip-gram",
    "lama-glove": "LAMA, GloVe 400k words",
    "fcsr-glove": "FCSR, GloVe 400k words",
    "duo-glove": "Duo, GloVe 400k words",
}
# What the names stood for before the shipped GloVe table became the default
# vectors (0.10.0, see benchmarks/_models.py), and the pipelines of that time.
LABELS_BEFORE_GLOVE_DEFAULT = {
    "lama": "LAMA, corpus word2vec",
    "fcsr": "FCSR, corpus word2vec",
    "duo": "Duo, corpus CBOW + skip-gram",
    "duo-glove": "Duo, GloVe 400k words + corpus skip-gram",
}
PIPELINES_BEFORE_GLOVE_DEFAULT = (
    "For R8 and MR: the three pipelines of the README at the defaults of their release "
    "(``Word2VecVectorizer → LAMAClassifier``, ``Word2VecVectorizer → FCSRClassifier``, "
    "``MetaEmbeddingTransformer(CBOW 50 + skip-gram 100) → DuoClassifier``, word2vec trained "
    "on the corpus), each with ``random_state`` = 0, 1, 2 for every step, and the peers with "
    "the settings of the project's reference measurements: TF-IDF (bigrams, sublinear tf, "
    "``min_df=2``) + LogisticRegression(C=10), and fastText (25 epochs, lr 0.5, word bigrams, "
    "lower-cased, shuffled lines) with seeds 0, 1, 2. The same pipelines on pretrained vectors "
    '(``-glove``): ``Word2VecVectorizer(pretrained="glove-wiki-gigaword-50")`` (the full '
    "GloVe 6B 50d) in place of corpus word2vec, and for Duo GloVe coupled with a "
    "corpus-trained skip-gram 100 table. Each fit runs in its own process with one thread, two "
    "fits at a time (one per core). The previous release's defaults, for the models whose "
    "defaults changed, are fitted with seed 0 on each corpus, for the cost of the new defaults."
)
# The defaults of the previous release (0.8.0) where they differ from
# today's, as step parameters of the default pipelines: the baseline of the
# speed comparison. A model whose defaults did not change has no entry.
PREVIOUS = {}


def _settings(params):
    """``params`` of a cross-validated NBSVM in words: ``C=1, beta=0.25, words``."""
    from ._baselines import WORDS

    tokens = "words" if params["token_pattern"] == WORDS else "words and marks"
    return f"C={params['C']:g}, beta={params['beta']:g}, {tokens}"


def make(model, seed, overrides=None, previous=False):
    """The default pipeline ``model`` seeded with ``seed`` (a peer: its tuned settings)."""
    from ._models import make as make_model

    pipeline = make_model(model, seed=seed)
    if model in PEERS:
        return pipeline
    params = {
        **(PREVIOUS.get(model, {}) if previous else {}),
        **{f"clf__{k}": v for k, v in (overrides or {}).items()},
    }
    return pipeline.set_params(**params)


def cell(corpus, model, seed, train_limit, test_limit, overrides, previous):
    """Fit one pipeline on ``corpus`` and score it on the test split (child process)."""
    import time

    from ._data import head, load

    X, y, X_test, y_test = load(corpus)
    X, y = head(X, y, train_limit)
    X_test, y_test = head(X_test, y_test, test_limit)
    estimator = make(model, seed, overrides, previous)
    start = time.perf_counter()
    embedding_s = None
    if hasattr(estimator, "steps"):
        # What Pipeline.fit does, with the embedding step timed apart.
        features = estimator[:-1].fit_transform(X, y)
        embedding_s = time.perf_counter() - start
        estimator[-1].fit(features, y)
    else:
        estimator.fit(X, y)
    fit_s = time.perf_counter() - start
    accuracy = float(np.mean(estimator.predict(X_test) == np.asarray(y_test)))
    clf = estimator[-1] if hasattr(estimator, "steps") else estimator
    return {
        "n_train": len(X),
        "n_test": len(X_test),
        "accuracy": accuracy,
        "fit_s": fit_s,
        "embedding_s": embedding_s,
        "epochs": getattr(clf, "n_epochs_", None),
        # What a cross-validated peer chose on the training split.
        "chosen": getattr(clf, "best_params_", None),
    }


def run(cfg, threads, corpora, log):
    corpora = corpora or DEFAULT_CORPORA
    models = cfg.get("models", PEERS + DEFAULTS)
    cells = []
    for corpus in corpora:
        jobs = [(m, s, False) for m in models for s in cfg["seeds"]]
        if cfg["previous"]:
            jobs += [(m, 0, True) for m in OURS if m in models and PREVIOUS.get(m)]
        cells += [
            dict(
                corpus=corpus,
                model=model,
                seed=seed,
                train_limit=cfg["train_limit"],
                test_limit=cfg["test_limit"],
                overrides=cfg["overrides"],
                previous=previous,
            )
            for model, seed, previous in jobs
        ]

    def done(kwargs, r):
        log(
            f"{corpus_name(kwargs['corpus']):4s} {kwargs['model']:8s} seed {kwargs['seed']}"
            f"{' (previous defaults)' if kwargs['previous'] else ''}: "
            + (
                f"acc {r['accuracy']:.4f} fit {r['fit_s']:.1f} s"
                if "error" not in r
                else f"FAILED {r['error']}"
            )
        )

    rows = run_cells("benchmarks.accuracy:cell", threads, cells, cfg.get("jobs", 1), done)
    for kwargs, r in zip(cells, rows):
        r.update({k: kwargs[k] for k in ("model", "seed", "previous")})
        r.update(corpus=corpus_name(kwargs["corpus"]))
    # A run on other corpora than the default ones, or of the peers alone, does not
    # overwrite the results of the default run.
    others = [] if corpora == DEFAULT_CORPORA else [corpus_name(c) for c in corpora]
    if set(models) <= set(PEERS):
        others.append("peers")
    name = "-".join([NAME, *others])
    return {
        "name": name,
        "config": {**cfg, "corpora": corpora, "previous_defaults": PREVIOUS},
        "results": rows,
    }


def _summary(rows, corpus, model, previous=False):
    part = [
        r
        for r in rows
        if r["corpus"] == corpus
        and r["model"] == model
        and r["previous"] == previous
        and "error" not in r
    ]
    if not part:
        return None
    acc = np.array([r["accuracy"] for r in part])
    fit = np.array([r["fit_s"] for r in part])
    embedding = [r["embedding_s"] for r in part if r.get("embedding_s") is not None]
    return {
        "embedding_s": np.mean(embedding) if embedding else None,
        "mean": acc.mean(),
        # The binomial standard error of one accuracy on this test split.
        "test_se": float(np.sqrt(acc.mean() * (1 - acc.mean()) / part[0]["n_test"])),
        "std": acc.std(ddof=1) if len(acc) > 1 else 0.0,
        "n": len(acc),
        "fit_s": fit.mean(),
        "values": acc,
    }


def render(payload):
    """The report and plot of a :func:`run` result (also of one read back from JSON).

    A result of a release before the shipped GloVe table became the default
    names its pipelines as they stood then (``payload["meta"]``'s version).
    """
    cfg, rows = payload["config"], payload["results"]
    now = glove_default(payload.get("meta"))
    labels = LABELS if now else {**LABELS, **LABELS_BEFORE_GLOVE_DEFAULT}
    # The pipeline each fit time is set against: the same model on corpus word2vec.
    twins = (
        {m: m + CORPUS_SUFFIX for m in DEFAULTS}
        if now
        else {m + GLOVE_SUFFIX: m for m in DEFAULTS}
    )
    rep = Report(payload["name"], "Accuracy of the default pipelines against the tuned peers")
    rep.text(
        __doc__.split("\n\n", 1)[1].replace("\n", " ") if now else PIPELINES_BEFORE_GLOVE_DEFAULT
    )
    if any(r["model"] == "nbsvm" for r in payload["results"]):
        rep.text(NBSVM_SETTINGS)
    chosen = [r for r in payload["results"] if r["model"] == "nbsvm_cv" and r.get("chosen")]
    if chosen:
        rep.text(NBSVM_CV_SETTINGS)
        rep.table(
            ["corpus", "seed", "chosen by 3-fold CV on the training split"],
            [[r["corpus"], r["seed"], _settings(r["chosen"])] for r in chosen],
        )
    if cfg.get("note"):
        rep.text(cfg["note"])
    if cfg["train_limit"] is not None:
        rep.text(
            f"Quick size: at most {cfg['train_limit']} training and {cfg['test_limit']} test "
            f"documents, our classifiers with {cfg['overrides']}: these numbers check the suite, "
            "not the models."
        )
    for corpus in dict.fromkeys(r["corpus"] for r in rows):
        best_peer = max((_summary(rows, corpus, m) or {"mean": 0.0})["mean"] for m in PEERS)
        table = []
        for model in PEERS + OURS:
            s = _summary(rows, corpus, model)
            if s is None:
                if any(r["corpus"] == corpus and r["model"] == model for r in rows):
                    table.append([labels[model], "not measured"] + [""] * 8)
                continue
            corpus_vectors = _summary(rows, corpus, twins[model]) if model in twins else None
            previous = _summary(rows, corpus, model, previous=True) if model in OURS else None
            table.append(
                [
                    labels[model],
                    f"{s['mean']:.4f} ± {s['std']:.4f}",
                    ", ".join(f"{v:.4f}" for v in s["values"]),
                    f"{s['test_se']:.4f}",
                    f"{(s['mean'] - best_peer) * 100:+.2f}" if model in OURS else "",
                    sig(s["fit_s"]),
                    (
                        f"{sig(s['embedding_s'])} ({s['embedding_s'] / s['fit_s']:.0%})"
                        if s["embedding_s"] is not None
                        else ""
                    ),
                    sig(s["fit_s"] / corpus_vectors["fit_s"]) if corpus_vectors else "",
                    f"{previous['values'][0]:.4f}" if previous else "",
                    sig(s["fit_s"] / previous["fit_s"]) if previous else "",
                ]
            )
        rep.text(f"**{corpus}** (best peer: {best_peer:.4f})")
        rep.table(
            [
                "pipeline",
                "accuracy (mean ± std)",
                "per seed",
                "test SE",
                "vs best peer (points)",
                "fit s (mean)",
                "text step s (share)",
                "fit x corpus vectors",
                "previous defaults, seed 0",
                "fit x previous",
            ],
            table,
        )
    return rep, _plotter(rows, labels)


def _plotter(rows, labels):
    def plot(fig):
        corpora = list(dict.fromkeys(r["corpus"] for r in rows))
        for i, corpus in enumerate(corpora):
            ax = fig.add_subplot(1, len(corpora), i + 1)
            models = [m for m in PEERS + OURS if _summary(rows, corpus, m)]
            stats = [_summary(rows, corpus, m) for m in models]
            ax.bar(
                range(len(models)),
                [s["mean"] for s in stats],
                yerr=[s["std"] for s in stats],
                capsize=3,
                color=["#999999" if m in PEERS else "#1f77b4" for m in models],
            )
            peers = [s["mean"] for m, s in zip(models, stats) if m in PEERS]
            if peers:  # a run of some models only (--model) may have no peer
                ax.axhline(max(peers), color="black", lw=0.8, ls="--", label="best peer")
            ax.set_xticks(
                range(len(models)),
                [labels[m] for m in models],
                rotation=30,
                fontsize=7,
                ha="right",
            )
            low = min(s["mean"] - s["std"] for s in stats)
            high = max(s["mean"] + s["std"] for s in stats)
            ax.set(
                title=corpus,
                ylabel="test accuracy",
                ylim=(max(0.0, low - 0.03), min(1.0, high + 0.01)),
            )
            ax.legend(fontsize=7)

    return plot
