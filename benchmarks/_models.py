"""The estimators the benchmarks compare, each with ``fit(texts, y)`` and ``predict(texts)``."""

OURS = ("lama", "fcsr", "duo")
PEERS = ("tfidf_lr", "fasttext")
SHORT = {
    "tfidf_lr": "TF-IDF+LR",
    "fasttext": "fastText",
    "lama": "LAMA",
    "fcsr": "FCSR",
    "duo": "Duo",
}
LABELS = {
    "tfidf_lr": "TF-IDF + LogisticRegression (tuned)",
    "fasttext": "fastText (tuned)",
    "lama": "Word2Vec + LAMAClassifier",
    "fcsr": "Word2Vec + FCSRClassifier",
    "duo": "CBOW 50 + skip-gram 100 + DuoClassifier",
}


def make(name, threads=1, seed=0, **overrides):
    """A fresh estimator ``name``: a tuned peer, or one of the README's pipelines at its defaults.

    The definitions are the main job's (``python -m sklearn_lama``): the peers
    use the settings of the project's reference measurements (its dataset
    notes). ``overrides`` go to our classifiers only; ``seed`` seeds every
    step.
    """
    from sklearn_lama._main._pipelines import (
        FastTextClassifier,
        default_pipeline,
        tfidf_logistic_regression,
    )

    if name == "tfidf_lr":
        return tfidf_logistic_regression()
    if name == "fasttext":
        return FastTextClassifier(thread=threads, seed=seed)
    return default_pipeline(name, random_state=seed, **overrides)


def fasttext_status():
    """None when fastText imports, else why it does not."""
    from sklearn_lama._main._pipelines import fasttext_status as status

    return status()
