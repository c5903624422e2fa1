"""FCSRClassifier-specific behaviour (shared behaviour: test_classifiers.py)."""

import numpy as np
import pytest
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline

from sklearn_lama import FCSRClassifier, Word2VecVectorizer


def _pipeline(**params):
    return Pipeline(
        [
            (
                "emb",
                Word2VecVectorizer(pretrained=None, vector_size=16, min_count=1, random_state=0),
            ),
            ("clf", FCSRClassifier(**{"max_epochs": 10, "random_state": 0, **params})),
        ]
    )


def test_grid_search_over_alpha_refits_with_best_alpha(toy_corpus):
    texts, labels = toy_corpus
    search = GridSearchCV(_pipeline(max_epochs=2), {"clf__alpha": [0.0, 0.2, 0.9]}, cv=2)
    search.fit(texts, labels)
    best = search.best_params_["clf__alpha"]
    cell = search.best_estimator_["clf"].net_.module_.core
    assert float(cell.alpha) == pytest.approx(best)


@pytest.mark.parametrize(
    "params",
    [{"pooling": "mean"}, {"learn_alpha": True}, {"hidden_size": 8}, {"lr_schedule": "paper"}],
)
def test_options_train(toy_corpus, params):
    texts, labels = toy_corpus
    pipe = _pipeline(early_stopping=False, **params).fit(texts, labels)
    assert pipe.score(texts, labels) > 0.9


def test_learned_alpha_moves_and_stays_in_range(toy_corpus):
    texts, labels = toy_corpus
    pipe = _pipeline(learn_alpha=True, alpha=0.5, early_stopping=False).fit(texts, labels)
    alpha = float(pipe["clf"].net_.module_.core.alpha.detach())
    assert 0 < alpha < 1 and alpha != pytest.approx(0.5)


def test_paper_schedule_decays_learning_rate(toy_corpus):
    texts, labels = toy_corpus
    pipe = _pipeline(lr_schedule="paper", max_epochs=4, early_stopping=False).fit(texts, labels)
    lrs = [group["lr"] for group in pipe["clf"].net_.optimizer_.param_groups]
    assert lrs[0] < 0.01 * 0.8**3


@pytest.mark.parametrize(
    "params, match",
    [
        ({"alpha": 1.0}, "alpha"),
        ({"alpha": -0.1}, "alpha"),
        ({"alpha": 0.0, "learn_alpha": True}, "alpha must be > 0"),
        ({"pooling": "max"}, "pooling"),
        ({"lr_schedule": "cosine"}, "lr_schedule"),
        ({"hidden_size": 0}, "hidden_size"),
    ],
)
def test_invalid_hyperparameters(toy_corpus, params, match):
    texts, labels = toy_corpus
    with pytest.raises(ValueError, match=match):
        _pipeline(**params).fit(texts, labels)


def test_probabilities_finite_for_long_document(toy_corpus):
    texts, labels = toy_corpus
    pipe = _pipeline(max_epochs=2).fit(texts, labels)
    proba = pipe.predict_proba([" ".join(texts) * 3])
    assert np.all(np.isfinite(proba))
