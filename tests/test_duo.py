"""DuoClassifier-specific behaviour (shared behaviour: test_classifiers.py)."""

import numpy as np
import pytest
import torch
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline

from sklearn_lama import (
    DuoClassifier,
    MetaEmbeddingTransformer,
    TokenSequences,
    Word2VecVectorizer,
)
from tests._tolerances import estimator_probability_bound


def _meta(n_sources=2):
    sources = [
        (
            "cbow",
            Word2VecVectorizer(pretrained=None, vector_size=8, sg=0, min_count=1, random_state=0),
        ),
        (
            "skipgram",
            Word2VecVectorizer(pretrained=None, vector_size=12, sg=1, min_count=1, random_state=0),
        ),
        ("small", Word2VecVectorizer(pretrained=None, vector_size=4, min_count=1, random_state=0)),
    ]
    return MetaEmbeddingTransformer(sources[:n_sources], min_count=1)


def _pipeline(**params):
    clf = DuoClassifier(**{"d_ff": 32, "max_epochs": 25, "random_state": 0, **params})
    return Pipeline([("emb", _meta()), ("clf", clf)])


def test_two_embeddings_feed_the_two_roles(toy_corpus):
    texts, labels = toy_corpus
    pipe = _pipeline().fit(texts, labels)
    assert pipe.score(texts, labels) > 0.9
    network = pipe["clf"].net_.module_
    assert [lookup.weight.shape[1] for lookup in network.lookups] == [8, 12]
    # Each source's width plus its Naive Bayes columns (two classes: token, then pair).
    streams, _ = network.eval().embed(torch.tensor([2]), ids=torch.tensor([[2, 3]]))
    assert [stream.shape[-1] for stream in streams] == [8 + 2, 12 + 2]


def test_grid_search_over_a_source_parameter(toy_corpus):
    texts, labels = toy_corpus
    search = GridSearchCV(_pipeline(max_epochs=2), {"emb__cbow__vector_size": [4, 8]}, cv=2).fit(
        texts, labels
    )
    best = search.best_params_["emb__cbow__vector_size"]
    # The source's width: the Naive Bayes columns join its vectors at lookup time.
    assert search.best_estimator_["clf"].net_.module_.lookups[0].weight.shape[1] == best


def test_one_table_is_used_in_both_roles(toy_corpus):
    texts, labels = toy_corpus
    pipe = Pipeline(
        [
            (
                "emb",
                Word2VecVectorizer(pretrained=None, vector_size=8, min_count=1, random_state=0),
            ),
            ("clf", DuoClassifier(d_ff=32, max_epochs=25, random_state=0)),
        ]
    ).fit(texts, labels)
    assert pipe.score(texts, labels) > 0.9
    assert len(pipe["clf"].net_.module_.lookups) == 1


def test_stacked_duo_transformer_layers(toy_corpus):
    texts, labels = toy_corpus
    pipe = _pipeline(n_layers=2, n_heads=4, early_stopping=False).fit(texts, labels)
    assert len(pipe["clf"].net_.module_.core.layers) == 2
    assert pipe.score(texts, labels) > 0.9
    short = "good movie"
    alone = pipe.predict_proba([short])[0]
    batched = pipe.predict_proba(texts[:10] + [short])[-1]
    # Two encoder layers (six reductions each) before the head's four.
    bound = estimator_probability_bound(pipe, [short], 128, 2 * 6 + 4)
    np.testing.assert_allclose(alone, batched, rtol=0, atol=bound)


def test_three_tables_are_refused(toy_corpus):
    texts, labels = toy_corpus
    seqs = _meta(3).fit_transform(texts)
    with pytest.raises(ValueError, match="one or two embedding tables, but X carries 3"):
        DuoClassifier().fit(seqs, labels)


def test_any_number_of_heads_fits_with_encoder_layers(toy_corpus):
    # The attention width is rounded up to a multiple of n_heads (DuoMultiHeadAttention).
    texts, labels = toy_corpus
    pipe = _pipeline(n_layers=1, n_heads=5).fit(texts, labels)
    assert pipe["clf"].net_.module_.core.layers[0].attention.n_heads == 5


def test_inconsistent_containers_are_refused():
    a = np.zeros((5, 3), np.float32)
    with pytest.raises(ValueError, match="share one vocabulary"):
        TokenSequences([2, 3], [0, 2], (a, np.zeros((4, 3), np.float32)), "v")
    with pytest.raises(ValueError, match=r"Token ids must lie in \[0, 5\)"):
        TokenSequences([2, 9], [0, 2], (a, a), "v")


@pytest.mark.parametrize(
    "params",
    [{"attention_softmax": False}, {"bias": False}, {"freeze_embeddings": True, "lr": 0.01}],
)
def test_options_train(toy_corpus, params):
    texts, labels = toy_corpus
    # Frozen tables leave only the head to train: it needs more epochs and, on
    # the toy corpus's 8- and 12-wide vectors, a larger step.
    pipe = _pipeline(early_stopping=False, max_epochs=50, **params).fit(texts, labels)
    assert pipe.score(texts, labels) > 0.85


@pytest.mark.parametrize(
    "params, match",
    [({"d_ff": 0}, "d_ff"), ({"n_layers": -1}, "n_layers"), ({"dropout": 1.0}, "dropout")],
)
def test_invalid_hyperparameters(toy_corpus, params, match):
    texts, labels = toy_corpus
    with pytest.raises(ValueError, match=match):
        _pipeline(**params).fit(texts, labels)
