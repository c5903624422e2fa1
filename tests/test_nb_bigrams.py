"""Naive Bayes features of token pairs (``nb_bigram_weight``)."""

import io

import joblib
import numpy as np
import pytest
import torch

from sklearn_lama import load_weights, save_weights
from sklearn_lama.classification._nb_features import ngram_log_count_ratios
from sklearn_lama.modules import PairFeatures, document_folds
from sklearn_lama.training._batching import SequenceBatches
from tests._tolerances import Exact, assert_identical

from .conftest import make_classifier, make_pipeline

# Vocabulary of 5 ids: 0 padding, 1 OOV, 2 "not", 3 "good", 4 "bad".
V = 5


def _batches(docs):
    lengths = [len(d) for d in docs]
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    return SequenceBatches(np.concatenate(docs).astype(np.int64), offsets)


def _folds(batches, folds):
    """The fold of every document of ``batches``."""
    ids = torch.from_numpy(np.asarray(batches.ids, np.int64))
    return document_folds(ids, torch.from_numpy(np.diff(batches.offsets)), folds).numpy()


def _key(first, second):
    return first * V + second


def test_bigram_ratios_match_the_formula():
    docs = [[2, 4], [2, 4, 3], [3, 2], [3, 2, 4]]
    y = np.array([1, 1, 0, 0])
    keys, ratios = ngram_log_count_ratios(
        _batches(docs), np.arange(4), y, np.ones(4), V, 2, folds=0
    )
    # (2, 4) is in documents 0, 1 (class 1) and 3 (class 0); (3, 2) in 2 and 3
    # (class 0); (4, 3), in one document only, is left out.
    assert keys.tolist() == [_key(2, 4), _key(3, 2)]
    positive = np.array([2, 0]) + 1.0
    negative = np.array([1, 2]) + 1.0
    expected = np.log(positive / positive.sum()) - np.log(negative / negative.sum())
    np.testing.assert_allclose(ratios[:, 0], expected / expected.std(), rtol=1e-6)


def test_no_pair_across_documents_and_rows_counted_with_their_weights():
    docs = [[2, 4], [2, 4, 3], [3, 2]]
    y = np.array([1, 1, 0])
    batches = _batches(docs)
    keys, _ = ngram_log_count_ratios(
        batches, np.arange(3), y, np.ones(3), V, 2, min_count=1, folds=0
    )
    # The last token of a document and the first of the next make no pair.
    assert _key(4, 2) not in keys and _key(3, 3) not in keys
    assert sorted(keys.tolist()) == [_key(2, 4), _key(3, 2), _key(4, 3)]
    weighted = ngram_log_count_ratios(
        batches, np.array([0, 2]), y[[0, 2]], [2.0, 1.0], V, 2, min_count=1, folds=3
    )
    repeated = ngram_log_count_ratios(
        batches, np.array([0, 0, 2]), y[[0, 0, 2]], np.ones(3), V, 2, min_count=1, folds=3
    )
    # Cross-fitted blocks included: a weight of 2 counts as the row twice in each.
    assert_identical(weighted[0], repeated[0], why=Exact.DISCRETE)
    np.testing.assert_allclose(weighted[1], repeated[1])


def test_cross_fitted_blocks_count_the_documents_outside_their_fold():
    rng = np.random.RandomState(0)
    docs = [rng.randint(2, V, size=rng.randint(2, 7)) for _ in range(40)]
    y = rng.randint(0, 2, size=40)
    batches = _batches(docs)
    training = np.arange(3, 40)  # documents 0-2 are held out
    keys, ratios = ngram_log_count_ratios(
        batches, training, y[training], np.ones(37), V, 2, min_count=1, folds=3
    )
    full = ngram_log_count_ratios(
        batches, training, y[training], np.ones(37), V, 2, min_count=1, folds=0
    )
    block = keys // V**2
    assert_identical(keys[block == 0], full[0], why=Exact.DISCRETE)
    assert_identical(ratios[block == 0], full[1], why=Exact.SAME_CALL)
    fold = _folds(batches, 3)
    assert len(np.unique(fold[training])) == 3
    for f in range(3):
        outside = training[fold[training] != f]
        unscaled = ngram_log_count_ratios(
            batches, outside, y[outside], np.ones(len(outside)), V, 2, min_count=1, folds=0
        )
        assert_identical(keys[block == f + 1] - (f + 1) * V**2, unscaled[0], why=Exact.DISCRETE)
        # Standardised by its own spread: nothing in it depends on fold f's labels.
        assert_identical(ratios[block == f + 1], unscaled[1], why=Exact.SAME_CALL)


def test_training_rows_read_the_block_of_their_fold():
    docs = [[2, 4, 3, 2], [3, 2], [4, 3, 3, 2, 4], [2, 2, 4], [4, 4]]
    pairs = sorted({_key(a, b) for d in docs for a, b in zip(d, d[1:])})
    # Block b gives every known pair the feature b + 1.
    keys = torch.tensor([b * V**2 + k for b in range(4) for k in pairs])
    values = torch.tensor([[b + 1.0] for b in range(4) for _ in pairs])
    features = PairFeatures(keys, values, V, folds=3)
    ids = torch.zeros(len(docs), 5, dtype=torch.int64)
    for row, doc in enumerate(docs):
        ids[row, : len(doc)] = torch.tensor(doc)
    fold = _folds(_batches(docs), 3)
    lengths = np.array([len(d) for d in docs])
    seen = features.train()(ids)[..., 0]
    for row in range(len(docs)):
        assert seen[row, 1 : lengths[row]].tolist() == [fold[row] + 2.0] * (lengths[row] - 1)
    assert set(features.eval()(ids)[..., 0].unique().tolist()) == {0.0, 1.0}


def test_pair_features_give_each_position_its_pair():
    keys = torch.tensor([_key(2, 4), _key(3, 2)])
    features = PairFeatures(keys, torch.tensor([[1.0], [2.0]]), V)
    ids = torch.tensor([[2, 4, 3, 2], [3, 2, 0, 0]])
    out = features(ids)
    # First position: no pair; (4, 3) unknown; padding pairs unknown.
    assert out[..., 0].tolist() == [[0, 1, 0, 2], [0, 2, 0, 0]]


def test_pair_features_take_the_saved_number_of_pairs():
    trained = PairFeatures(torch.tensor([7, 9, 12]), torch.randn(3, 2), V)
    rebuilt = PairFeatures(torch.zeros(0, dtype=torch.int64), torch.zeros(0, 2), V)
    rebuilt.load_state_dict(trained.state_dict())
    ids = torch.tensor([[1, 2, 2, 4]])
    assert_identical(rebuilt(ids), trained(ids), why=Exact.COPY)


def test_pair_columns_reach_the_core_and_survive_saving(kind, toy_corpus, tmp_path):
    texts, labels = toy_corpus
    pipe = make_pipeline(
        kind, max_epochs=1, nb_unigram_weight=0.0, nb_bigram_weight=2.0, nb_folds=3
    ).fit(texts, labels)
    network = pipe[-1].net_.module_
    blocks = network.pair_features.keys // pipe[-1].input_adapter_.vocabulary_size ** 2
    assert int(network.pair_features.folds) == 3 and set(blocks.tolist()) == {0, 1, 2, 3}
    inputs, _ = network.eval().embed(torch.tensor([3]), ids=torch.tensor([[2, 3, 4]]))
    widths = [t.shape[-1] for t in (inputs if isinstance(inputs, tuple) else (inputs,))]
    # Two classes: one column of pair ratios after every table's vectors.
    assert widths == [lookup.weight.shape[1] + 1 for lookup in network.lookups]
    expected = pipe.predict_proba(texts)
    buffer = io.BytesIO()
    joblib.dump(pipe, buffer)
    buffer.seek(0)
    assert_identical(joblib.load(buffer).predict_proba(texts), expected, why=Exact.COPY)
    save_weights(pipe, tmp_path / "model.pt")
    assert_identical(
        load_weights(tmp_path / "model.pt").predict_proba(texts), expected, why=Exact.COPY
    )


def test_off_or_without_tables_no_pair_features(toy_corpus):
    texts, labels = toy_corpus
    off = make_pipeline("duo", max_epochs=1, nb_bigram_weight=0.0).fit(texts, labels)
    assert off[-1].net_.module_.pair_features is None
    ids = np.random.RandomState(0).randint(1, 20, size=(40, 6))
    clf = make_classifier("lama", max_epochs=1, nb_bigram_weight=3.0).fit(ids, np.arange(40) % 2)
    assert clf.net_.module_.pair_features is None


@pytest.mark.parametrize(
    "param, value", [("nb_bigram_weight", -1.0), ("nb_folds", 1), ("nb_folds", -2)]
)
def test_bad_values_are_refused_naming_the_parameter(param, value, toy_corpus):
    texts, labels = toy_corpus
    with pytest.raises(ValueError, match=param):
        make_pipeline("fcsr", **{param: value}).fit(texts, labels)
