"""Prediction speed of the README's default pipelines from raw text, one torch thread.

For each corpus (R8 and MR by default) and model, in a process of its own
with one torch thread, one at a time: the default pipeline
(``sklearn_lama._main._pipelines.default_pipeline``) is fitted cheaply on
the training split (word2vec ``epochs=2``, one classifier epoch: the cost of
a prediction does not depend on how well the model is trained), then the
test split is predicted from raw text, the vectorizer's ``transform`` and the
classifier's ``predict`` timed separately (as the ``cost`` part's
``predict_timed``), each the median of ``--repeats`` runs after one warm-up.
Reported: documents/s of the transform, of the classifier and of the whole,
and tokens per document.

Run ``python -m benchmarks.predict_speed`` (about 3 minutes on an idle
machine); it writes ``benchmarks/results/predict-speed.{json,md}``. Time it
on an otherwise idle machine: the load average is recorded.
"""

from ._harness import experiment_parser, run_experiment
from ._report import sig

MODELS = ("lama", "fcsr", "duo")
CORPORA = ("r8", "mr")
SHORT = {"lama": "LAMA", "fcsr": "FCSR", "duo": "Duo"}
# The targets on R8, documents/s from raw text on one thread.
TARGETS = {"lama": 20_000, "fcsr": 5_000, "duo": 20_000}


def cheap_pipeline(model):
    """The default pipeline of ``model`` with word2vec ``epochs=2`` and one classifier epoch."""
    from sklearn_lama._main._pipelines import default_pipeline

    pipeline = default_pipeline(model, random_state=0, max_epochs=1)
    prefixes = ["emb__cbow__", "emb__skipgram__"] if model == "duo" else ["emb__"]
    return pipeline.set_params(**{p + "epochs": 2 for p in prefixes})


def cell(corpus, model, repeats):
    """Docs/s of the fitted pipeline's transform, classifier and whole on the test split."""
    from ._data import load
    from ._harness import median_time

    X, y, X_test, _ = load(corpus)
    pipeline = cheap_pipeline(model).fit(X, y)
    emb, clf = pipeline.named_steps["emb"], pipeline.named_steps["clf"]
    Z = emb.transform(X_test)
    transform_s = median_time(lambda: emb.transform(X_test), repeats)["median_s"]
    predict_s = median_time(lambda: clf.predict(Z), repeats)["median_s"]
    n = len(X_test)
    return {
        "n_test": n,
        "tokens_per_doc": float(Z.lengths.mean()),
        "transform_s": transform_s,
        "predict_s": predict_s,
        "transform_docs_per_s": n / transform_s,
        "classifier_docs_per_s": n / predict_s,
        "docs_per_s": n / (transform_s + predict_s),
    }


def markdown(meta, rows):
    from ._env import describe

    lines = ["# Prediction speed from raw text, one torch thread", ""]
    lines += [f"- {line}" for line in describe(meta)] + [""]
    lines += [
        "Default pipelines fitted cheaply (word2vec 2 passes, 1 classifier epoch), the test "
        "split predicted from raw text: the vectorizer's transform and the classifier's "
        "predict timed separately, each the median of "
        f"{rows[0]['repeats']} runs after a warm-up. Target: the issue's figure on R8.",
        "",
        "| corpus | model | tokens/doc | transform docs/s | classifier docs/s | total docs/s "
        "| R8 target |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        target = f"{TARGETS[r['model']]:,}" if r["corpus"] == "r8" else ""
        lines.append(
            f"| {r['corpus']} | {SHORT[r['model']]} | {r['tokens_per_doc']:.1f} | "
            f"{sig(r['transform_docs_per_s'])} | {sig(r['classifier_docs_per_s'])} | "
            f"{sig(r['docs_per_s'])} | {target} |"
        )
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = experiment_parser(__doc__)
    parser.set_defaults(jobs=1)
    parser.add_argument("--corpus", nargs="+", default=list(CORPORA))
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    cells = [
        {"corpus": corpus, "model": model, "repeats": args.repeats}
        for corpus in args.corpus
        for model in MODELS
    ]
    run_experiment(
        "predict-speed", "benchmarks.predict_speed:cell", cells, args.jobs, args.out_dir, markdown
    )


if __name__ == "__main__":
    main()
