"""The Duo paper's embedding couples that can be reproduced offline, beside its figures.

Duo (Tables 2-4 of "Duo: A Multi-Embedding Transformer", whose MR figures
are Table 4) reads two embedding tables, a "couple". Offline, with the
``glove`` extra installed, three of its couples can be built: GloVe 6B 50d
alone (both roles read it, the table's diagonal), GloVe 50d + CBOW 50d
trained on the corpus, and corpus CBOW 50d alone. Each is the library's Duo
pipeline at its defaults for pretrained vectors (``default_pipeline("duo",
pretrained=...)``) with the couple's sources swapped in, ``random_state`` 0,
1, 2, fitted on the training split and scored once on the test split of MR
and R8. The paper reports MR per couple (mean of 10 runs) and R8 for its
best couple only (GloVe 50d + GloVe 300d: 97.02), which needs GloVe 300d.

Run ``python -m benchmarks.duo_couples``; it writes
``benchmarks/results/duo-couples.{json,md}``.
"""

import time

import numpy as np

from ._harness import experiment_parser, run_experiment

CORPORA = ("mr", "r8")
SEEDS = (0, 1, 2)
# Duo's Table 4 (MR); R8 has no per-couple figure.
PAPER = {
    "glove50": {"mr": 80.33},
    "glove50+cbow50": {"mr": 79.67},
    "cbow50": {"mr": 72.19},
}
LABELS = {
    "glove50": "GloVe 50d alone",
    "glove50+cbow50": "GloVe 50d + CBOW 50d",
    "cbow50": "CBOW 50d alone",
}


def couple_sources(couple, seed):
    """The two ``(name, Word2VecVectorizer)`` sources of ``couple``."""
    from sklearn_lama import Word2VecVectorizer
    from sklearn_lama._main._pipelines import GLOVE

    def glove():
        return Word2VecVectorizer(pretrained=GLOVE, random_state=seed)

    def cbow():
        return Word2VecVectorizer(sg=0, vector_size=50, random_state=seed)

    first, second = {"glove50": (glove, glove), "glove50+cbow50": (glove, cbow)}.get(
        couple, (cbow, cbow)
    )
    return [("pretrained", first()), ("corpus", second())]


def cell(corpus, couple, seed):
    """Test accuracy of Duo on ``couple`` (child process)."""
    from sklearn_lama._main._pipelines import GLOVE, default_pipeline

    from ._data import load

    X, y, X_test, y_test = load(corpus)
    pipe = default_pipeline("duo", random_state=seed, pretrained=GLOVE)
    pipe.set_params(emb__sources=couple_sources(couple, seed))
    start = time.perf_counter()
    pipe.fit(X, y)
    fit_s = time.perf_counter() - start
    return {
        "accuracy": float(np.mean(pipe.predict(X_test) == np.asarray(y_test))),
        "fit_s": fit_s,
        "epochs": pipe[-1].n_epochs_,
    }


def markdown(meta, rows):
    lines = [
        "# Duo's embedding couples reproducible offline, beside the paper's figures",
        "",
        f"- date: {meta['date']}; commit: {meta['git_commit']}; command: ``{meta['command']}``",
        f"- machine: {meta['machine']['cpu']}, {meta['machine']['cores']} cores; one torch "
        "thread per fit; 1-minute load average "
        f"{meta['loadavg_start']} at start, {meta['loadavg_end']} at end",
        "",
        __doc__.split("\n\n")[1].replace("\n", " "),
        "",
        "Test accuracy, mean ± std over seeds 0, 1, 2 (per seed in brackets); the paper's "
        "figure is a mean of 10 runs, in percent. Fit seconds: mean wall time on the shared "
        "machine.",
        "",
        "| couple | "
        + " | ".join(f"{c.upper()} | paper {c.upper()} | fit s" for c in CORPORA)
        + " |",
        "|---|" + "---:|---:|---:|" * len(CORPORA),
    ]
    for couple in LABELS:
        cells = []
        for corpus in CORPORA:
            part = [r for r in rows if r["couple"] == couple and r["corpus"] == corpus]
            acc = np.array([r["accuracy"] for r in part])
            cells += [
                (
                    f"{acc.mean():.4f} ± {acc.std(ddof=1):.4f} "
                    f"({', '.join(f'{a:.4f}' for a in acc)})"
                    if len(acc) > 1
                    else (f"{acc[0]:.4f}" if len(acc) else "not run")
                ),
                f"{PAPER[couple][corpus]:.2f}" if corpus in PAPER[couple] else "n/a",
                f"{np.mean([r['fit_s'] for r in part]):.1f}" if part else "",
            ]
        lines.append(f"| {LABELS[couple]} | " + " | ".join(cells) + " |")
    return "\n".join(lines + [""])


def main(argv=None):
    p = experiment_parser(__doc__)
    p.add_argument("--seeds", type=int, default=len(SEEDS), help="seeds 0.. (default 3)")
    args = p.parse_args(argv)
    kwargs = [
        {"corpus": corpus, "couple": couple, "seed": seed}
        for corpus in CORPORA
        for couple in LABELS
        for seed in SEEDS[: args.seeds]
    ]
    run_experiment(
        "duo-couples", "benchmarks.duo_couples:cell", kwargs, args.jobs, args.out_dir, markdown
    )


if __name__ == "__main__":
    main()
