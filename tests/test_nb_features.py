"""Naive Bayes features (``nb_unigram_weight``) and embedding dropout of the classifiers."""

import numpy as np
import pytest
import torch
from skorch.dataset import ValidSplit

from sklearn_lama.classification import _nb_features as nb_module
from sklearn_lama.classification._nb_features import append_ratios, log_count_ratios, nb_columns
from sklearn_lama.modules import SequenceNetwork
from sklearn_lama.training._batching import SequenceBatches
from sklearn_lama.training._splits import HoldOut

from .conftest import make_classifier, make_pipeline


def _batches(docs):
    lengths = [len(d) for d in docs]
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    return SequenceBatches(np.concatenate(docs).astype(np.int64), offsets)


def test_log_count_ratios_match_the_formula():
    # Vocabulary: 0 padding, 1 OOV, 2 "good", 3 "bad", 4 "film".
    docs = [[2, 4, 2], [2], [3, 4], [3, 3, 4]]
    y = np.array([1, 1, 0, 0])
    ratios = log_count_ratios(_batches(docs), np.arange(4), y, np.ones(4), 5, 2)
    # Documents holding each token, the repeated "good" counted once.
    positive = np.array([0, 0, 2, 0, 1]) + 1.0
    negative = np.array([0, 0, 0, 2, 2]) + 1.0
    expected = np.log(positive / positive.sum()) - np.log(negative / negative.sum())
    expected[0] = 0
    expected /= expected[2:].std()
    assert ratios.shape == (5, 1)
    np.testing.assert_allclose(ratios[:, 0], expected, rtol=1e-6)
    assert ratios[2, 0] > 0 > ratios[3, 0]


def test_log_count_ratios_count_only_the_given_rows_with_their_weights():
    docs = [[2], [3], [2, 3], [4]]
    y = np.array([0, 1, 1, 0])
    batches = _batches(docs)
    # Row weights 2 and a repeated row are the same counts.
    weighted = log_count_ratios(batches, np.array([0, 1]), y[:2], np.array([2.0, 1.0]), 5, 2)
    repeated = log_count_ratios(batches, np.array([0, 0, 1]), y[[0, 0, 1]], np.ones(3), 5, 2)
    np.testing.assert_allclose(weighted, repeated)
    # Documents 2 and 3 left out: token 4 was never seen, in either class.
    unseen = log_count_ratios(batches, np.array([0, 1]), y[:2], np.ones(2), 5, 2)
    assert unseen[4, 0] == pytest.approx(unseen[1, 0])


def test_one_column_per_class_beyond_two():
    assert nb_columns(2) == 1 and nb_columns(5) == 5
    docs = [[2], [3], [4]]
    ratios = log_count_ratios(_batches(docs), np.arange(3), np.arange(3), np.ones(3), 5, 3)
    assert ratios.shape == (5, 3)
    assert np.argmax(ratios[2:5], axis=1).tolist() == [0, 1, 2]


def test_append_ratios_scales_to_each_table():
    rng = np.random.RandomState(0)
    tables = [rng.normal(0, 0.1, (6, 4)), rng.normal(0, 2.0, (6, 3))]
    ratios = rng.normal(size=(6, 1)).astype(np.float32)
    small, large = append_ratios(tables, ratios, 3.0)
    assert small.shape == (6, 5) and large.shape == (6, 4)
    np.testing.assert_array_equal(small[:, :4], tables[0].astype(np.float32))
    np.testing.assert_allclose(
        small[:, 4] / large[:, 3], tables[0][2:].std() / tables[1][2:].std(), rtol=1e-5
    )


def test_hold_out_draws_the_rows_skorch_would():
    y = np.repeat([0, 1, 2], [30, 50, 20])
    split = HoldOut(y, 0.1, seed=7)
    train, valid = ValidSplit(0.1, stratified=True, random_state=7)(np.zeros(len(y)), y)
    np.testing.assert_array_equal(split.train_rows, train.indices)
    np.testing.assert_array_equal(split.valid_rows, valid.indices)


@pytest.mark.parametrize("nb_unigram_weight, extra", [(0.0, 0), (3.0, 1)])
def test_tables_grow_by_the_ratio_columns(kind, toy_corpus, nb_unigram_weight, extra):
    texts, labels = toy_corpus
    pipe = make_pipeline(kind, max_epochs=1, nb_unigram_weight=nb_unigram_weight).fit(
        texts, labels
    )
    widths = [lookup.weight.shape[1] for lookup in pipe[-1].net_.module_.lookups]
    assert widths == [pipe[0].vector_size + extra]


@pytest.mark.parametrize(
    "counter, param",
    [("log_count_ratios", "nb_unigram_weight"), ("bigram_log_count_ratios", "nb_bigram_weight")],
)
def test_ratios_leave_out_the_held_out_documents(toy_corpus, monkeypatch, counter, param):
    texts, labels = toy_corpus
    seen = {}
    counted = getattr(nb_module, counter)

    def spy(batches, docs, y, weights, *args, **kwargs):
        seen["docs"] = np.asarray(docs)
        return counted(batches, docs, y, weights, *args, **kwargs)

    monkeypatch.setattr(nb_module, counter, spy)
    pipe = make_pipeline("fcsr", max_epochs=1, validation_fraction=0.25, **{param: 3.0})
    pipe.fit(texts, labels)
    n = len(texts)
    # Every document is counted at most once, and a quarter is held out.
    assert len(seen["docs"]) == n - int(np.ceil(0.25 * n))
    assert len(np.unique(seen["docs"])) == len(seen["docs"])


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
        assert torch.equal(network.embed(lengths, ids=ids)[0], table[[1, 2, 3]][None])
        network.train()
        dropped = network.embed(lengths, ids=ids)[0]
    assert (dropped == 0).any() and not torch.equal(dropped, table[[1, 2, 3]][None])


def test_the_ratio_block_weighs_the_same_for_any_number_of_classes():
    rng = np.random.RandomState(0)
    table = rng.normal(size=(50, 8))
    for k in (1, 4, 9):
        ratios = rng.normal(size=(50, k)).astype(np.float32)
        (appended,) = append_ratios([table], ratios / ratios[2:].std(axis=0), 2.0)
        block = appended[2:, 8:]
        expected = 4.0 * table[2:].std() ** 2
        assert np.sum(block.std(axis=0) ** 2) == pytest.approx(expected, rel=1e-4)
