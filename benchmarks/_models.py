"""The estimators the benchmarks compare, each as one object with ``fit(texts, y)`` / ``predict(texts)``."""

import os
import tempfile

import numpy as np

OURS = ("lama", "fcsr", "duo")
PEERS = ("tfidf_lr", "fasttext", "fasttext_25")
SHORT = {"tfidf_lr": "TF-IDF+LR", "fasttext": "fastText", "fasttext_25": "fastText-25", "lama": "LAMA",
         "fcsr": "FCSR", "duo": "Duo"}
LABELS = {
    "tfidf_lr": "TF-IDF + LogisticRegression",
    "fasttext": "fastText (supervised)",
    "fasttext_25": "fastText, 25 epochs",
    "lama": "Word2Vec + LAMAClassifier",
    "fcsr": "Word2Vec + FCSRClassifier",
    "duo": "Word2Vec + DuoClassifier",
}


def make(name, threads=1, **overrides):
    """A fresh estimator ``name`` at its defaults; ``overrides`` go to our classifiers only."""
    if name == "tfidf_lr":
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.linear_model import LogisticRegression
        from sklearn.pipeline import make_pipeline

        # The project's reference baseline (python -m sklearn_lama), untuned.
        return make_pipeline(TfidfVectorizer(), LogisticRegression(max_iter=1000))
    if name == "fasttext":
        return FastTextClassifier(thread=threads)
    if name == "fasttext_25":
        # The first change fastText's own tutorial suggests for small corpora.
        return FastTextClassifier(thread=threads, epoch=25)
    import sklearn_lama
    from sklearn.pipeline import Pipeline

    classifier = {"lama": sklearn_lama.LAMAClassifier, "fcsr": sklearn_lama.FCSRClassifier,
                  "duo": sklearn_lama.DuoClassifier}[name]
    return Pipeline([("emb", sklearn_lama.Word2VecVectorizer(random_state=0)),
                     ("clf", classifier(random_state=0, **overrides))])


def fasttext_status():
    """None when fastText imports, else why it does not."""
    import importlib

    try:
        importlib.import_module("fasttext")
    except ImportError as exc:
        return f"fastText is not installed ({exc}); pip install fasttext (or fasttext-wheel)"
    return None


class FastTextClassifier:
    """fastText's supervised classifier at its defaults (5 epochs, lr 0.1, 100-d, unigrams), seeded.

    fastText reads a training file, written here in a seeded random order;
    labels become ``__label__<index>``.
    Prediction goes through fastText's list form: its single-string form calls
    ``np.array(..., copy=False)``, which NumPy 2 refuses.
    """

    def __init__(self, thread=1, seed=0, epoch=5):
        self.thread = thread
        self.seed = seed
        self.epoch = epoch

    @staticmethod
    def _clean(text):
        # fastText reads one document per line.
        return " ".join(text.split())

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
            self.model_ = fasttext.train_supervised(path, epoch=self.epoch, thread=self.thread, seed=self.seed,
                                                      verbose=0)
        finally:
            os.unlink(path)
        return self

    def predict(self, texts):
        predicted, _ = self.model_.predict([self._clean(t) for t in texts])
        # A document without a known word gets no label: predict the majority class.
        index = [int(p[0][len("__label__"):]) if p else self.fallback_ for p in predicted]
        return self.classes_[index]
