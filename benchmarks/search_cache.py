"""What ``Pipeline(memory=...)`` saves in the README's search: the vectorizer fitted once per fold.

The README's tuned pipeline (``Word2VecVectorizer`` then ``LAMAClassifier``,
``random_state=0``) searched over ``clf__n_heads`` in ``[5, 15]`` with 2-fold
``GridSearchCV`` on MR's training split, as the README runs it, once without a
cache and once with ``memory`` set to a fresh folder; each in its own
process, one torch thread. Reported: the fits of the vectorizer (counted by
wrapping its ``fit``), wall and CPU seconds of the search, and the CV scores,
which must be the same.

``python -m benchmarks.search_cache [--quick]`` (``--quick``: every 12th document,
one epoch: checks the driver, not the saving).
"""

import argparse
import os
import time

from ._harness import run_experiment

NAME = "search-cache"
GRID = {"clf__n_heads": [5, 15]}
CV = 2


def cell(cached, stride, max_epochs):
    """Run the search with or without a cache; its cost and scores (child process)."""
    import tempfile

    from sklearn.model_selection import GridSearchCV
    from sklearn.pipeline import Pipeline

    from sklearn_lama import LAMAClassifier, Word2VecVectorizer
    from sklearn_lama.datasets import load_mr

    texts, labels = load_mr(subset="train", return_X_y=True)
    # Every stride-th document: the corpus is sorted by label.
    texts, labels = texts[::stride], labels[::stride]
    fits = []
    fit = Word2VecVectorizer.fit

    def counted(self, *args, **kwargs):
        fits.append(1)
        return fit(self, *args, **kwargs)

    Word2VecVectorizer.fit = counted
    extra = {} if max_epochs is None else {"max_epochs": max_epochs}
    with tempfile.TemporaryDirectory() as folder:
        pipe = Pipeline(
            [
                ("emb", Word2VecVectorizer(random_state=0)),
                ("clf", LAMAClassifier(random_state=0, **extra)),
            ],
            memory=folder if cached else None,
        )
        start, cpu = time.perf_counter(), time.process_time()
        search = GridSearchCV(pipe, GRID, cv=CV).fit(texts, labels)
        wall_s, cpu_s = time.perf_counter() - start, time.process_time() - cpu
    return {
        "n_train": len(texts),
        "vectorizer_fits": len(fits),
        "wall_s": wall_s,
        "cpu_s": cpu_s,
        "scores": search.cv_results_["mean_test_score"].tolist(),
        "best_params": search.best_params_,
    }


def markdown(meta, rows):
    plain, cached = (next(r for r in rows if r["cached"] is c) for c in (False, True))
    lines = [
        "# What Pipeline(memory=...) saves in the README's search",
        "",
        f"- date: {meta['date']}; commit: {meta['git_commit']}; "
        f"wall time of the run: {meta['wall_s']:.0f} s (``{meta['command']}``)",
        f"- machine: {meta['machine']['cpu']}, {meta['machine']['cores']} cores; "
        f"1-minute load average: {meta['loadavg_start']} at start, {meta['loadavg_end']} at end",
        "",
        __doc__.split("\n\n")[1].replace("\n", " "),
        "",
        f"{plain['n_train']} training documents, grid {GRID}, cv={CV}.",
        "",
        "| pipeline | vectorizer fits | search wall s | search CPU s | CV scores |",
        "|---|---:|---:|---:|---|",
    ]
    for label, r in (("no cache", plain), ("memory=folder", cached)):
        lines.append(
            f"| {label} | {r['vectorizer_fits']} | {r['wall_s']:.1f} | {r['cpu_s']:.1f} | "
            + ", ".join(f"{s:.4f}" for s in r["scores"])
            + " |"
        )
    same = plain["scores"] == cached["scores"]
    lines += [
        "",
        f"Saving: {plain['vectorizer_fits'] - cached['vectorizer_fits']} vectorizer fits, "
        f"{plain['cpu_s'] - cached['cpu_s']:.1f} CPU s "
        f"({1 - cached['cpu_s'] / plain['cpu_s']:.0%} of the search); "
        f"CV scores {'identical' if same else 'DIFFERENT'}.",
        "",
    ]
    return "\n".join(lines)


def main(argv=None):
    from ._env import ROOT

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--out-dir", default=os.path.join(ROOT, "benchmarks", "results"))
    args = p.parse_args(argv)
    stride, max_epochs = (12, 1) if args.quick else (1, None)
    kwargs = [dict(cached=c, stride=stride, max_epochs=max_epochs) for c in (False, True)]
    run_experiment(NAME, "benchmarks.search_cache:cell", kwargs, 1, args.out_dir, markdown)


if __name__ == "__main__":
    main()
