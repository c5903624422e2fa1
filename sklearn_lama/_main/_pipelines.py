"""The pipelines the main job compares: the library's defaults and the tuned peers.

The benchmarks build the same estimators from here, so that the figures the
main job prints and those on the results page come from one definition.
"""

import os
import tempfile

import numpy as np
from sklearn.pipeline import Pipeline

from ..classification import DuoClassifier, FCSRClassifier, LAMAClassifier
from ..text import MetaEmbeddingTransformer, Word2VecVectorizer
from ..text._pretrained import DEFAULT

__all__ = [
    "GLOVE",
    "MODELS",
    "FastTextClassifier",
    "default_pipeline",
    "fasttext_status",
    "pipeline_label",
    "tfidf_logistic_regression",
]

# model -> (label of its pipeline on corpus word2vec, classifier).
MODELS = {
    "lama": ("Word2Vec + LAMAClassifier", LAMAClassifier),
    "fcsr": ("Word2Vec + FCSRClassifier", FCSRClassifier),
    "duo": ("CBOW 50 + skip-gram 100 + DuoClassifier", DuoClassifier),
}


# The full GloVe 6B 50d table (the `glove` extra), one name away from the default.
GLOVE = "glove-wiki-gigaword-50"
# What the main job prints for the named tables.
_VECTOR_LABELS = {DEFAULT: "GloVe 50", GLOVE: "GloVe 50 (400k words)"}


def pipeline_label(model, pretrained=DEFAULT):
    """The name the main job prints for ``default_pipeline(model, pretrained=pretrained)``."""
    if pretrained is None:
        return MODELS[model][0]
    vectors = _VECTOR_LABELS.get(pretrained, str(pretrained))
    return f"{vectors} + {MODELS[model][1].__name__}"


def default_pipeline(model, random_state=0, verbose=0, pretrained=DEFAULT, **params):
    """The README's pipeline of ``model`` at its defaults.

    Parameters
    ----------
    model : {"lama", "fcsr", "duo"}
        The classifier. With pretrained vectors every model reads one table
        (``Word2VecVectorizer(pretrained=...)``; Duo gives it both roles).
        With corpus word2vec, LAMA and FCSR read one table and Duo two
        through a :class:`MetaEmbeddingTransformer`: CBOW 50 and skip-gram
        100 dimensions (source names ``"cbow"`` and ``"skipgram"``).
    random_state : int, default=0
        Seeds every step.
    verbose : int, default=0
        Passed to the embedding step and the classifier.
    pretrained : str or None, default="glove-6b-50d-100k"
        Vectors for ``Word2VecVectorizer(pretrained=...)``: by default the
        vectorizer's own (GloVe 6B 50d, shipped with the package), or e.g.
        :data:`GLOVE`; ``None`` trains word2vec on the corpus.
    **params
        Further classifier parameters.

    Returns
    -------
    pipeline : Pipeline
        Steps ``"emb"`` and ``"clf"``.
    """
    if model not in MODELS:
        raise ValueError(f"model must be one of {sorted(MODELS)}, got {model!r}.")
    seeded = {"random_state": random_state}
    if model == "duo" and pretrained is None:
        sources = [
            ("cbow", Word2VecVectorizer(pretrained=None, sg=0, vector_size=50, **seeded)),
            ("skipgram", Word2VecVectorizer(pretrained=None, sg=1, vector_size=100, **seeded)),
        ]
        embedding = MetaEmbeddingTransformer(sources, verbose=verbose)
    else:
        embedding = Word2VecVectorizer(pretrained=pretrained, verbose=verbose, **seeded)
    classifier = MODELS[model][1](random_state=random_state, verbose=verbose, **params)
    return Pipeline([("emb", embedding), ("clf", classifier)])


def tfidf_logistic_regression():
    """TF-IDF (word bigrams, sublinear tf, ``min_df=2``) + LogisticRegression(C=10).

    The tuned baseline of the project's reference measurements.
    """
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    return make_pipeline(
        TfidfVectorizer(sublinear_tf=True, ngram_range=(1, 2), min_df=2),
        LogisticRegression(C=10, max_iter=2000),
    )


def fasttext_status():
    """``None`` when fastText imports, else a sentence saying why it does not."""
    import importlib

    try:
        importlib.import_module("fasttext")
    except ImportError as exc:
        return f"fastText is not installed ({exc}); pip install fasttext (or fasttext-wheel)"
    return None


class FastTextClassifier:
    """fastText's supervised classifier (100-d), seeded, on lower-cased text.

    The tuned peer: 25 epochs, learning rate 0.5, word bigrams. fastText reads
    a training file, written here in a seeded random order (its SGD reads the
    file in order, and a corpus sorted by label would leave it predicting the
    last class); labels become ``__label__<index>``. Prediction goes through
    fastText's list form: its single-string form calls
    ``np.array(..., copy=False)``, which NumPy 2 refuses.
    """

    def __init__(self, thread=1, seed=0, epoch=25, lr=0.5, word_ngrams=2):
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

    def score(self, texts, labels):
        return float(np.mean(self.predict(texts) == np.asarray(labels, dtype=object)))
