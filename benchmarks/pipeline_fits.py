"""Fit the README pipelines on MR; print accuracy, fit time and a digest of the probabilities.

A before/after check for changes that must not change results: run it
against two checkouts in turn (``PYTHONPATH=<checkout> python -m
benchmarks.pipeline_fits``, A B A B ...) and compare the digests (equal:
the same probabilities to 6 decimals) and the times. Uses the public API
only, so it runs on any version of the package. ``--max-epochs`` bounds
each fit (3 by default).
"""

import argparse
import hashlib
import time

import numpy as np
from sklearn.pipeline import Pipeline

from sklearn_lama import (
    DuoClassifier,
    FCSRClassifier,
    LAMAClassifier,
    MetaEmbeddingTransformer,
    Word2VecVectorizer,
)
from sklearn_lama.datasets import load_mr

MODELS = {"lama": LAMAClassifier, "fcsr": FCSRClassifier, "duo": DuoClassifier}


def _pipeline(name, max_epochs):
    if name == "duo":
        embedding = MetaEmbeddingTransformer(
            [
                ("cbow", Word2VecVectorizer(sg=0, vector_size=50, random_state=0)),
                ("skipgram", Word2VecVectorizer(sg=1, vector_size=100, random_state=0)),
            ]
        )
    else:
        embedding = Word2VecVectorizer(random_state=0)
    return Pipeline(
        [("emb", embedding), ("clf", MODELS[name](random_state=0, max_epochs=max_epochs))]
    )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-epochs", type=int, default=3)
    args = parser.parse_args(argv)
    X, y = load_mr(return_X_y=True)
    X_test, y_test = load_mr(subset="test", return_X_y=True)
    for name in MODELS:
        pipe = _pipeline(name, args.max_epochs)
        start = time.perf_counter()
        pipe.fit(X, y)
        seconds = time.perf_counter() - start
        proba = pipe.predict_proba(X_test)
        accuracy = np.mean(pipe.classes_[proba.argmax(1)] == y_test)
        digest = hashlib.sha1(np.round(proba, 6).tobytes()).hexdigest()[:10]
        print(
            f"{name} accuracy={accuracy:.4f} fit={seconds:.1f}s probabilities={digest}", flush=True
        )


if __name__ == "__main__":
    main()
