"""The faster prediction paths give the predictions of the plain ones."""

import numpy as np
import pytest
import torch

from sklearn_lama import (
    DuoClassifier,
    FCSRClassifier,
    LAMAClassifier,
    MetaEmbeddingTransformer,
    Word2VecVectorizer,
)
from sklearn_lama.classification import _base
from sklearn_lama.modules import _duo_folded
from sklearn_lama.modules._duo_folded import FoldedDuo


def _three_classes(toy_corpus):
    texts, labels = toy_corpus
    labels = np.where(np.arange(len(labels)) % 3 == 0, "mid", labels)
    # An empty document, an unknown word only, and long documents.
    texts = list(texts) + ["", "zzz", " ".join(texts[:20]), " ".join(texts[20:60])]
    return texts, np.concatenate([labels, ["neg", "pos", "mid", "pos"]])


def _tables(texts, n_tables):
    sources = [
        ("a", Word2VecVectorizer(vector_size=6, sg=0, min_count=1, random_state=0)),
        ("b", Word2VecVectorizer(vector_size=10, min_count=1, random_state=0)),
    ]
    if n_tables == 1:
        return sources[1][1].fit(texts)
    return MetaEmbeddingTransformer(sources, min_count=1).fit(texts)


@pytest.mark.parametrize(
    "n_tables, params",
    [
        (2, {}),
        (1, {}),
        (2, {"positions": None, "bias": False}),
        (2, {"attention_softmax": False, "nb_unigram_weight": 0.0}),
        (1, {"nb_unigram_weight": 0.0, "nb_bigram_weight": 0.0, "position_dim": 3}),
    ],
)
def test_folded_duo_gives_the_network_logits(toy_corpus, monkeypatch, n_tables, params):
    texts, labels = _three_classes(toy_corpus)
    X = _tables(texts, n_tables).transform(texts)
    clf = DuoClassifier(d_ff=16, max_epochs=3, random_state=0, **params).fit(X, labels)
    assert FoldedDuo.of(clf.net_.module_) is not None
    folded = clf.decision_function(X), clf.predict_proba(X), clf.predict(X)
    monkeypatch.setattr(_duo_folded.FoldedDuo, "of", classmethod(lambda cls, network: None))
    plain = clf.decision_function(X), clf.predict_proba(X), clf.predict(X)
    np.testing.assert_allclose(folded[0], plain[0], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(folded[1], plain[1], rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(folded[2], plain[2])


@pytest.mark.parametrize("params", [{"n_layers": 1, "n_heads": 2}, {"positions": "add"}])
def test_folded_duo_leaves_what_it_does_not_cover(toy_corpus, params):
    texts, labels = toy_corpus
    X = _tables(texts, 2).transform(texts)
    clf = DuoClassifier(d_ff=16, max_epochs=1, random_state=0, **params).fit(X, labels)
    assert FoldedDuo.of(clf.net_.module_) is None
    assert clf.predict_proba(X).shape == (len(texts), 2)


@pytest.mark.parametrize("estimator", [FCSRClassifier, DuoClassifier])
def test_prediction_batches_keep_to_the_inference_tokens(toy_corpus, monkeypatch, estimator):
    texts, labels = _three_classes(toy_corpus)
    X = _tables(texts, 2 if estimator is DuoClassifier else 1).transform(texts)
    clf = estimator(max_epochs=2, random_state=0).fit(X, labels)
    reference = clf.predict_proba(X)
    budgets = []
    run_sorted = _base.run_sorted

    def recording(net, batches, compute, budget, **kwargs):
        budgets.append(budget.max_tokens)
        for rows, output in run_sorted(net, batches, compute, budget, **kwargs):
            # Every batch within the budget, or a document over it alone.
            width = max(int(batches.lengths[rows].max()), 1)
            assert len(rows) == 1 or len(rows) * width <= budget.max_tokens
            yield rows, output

    monkeypatch.setattr(estimator, "_inference_tokens", 64)
    monkeypatch.setattr(_base, "run_sorted", recording)
    shuffled = np.random.default_rng(0).permutation(len(texts))
    proba = clf.predict_proba(X[shuffled])
    assert budgets == [64]
    # Small batches of length-sorted documents: each document's row back in its place.
    np.testing.assert_allclose(proba, reference[shuffled], rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(proba.argmax(1), reference[shuffled].argmax(1))


def test_lama_predicts_in_batches_of_max_batch_tokens(toy_corpus):
    texts, labels = toy_corpus
    X = _tables(texts, 1).transform(texts)
    clf = LAMAClassifier(max_epochs=1, random_state=0, max_batch_tokens=999).fit(X, labels)
    assert clf._inference_budget(clf._batch_budget()).max_tokens == 999


def test_token_features_dense_table_and_block_search_match_the_full_search():
    from sklearn_lama.modules import NgramFeatures

    rng = np.random.default_rng(0)
    vocabulary, folds = 50, 3
    for n in (1, 2):
        codes = np.unique(rng.integers(0, (folds + 1) * vocabulary**n, 40))
        keys = torch.from_numpy(codes)
        values = torch.from_numpy(rng.normal(size=(len(codes), 2)).astype(np.float32))
        features = NgramFeatures(keys, values, vocabulary, n=n, folds=folds).eval()
        # The full search over every block's keys, as before block 0 was singled out.
        ids = torch.from_numpy(rng.integers(0, vocabulary, (5, 9)))
        grams = ids[:, : 9 - n + 1]
        if n == 2:
            grams = grams * vocabulary + ids[:, 1:]
        at = torch.searchsorted(keys, grams).clamp_(max=len(keys) - 1)
        expected = values[at] * (keys[at] == grams).unsqueeze(-1)
        expected = torch.nn.functional.pad(expected, (0, 0, n - 1, 0))
        assert torch.equal(features(ids), expected)
        # A batch too small to pay for the dense table searches; the same features.
        assert torch.equal(features(ids[:1, :1]), expected[:1, :1])
