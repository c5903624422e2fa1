"""Helpers and fixtures shared by the test modules."""

import numpy as np
import pytest
from sklearn.pipeline import Pipeline
from skorch.callbacks import Callback

from sklearn_lama import DuoClassifier, FCSRClassifier, LAMAClassifier, Word2VecVectorizer
from sklearn_lama.training._batching import SequenceBatches
from tests._tolerances import estimator_decision_bound, estimator_probability_bound

# Small, fast settings per classifier, and one hyper-parameter to grid-search.
CLASSIFIERS = {
    "lama": (
        LAMAClassifier,
        dict(n_heads=4, hidden_size=8, mlp_hidden=16, lr=0.01),
        ("n_heads", [1, 3]),
    ),
    "fcsr": (FCSRClassifier, dict(), ("alpha", [0.1, 0.5])),
    "duo": (DuoClassifier, dict(d_ff=32), ("d_ff", [16, 32])),
}

# (longest reduction, chained reductions) of those small networks on the toy
# corpus, for the rounding bound of their probabilities: 100-wide embeddings
# and documents of at most 64 tokens (FOFE sums 2 x 64 words); LAMA's GRU
# chains a step per token before its six products, FCSR five reductions, Duo
# without encoder layers four.
ROUNDING = {"lama": (128, 64 + 6), "fcsr": (128, 5), "duo": (128, 4)}


def probability_bound(kind, estimator, X):
    """Rounding bound of ``estimator.predict_proba(X)`` between two float32 runs.

    ``estimator`` (or a pipeline ending in one) is a small network of
    ``kind``, documents at most 64 tokens; a calibrated one divides its
    logits by its temperatures, so its bound too.
    """
    n, depth = ROUNDING[kind]
    bound = estimator_probability_bound(estimator, X, n, depth)
    temperature = getattr(estimator, "steps", [(None, estimator)])[-1][1].temperature_
    return bound / min(1.0, np.min(temperature)) if temperature is not None else bound


def decision_bound(kind, estimator, X):
    """Rounding bound of ``estimator.decision_function(X)`` between two float32 runs.

    As :func:`probability_bound`, on the uncalibrated scores.
    """
    n, depth = ROUNDING[kind]
    return estimator_decision_bound(estimator, X, n, depth)


@pytest.fixture(params=sorted(CLASSIFIERS))
def kind(request):
    """Each classifier of the package in turn."""
    return request.param


def make_classifier(kind, **params):
    cls, small, _ = CLASSIFIERS[kind]
    return cls(**{**small, "max_epochs": 25, "random_state": 0, **params})


def make_pipeline(kind, **params):
    return Pipeline(
        [
            (
                "emb",
                Word2VecVectorizer(pretrained=None, vector_size=16, min_count=1, random_state=0),
            ),
            ("clf", make_classifier(kind, **params)),
        ]
    )


class InterruptAt(Callback):
    """Raises KeyboardInterrupt at the end of epoch ``epoch``, as a user's Ctrl-C would."""

    def __init__(self, epoch):
        self.epoch = epoch

    def on_epoch_end(self, net, **kwargs):
        if len(net.history) == self.epoch:
            raise KeyboardInterrupt


@pytest.fixture
def batch_shapes(monkeypatch):
    """(documents, padded length) of every batch the estimators build."""
    shapes = []
    gather = SequenceBatches.__getitems__

    def recording(self, index):
        inputs = gather(self, index)
        shapes.append(tuple(inputs["ids"].shape))
        return inputs

    monkeypatch.setattr(SequenceBatches, "__getitems__", recording)
    return shapes
