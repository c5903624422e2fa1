"""Faithfulness of the explanations: the deletion test and its AOPC, per model and method.

For R8 and MR: each default pipeline of the README, fitted once on the whole
training split with ``random_state=0``, explains its predicted class on a
fixed random subset of the test documents (seed 0) by each method: its
attention, integrated gradients, occlusion, and random token orders as the
floor. For ``k = 1 ... 10`` the ``k`` top-ranked tokens of every document
are deleted (all of them from a shorter document) and the drop of the
predicted class's probability is measured
(``sklearn_lama.inspection.deletion_curve``); a method's AOPC (area over the
perturbation curve) is the mean drop over ``k = 1 ... 10`` and the
documents. The more faithful the ranking, the larger the AOPC: deleting the
tokens the prediction rested on should hurt it most. Each (corpus, model)
runs in its own process with one thread.
"""

import time

import numpy as np

from ._data import corpus_name
from ._harness import run_cell
from ._report import Report, sig

NAME = "explain"
OPTIONS = {
    "threads": "torch/BLAS threads of every cell",
    "corpus": "default: r8 and mr",
    "set": "a parameter of the classifiers, over the size's settings",
}
SIZES = {
    "quick": {
        "train_limit": 600,
        "test_limit": 40,
        "overrides": {"max_epochs": 2},
        "n_steps": 8,
        "random_draws": 1,
        "top_words_limit": 200,
    },
    "full": {
        "train_limit": None,
        "test_limit": 300,
        "overrides": {},
        "n_steps": None,
        "random_draws": 5,
        "top_words_limit": 1000,
    },
}
DEFAULT_CORPORA = ["r8", "mr"]
MODELS = ("lama", "fcsr", "duo")
LABELS = {"lama": "LAMA", "fcsr": "FCSR", "duo": "Duo"}
METHODS = ("attention", "integrated_gradients", "occlusion", "random")
METHOD_LABELS = {
    "attention": "attention",
    "integrated_gradients": "integrated gradients",
    "occlusion": "occlusion",
    "random": "random",
}
MAX_K = 10
# The default among methods of equal faithfulness: the cheapest on long documents.
PREFERRED = "integrated_gradients"
# MR's labels are digits (see sklearn_lama.datasets.load_mr).
CLASS_NAMES = {"mr": {"0": "0 (negative)", "1": "1 (positive)"}}
TOP_WORDS = 10


def _summary(values):
    """Mean and its standard error over documents."""
    values = np.asarray(values, dtype=np.float64)
    return float(values.mean()), float(values.std(ddof=1) / np.sqrt(len(values)))


def cell(
    corpus, model, train_limit, test_limit, overrides, n_steps, random_draws, top_words_limit
):
    """Fit one default pipeline, explain a test subset by every method, delete and measure."""
    from sklearn_lama.inspection import IntegratedGradients, deletion_curve, top_attended_words

    from ._data import head, load
    from ._models import make

    X, y, X_test, y_test = load(corpus)
    X, y = head(X, y, train_limit)
    pipeline = make(model, seed=0).set_params(**{f"clf__{k}": v for k, v in overrides.items()})
    start = time.perf_counter()
    pipeline.fit(X, y)
    fit_s = time.perf_counter() - start
    rng = np.random.RandomState(0)
    subset = np.sort(rng.choice(len(X_test), size=min(test_limit, len(X_test)), replace=False))
    documents = [X_test[i] for i in subset]
    lengths = pipeline[:-1].transform(documents).lengths
    methods = {
        "attention": "attention",
        "integrated_gradients": IntegratedGradients()
        if n_steps is None
        else IntegratedGradients(n_steps),
        "occlusion": "occlusion",
    }
    curves, seconds = {}, {}
    for name, method in methods.items():
        start = time.perf_counter()
        curves[name] = deletion_curve(pipeline, documents, method, max_k=MAX_K)
        seconds[name] = time.perf_counter() - start
    draws = [
        deletion_curve(pipeline, documents, "random", max_k=MAX_K, random_state=rng)
        for _ in range(random_draws)
    ]
    curves["random"] = np.mean(draws, axis=0)
    aopc = {name: curve.mean(axis=1) for name, curve in curves.items()}
    # The words per class as a user would list them: the whole test split (or
    # a stratified part), grouped by true label, by attention and by the method
    # that was most faithful here.
    best, runner_up = sorted(METHODS[:-1], key=lambda name: -aopc[name].mean())[:2]
    top_texts, top_labels = head(X_test, y_test, top_words_limit)
    top_words = {}
    for name in dict.fromkeys(("attention", best)):
        start = time.perf_counter()
        table = top_attended_words(pipeline, top_texts, top_labels, TOP_WORDS, method=name)
        top_words[name] = {
            "seconds": time.perf_counter() - start,
            "words": {str(c): [w for w in table[c] if isinstance(w, str)] for c in table.columns},
        }
    return {
        "n_train": len(X),
        "n_explained": len(documents),
        "n_top_words_documents": len(top_texts),
        "fit_s": fit_s,
        "accuracy_explained": float(np.mean(pipeline.predict(documents) == y_test[subset])),
        "tokens_median": float(np.median(lengths)),
        "shorter_than_max_k": float(np.mean(lengths <= MAX_K)),
        "deletion_s": seconds,
        "curves": {name: curve.mean(axis=0).tolist() for name, curve in curves.items()},
        "aopc": {name: _summary(values) for name, values in aopc.items()},
        "aopc_over_random": {
            name: _summary(values - aopc["random"])
            for name, values in aopc.items()
            if name != "random"
        },
        "best_over_runner_up": [best, runner_up, _summary(aopc[best] - aopc[runner_up])],
        "top_words": top_words,
    }


def run(cfg, threads, corpora, log):
    corpora = corpora or DEFAULT_CORPORA
    rows = []
    for corpus in corpora:
        for model in MODELS:
            r = run_cell(
                "benchmarks.explain:cell", threads, dict(corpus=corpus, model=model, **cfg)
            )
            r.update(corpus=corpus_name(corpus), model=model)
            if "error" in r:
                log(f"{r['corpus']:4s} {model:5s}: FAILED {r['error']}")
            else:
                log(
                    f"{r['corpus']:4s} {model:5s}: fit {r['fit_s']:.0f} s, AOPC "
                    + ", ".join(f"{m} {r['aopc'][m][0]:.4f}" for m in METHODS)
                )
            rows.append(r)
    return {"name": NAME, "config": {**cfg, "corpora": corpora, "max_k": MAX_K}, "results": rows}


def _difference_to(row, method):
    """``(mean, se)`` of the paired AOPC difference of ``row``'s best method over ``method``.

    ``None`` unless ``method`` is the runner-up of ``row``.
    """
    best, runner_up, difference = row["best_over_runner_up"]
    if best == method:
        return (0.0, 0.0)
    return tuple(difference) if runner_up == method else None


def best_methods(rows):
    """Per model, the most faithful method: the default explanation of its classifier.

    The method with the highest AOPC averaged over the corpora, unless
    integrated gradients is within two standard errors of it (the paired
    difference over the documents, averaged over the corpora): then
    integrated gradients, whose cost grows more slowly with the length of
    the documents than occlusion's. ``benchmarks/tests/test_explain.py``
    checks that the classifiers' defaults (``method=None``) agree.
    """
    best = {}
    for model in MODELS:
        measured = [r for r in rows if r["model"] == model and "error" not in r]
        if not measured:
            continue
        mean = {m: np.mean([r["aopc"][m][0] for r in measured]) for m in METHODS[:-1]}
        best[model] = max(mean, key=mean.get)
        differences = [_difference_to(r, PREFERRED) for r in measured]
        if None not in differences:
            gap = np.mean([d[0] for d in differences])
            error = np.sqrt(np.sum([d[1] ** 2 for d in differences])) / len(differences)
            if gap < 2 * error:
                best[model] = PREFERRED
    return best


def render(payload):
    cfg, rows = payload["config"], payload["results"]
    rep = Report(payload["name"], "Faithfulness of the explanations: deletion test and AOPC")
    if cfg.get("note"):
        rep.text(cfg["note"])
    rep.text(__doc__.split("\n\n", 1)[1].replace("\n", " "))
    steps = cfg["n_steps"] or "default"
    rep.text(
        f"Integrated gradients with n_steps={steps}; random: {cfg['random_draws']} random "
        "orders per document, their drops averaged. ± is the standard error over the "
        'documents; "over random" is the mean of each document\'s AOPC minus its random AOPC.'
    )
    if cfg["train_limit"] is not None:
        rep.text(
            f"Quick size: at most {cfg['train_limit']} training and {cfg['test_limit']} "
            f"explained documents, our classifiers with {cfg['overrides']}: these numbers "
            "check the suite, not the methods."
        )
    ok = [r for r in rows if "error" not in r]
    best = best_methods(ok)
    for corpus in dict.fromkeys(r["corpus"] for r in rows):
        part = [r for r in ok if r["corpus"] == corpus]
        if not part:
            continue
        first = part[0]
        rep.text(
            f"**{corpus}**: {first['n_explained']} test documents explained (a random subset "
            f"of the test split; median {first['tokens_median']:.0f} tokens, "
            f"{first['shorter_than_max_k'] * 100:.0f} % of them {MAX_K} tokens or fewer)"
        )
        table = []
        for r in part:
            for m in METHODS:
                mean, se = r["aopc"][m]
                over = r["aopc_over_random"].get(m)
                table.append(
                    [
                        LABELS[r["model"]] if m == METHODS[0] else "",
                        METHOD_LABELS[m] + (" (default)" if m == best[r["model"]] else ""),
                        f"{mean:.4f} ± {se:.4f}",
                        f"{over[0]:+.4f} ± {over[1]:.4f}" if over else "",
                        " ".join(f"{d:.3f}" for d in r["curves"][m][:: MAX_K // 5 or 1]),
                        sig(r["deletion_s"][m]) if m in r["deletion_s"] else "",
                    ]
                )
        rep.table(
            [
                "model",
                "method",
                "AOPC",
                "over random",
                f"drop at k = {', '.join(str(k) for k in range(1, MAX_K + 1, MAX_K // 5 or 1))}",
                "s (explain + delete)",
            ],
            table,
        )
    rep.bullets(
        f"{r['corpus']}, {LABELS[r['model']]}: {METHOD_LABELS[b]} over {METHOD_LABELS[u]} "
        f"by {d[0]:+.4f} ± {d[1]:.4f} AOPC (paired over the documents)"
        for r in ok
        for b, u, d in [r["best_over_runner_up"]]
    )
    if best:
        rep.text(
            "Most faithful method per model (highest AOPC, mean over the corpora; integrated "
            "gradients where it is within two standard errors of the best, paired over the "
            "documents, for its lower cost on long documents), the library's default "
            "explanation (``method=None``): "
            + ", ".join(f"{LABELS[m]}: {METHOD_LABELS[b]}" for m, b in best.items())
            + "."
        )
    for corpus in dict.fromkeys(r["corpus"] for r in ok):
        for r in [r for r in ok if r["corpus"] == corpus]:
            n = r["n_top_words_documents"]
            rep.text(
                f"Top {TOP_WORDS} words per class, {LABELS[r['model']]} on {corpus} "
                f"({n} test documents, grouped by true label; ``top_attended_words`` with "
                "attention and with the model's most faithful method here):"
            )
            names = CLASS_NAMES.get(corpus, {})
            rep.bullets(
                f"{names.get(label, label)} — {METHOD_LABELS[name]}: "
                f"{', '.join(words) or '(none)'}"
                for name, entry in r["top_words"].items()
                for label, words in entry["words"].items()
            )
    return rep, _plotter(ok)


def _plotter(rows):
    def plot(fig):
        corpora = list(dict.fromkeys(r["corpus"] for r in rows))
        k = np.arange(1, MAX_K + 1)
        for i, corpus in enumerate(corpora):
            part = [r for r in rows if r["corpus"] == corpus]
            for j, r in enumerate(part):
                ax = fig.add_subplot(len(corpora), len(part), i * len(part) + j + 1)
                for m in METHODS:
                    style = ":" if m == "random" else "-"
                    ax.plot(k, r["curves"][m], style, marker="o", ms=2.5, label=METHOD_LABELS[m])
                ax.set_title(f"{corpus}, {LABELS[r['model']]}", fontsize=9)
                if i == len(corpora) - 1:
                    ax.set_xlabel("tokens deleted (k)", fontsize=8)
                if j == 0:
                    ax.set_ylabel("drop of p(predicted)", fontsize=8)
                ax.tick_params(labelsize=7)
                ax.grid(alpha=0.3)
                if i == 0 and j == 0:
                    ax.legend(fontsize=7)

    return plot
