"""Naive Bayes features (``nb_unigram_weight``) and embedding dropout of the classifiers."""

import numpy as np
import pytest
import torch
from skorch.dataset import ValidSplit

from sklearn_lama.classification import _nb_features as nb_module
from sklearn_lama.classification._nb_features import (
    NaiveBayesColumns,
    nb_columns,
    ngram_log_count_ratios,
    ratio_scales,
)
from sklearn_lama.classification._targets import SingleLabel
from sklearn_lama.modules import SequenceNetwork
from sklearn_lama.training._batching import SequenceBatches, TrainingView
from sklearn_lama.training._splits import HoldOut
from tests._tolerances import Exact, assert_differ, assert_identical

from .conftest import make_classifier, make_pipeline


def _batches(docs):
    lengths = [len(d) for d in docs]
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    return SequenceBatches(np.concatenate(docs).astype(np.int64), offsets)


def _token_ratios(batches, docs, y, weights, vocabulary_size, n_classes, folds=0):
    return ngram_log_count_ratios(
        batches, docs, y, weights, vocabulary_size, n_classes, n=1, min_count=1, folds=folds
    )


def test_token_ratios_match_the_formula():
    # Vocabulary: 0 padding, 1 OOV, 2 "good", 3 "bad", 4 "film".
    docs = [[2, 4, 2], [2], [3, 4], [3, 3, 4]]
    y = np.array([1, 1, 0, 0])
    keys, ratios = _token_ratios(_batches(docs), np.arange(4), y, np.ones(4), 5, 2)
    # Documents holding each token, the repeated "good" counted once.
    positive = np.array([2, 0, 1]) + 1.0
    negative = np.array([0, 2, 2]) + 1.0
    expected = np.log(positive / positive.sum()) - np.log(negative / negative.sum())
    assert keys.tolist() == [2, 3, 4] and ratios.shape == (3, 1)
    np.testing.assert_allclose(ratios[:, 0], expected / expected.std(), rtol=1e-6)
    assert ratios[0, 0] > 0 > ratios[1, 0]


def test_token_ratios_count_only_the_given_rows_with_their_weights():
    docs = [[2], [3], [2, 3], [4]]
    y = np.array([0, 1, 1, 0])
    batches = _batches(docs)
    # Row weights 2 and a repeated row are the same counts.
    weighted = _token_ratios(batches, np.array([0, 1]), y[:2], np.array([2.0, 1.0]), 5, 2)
    repeated = _token_ratios(batches, np.array([0, 0, 1]), y[[0, 0, 1]], np.ones(3), 5, 2)
    assert_identical(weighted[0], repeated[0], why=Exact.DISCRETE)
    np.testing.assert_allclose(weighted[1], repeated[1])
    # Documents 2 and 3 left out: token 4 was never seen, and has no ratio.
    assert 4 not in weighted[0]


def test_one_column_per_class_beyond_two():
    assert nb_columns(2) == 1 and nb_columns(5) == 5
    docs = [[2], [3], [4]]
    keys, ratios = _token_ratios(_batches(docs), np.arange(3), np.arange(3), np.ones(3), 5, 3)
    assert ratios.shape == (3, 3)
    assert np.argmax(ratios, axis=1).tolist() == [0, 1, 2]


def test_ratio_scales_follow_each_tables_spread():
    rng = np.random.RandomState(0)
    tables = [rng.normal(0, 0.1, (6, 4)), rng.normal(0, 2.0, (6, 3))]
    small, large = ratio_scales(tables, 3.0, 1)
    assert small / large == pytest.approx(tables[0][2:].std() / tables[1][2:].std(), rel=1e-5)


@pytest.mark.parametrize("n_classes", [2, 3])
def test_a_training_documents_own_features_ignore_its_label(n_classes):
    """Flipping one training label leaves that document's training-time features unchanged."""
    rng = np.random.RandomState(n_classes)
    vocabulary_size, n = 12, 60
    docs = [rng.randint(2, vocabulary_size, size=rng.randint(3, 9)) for _ in range(n)]
    y = rng.randint(0, n_classes, size=n)
    table = rng.normal(size=(vocabulary_size, 4)).astype(np.float32)
    offsets = np.concatenate([[0], np.cumsum([len(d) for d in docs])])
    batches = SequenceBatches(np.concatenate(docs), offsets, tables=[table])

    def features(labels, document, training, folds):
        naive_bayes = NaiveBayesColumns(3.0, 1.0, folds, SingleLabel(np.arange(n_classes)))
        view = TrainingView(batches, np.arange(n), labels, np.ones(n))
        extra, _ = naive_bayes.features([table], vocabulary_size, view)
        network = SequenceNetwork(torch.nn.Identity(), tables=[torch.from_numpy(table)], **extra)
        ids = torch.from_numpy(docs[document].astype(np.int64))[None]
        with torch.no_grad():
            inputs, _ = network.train(training).embed(torch.tensor([ids.shape[1]]), ids=ids)
        # The token ratios, then the pair ratios, after the table's 4 columns.
        return inputs[..., 4:]

    for document in range(0, n, 7):
        flipped = y.copy()
        flipped[document] = (y[document] + 1) % n_classes
        # In training a document reads the block of the other folds' counts: the label
        # flipped is not among them, so the same code sums the same counts.
        assert_identical(
            features(y, document, True, 5),
            features(flipped, document, True, 5),
            why=Exact.SAME_TERMS,
        )
        # Predictions read the ratios of every training document, this one's label included.
        assert_differ(features(y, document, False, 5), features(flipped, document, False, 5))
        # Without cross-fitting, the label reaches the document's own features: the leak.
        assert_differ(features(y, document, True, 0), features(flipped, document, True, 0))


def test_hold_out_draws_the_rows_skorch_would():
    y = np.repeat([0, 1, 2], [30, 50, 20])
    split = HoldOut(y, 0.1, seed=7)
    train, valid = ValidSplit(0.1, stratified=True, random_state=7)(np.zeros(len(y)), y)
    assert_identical(split.train_rows, train.indices, why=Exact.DISCRETE)
    assert_identical(split.valid_rows, valid.indices, why=Exact.DISCRETE)


@pytest.mark.parametrize("nb_unigram_weight, extra", [(0.0, 0), (3.0, 1)])
def test_token_vectors_grow_by_the_ratio_columns(kind, toy_corpus, nb_unigram_weight, extra):
    texts, labels = toy_corpus
    pipe = make_pipeline(
        kind, max_epochs=1, nb_unigram_weight=nb_unigram_weight, nb_bigram_weight=0.0
    ).fit(texts, labels)
    network = pipe[-1].net_.module_
    assert [lookup.weight.shape[1] for lookup in network.lookups] == [pipe[0].vector_size]
    inputs, _ = network.eval().embed(torch.tensor([3]), ids=torch.tensor([[2, 3, 4]]))
    widths = [t.shape[-1] for t in (inputs if isinstance(inputs, tuple) else (inputs,))]
    assert widths == [pipe[0].vector_size + extra]


@pytest.mark.parametrize("param", ["nb_unigram_weight", "nb_bigram_weight"])
def test_ratios_leave_out_the_held_out_documents(toy_corpus, monkeypatch, param):
    texts, labels = toy_corpus
    seen = []
    counted = nb_module.ngram_log_count_ratios

    def spy(batches, docs, y, weights, *args, **kwargs):
        seen.append(np.asarray(docs))
        return counted(batches, docs, y, weights, *args, **kwargs)

    monkeypatch.setattr(nb_module, "ngram_log_count_ratios", spy)
    pipe = make_pipeline(
        "fcsr",
        max_epochs=1,
        validation_fraction=0.25,
        **{"nb_unigram_weight": 0.0, "nb_bigram_weight": 0.0, param: 3.0},
    )
    pipe.fit(texts, labels)
    n = len(texts)
    # Every document is counted at most once, and a quarter is held out.
    assert len(seen) == 1
    assert len(seen[0]) == n - int(np.ceil(0.25 * n))
    assert len(np.unique(seen[0])) == len(seen[0])


def test_dense_and_id_inputs_get_no_ratio_columns():
    rng = np.random.RandomState(0)
    ids = rng.randint(1, 20, size=(40, 6))
    y = np.arange(40) % 2
    clf = make_classifier("lama", max_epochs=1).fit(ids, y)
    assert clf.net_.module_.lookups[0].weight.shape[1] == clf.embedding_dim


def test_embedding_dropout_acts_only_while_training():
    table = torch.randn(10, 4)
    core = torch.nn.Identity()
    network = SequenceNetwork(core, tables=[table], embedding_dropout=0.5)
    ids, lengths = torch.tensor([[1, 2, 3]]), torch.tensor([3])
    with torch.no_grad():
        network.eval()
        assert_identical(
            network.embed(lengths, ids=ids)[0], table[[1, 2, 3]][None], why=Exact.COPY
        )
        network.train()
        dropped = network.embed(lengths, ids=ids)[0]
    assert (dropped == 0).any()
    assert_differ(dropped, table[[1, 2, 3]][None])


def test_the_ratio_block_weighs_the_same_for_any_number_of_classes():
    rng = np.random.RandomState(0)
    table = rng.normal(size=(50, 8))
    for k in (1, 4, 9):
        ratios = rng.normal(size=(50, k)).astype(np.float32)
        (scale,) = ratio_scales([table], 2.0, k)
        block = ratios / ratios.std(axis=0) * scale
        expected = 4.0 * table[2:].std() ** 2
        assert np.sum(block.std(axis=0) ** 2) == pytest.approx(expected, rel=1e-4)
