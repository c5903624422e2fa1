"""The estimators the benchmarks compare, each with ``fit(texts, y)`` and ``predict(texts)``."""

import os
import tempfile

import numpy as np

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

    The peers use the settings of the project's reference measurements (its
    dataset notes): TF-IDF with bigrams, sublinear tf and ``min_df=2`` +
    LogisticRegression(C=10); fastText with 25 epochs, lr 0.5 and word
    bigrams. ``overrides`` go to our classifiers only; ``seed`` seeds every
    step.
    """
    if name == "tfidf_lr":
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.linear_model import LogisticRegression
        from sklearn.pipeline import make_pipeline

        return make_pipeline(
            TfidfVectorizer(sublinear_tf=True, ngram_range=(1, 2), min_df=2),
            LogisticRegression(C=10, max_iter=2000),
        )
    if name == "fasttext":
        return FastTextClassifier(thread=threads, seed=seed, epoch=25, lr=0.5, word_ngrams=2)
    from sklearn.pipeline import Pipeline

    import sklearn_lama

    if name == "duo":
        embedding = sklearn_lama.MetaEmbeddingTransformer(
            [
                ("cbow", sklearn_lama.Word2VecVectorizer(sg=0, vector_size=50, random_state=seed)),
                (
                    "skipgram",
                    sklearn_lama.Word2VecVectorizer(sg=1, vector_size=100, random_state=seed),
                ),
            ]
        )
    else:
        embedding = sklearn_lama.Word2VecVectorizer(random_state=seed)
    classifier = {
        "lama": sklearn_lama.LAMAClassifier,
        "fcsr": sklearn_lama.FCSRClassifier,
        "duo": sklearn_lama.DuoClassifier,
    }[name]
    return Pipeline([("emb", embedding), ("clf", classifier(random_state=seed, **overrides))])


def fasttext_status():
    """None when fastText imports, else why it does not."""
    import importlib

    try:
        importlib.import_module("fasttext")
    except ImportError as exc:
        return f"fastText is not installed ({exc}); pip install fasttext (or fasttext-wheel)"
    return None


class FastTextClassifier:
    """fastText's supervised classifier (100-d), seeded, on lower-cased text.

    fastText reads a training file, written here in a seeded random order;
    labels become ``__label__<index>``.
    Prediction goes through fastText's list form: its single-string form calls
    ``np.array(..., copy=False)``, which NumPy 2 refuses.
    """

    def __init__(self, thread=1, seed=0, epoch=5, lr=0.1, word_ngrams=1):
        self.thread = thread
        self.seed = seed
        self.epoch = epoch
        self.lr = lr
        self.word_ngrams = word_ngrams

    @staticmethod
    def _clean(text):
        # fastText reads one document per line.
        return " ".join(text.lower().split())

    def fit(self, texts, labels):
        import fasttext

        self.classes_, index = np.unique(np.asarray(labels, dtype=object), return_inverse=True)
        self.fallback_ = int(np.bincount(index).argmax())
        # fastText's SGD reads the file in order: a corpus sorted by label (as
        # the shipped ones are) would leave it predicting the last class.
        order = np.random.default_rng(self.seed).permutation(len(index))
        fd, path = tempfile.mkstemp(suffix=".txt")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.writelines(f"__label__{index[i]} {self._clean(texts[i])}\n" for i in order)
            self.model_ = fasttext.train_supervised(
                path,
                epoch=self.epoch,
                lr=self.lr,
                wordNgrams=self.word_ngrams,
                dim=100,
                thread=self.thread,
                seed=self.seed,
                verbose=0,
            )
        finally:
            os.unlink(path)
        return self

    def predict(self, texts):
        predicted, _ = self.model_.predict([self._clean(t) for t in texts])
        # A document without a known word gets no label: predict the majority class.
        index = [int(p[0][len("__label__") :]) if p else self.fallback_ for p in predicted]
        return self.classes_[index]
