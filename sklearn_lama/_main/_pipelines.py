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

__all__ = [
    "GLOVE",
    "MODELS",
    "FastTextClassifier",
    "default_pipeline",
    "fasttext_status",
    "pipeline_label",
    "tfidf_logistic_regression",
]

MODELS = {
    "lama": ("Word2Vec + LAMAClassifier", LAMAClassifier),
    "fcsr": ("Word2Vec + FCSRClassifier", FCSRClassifier),
    "duo": ("CBOW 50 + skip-gram 100 + DuoClassifier", DuoClassifier),
}


# The pretrained vectors the main job and the benchmarks use when installed.
GLOVE = "glove-wiki-gigaword-50"
# Duo's second table beside pretrained vectors: (label, Word2VecVectorizer parameters).
PRETRAINED_COUPLE = ("skip-gram 100", {"sg": 1, "vector_size": 100})


def pipeline_label(model, pretrained=None):
    """The name the main job prints for ``default_pipeline(model, pretrained=pretrained)``."""
    if pretrained is None:
        return MODELS[model][0]
    vectors = "GloVe 50" if pretrained == GLOVE else str(pretrained)
    if model == "duo":
        vectors += f" + {PRETRAINED_COUPLE[0]}"
    return f"{vectors} + {MODELS[model][1].__name__}"


def default_pipeline(model, random_state=0, verbose=0, pretrained=None, **params):
    """The README's pipeline of ``model`` at its defaults.

    Parameters
    ----------
    model : {"lama", "fcsr", "duo"}
        LAMA and FCSR read one word vector table; Duo reads two through a
        :class:`MetaEmbeddingTransformer`: CBOW 50 and skip-gram 100
        dimensions trained on the corpus, or, with ``pretrained``, the
        pretrained table and a corpus-trained one (source names ``"pretrained"``
        and ``"corpus"``).
    random_state : int, default=0
        Seeds every step.
    verbose : int, default=0
        Passed to the embedding step and the classifier.
    pretrained : str or None, default=None
        Vectors for ``Word2VecVectorizer(pretrained=...)``, e.g. :data:`GLOVE`;
        ``None`` trains word2vec on the corpus.
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
            ("cbow", Word2VecVectorizer(sg=0, vector_size=50, **seeded)),
            ("skipgram", Word2VecVectorizer(sg=1, vector_size=100, **seeded)),
        ]
    elif model == "duo":
        sources = [
            ("pretrained", Word2VecVectorizer(pretrained=pretrained, **seeded)),
            ("corpus", Word2VecVectorizer(**PRETRAINED_COUPLE[1], **seeded)),
        ]
    if model == "duo":
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
