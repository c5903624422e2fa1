"""Word2vec starting vectors of the translator's subword streams (``embedding_init``)."""

import time

import numpy as np
import pytest
import torch

import sklearn_lama.translation._translator as translator_module
from sklearn_lama import (
    DuoTranslator,
    MetaEmbeddingTransformer,
    Word2VecVectorizer,
)
from sklearn_lama.translation._subword_vectors import start_from_word2vec, word2vec_vectors
from tests._tolerances import Exact, assert_differ, assert_identical

from .test_translator import EN, FR, SMALL

SENTENCES = [np.array(s, dtype=np.int64) for s in ([4, 5, 6, 7], [5, 6, 8], [9, 4, 5], [])] * 5


def test_vectors_cover_exactly_the_ids_that_occur():
    ids, vectors = word2vec_vectors(SENTENCES, 8, sg=False, seed=0)
    assert sorted(ids.tolist()) == [4, 5, 6, 7, 8, 9]
    assert vectors.shape == (6, 8) and vectors.dtype == np.float32


def test_vectors_are_deterministic_and_cbow_differs_from_skip_gram():
    ids, cbow = word2vec_vectors(SENTENCES, 8, sg=False, seed=3)
    again_ids, again = word2vec_vectors(SENTENCES, 8, sg=False, seed=3)
    assert_identical(ids, again_ids, why=Exact.DISCRETE)
    assert_identical(cbow, again, why=Exact.SAME_CALL)
    sg_ids, sg = word2vec_vectors(SENTENCES, 8, sg=True, seed=3)
    assert_identical(ids, sg_ids, why=Exact.DISCRETE)
    assert not np.allclose(cbow, sg)


def test_no_tokens_no_vectors():
    ids, vectors = word2vec_vectors([np.zeros(0, np.int64)], 8, sg=False, seed=0)
    assert ids.shape == (0,) and vectors.shape == (0, 8)


def test_tables_start_from_rescaled_vectors_of_cbow_then_skip_gram():
    torch.manual_seed(0)
    tables = [torch.nn.Embedding(12, 8, padding_idx=0) for _ in range(2)]
    before = [t.weight.detach().clone() for t in tables]
    start_from_word2vec(tables, SENTENCES, std=0.25, seed=7)
    used = [4, 5, 6, 7, 8, 9]
    unused = [0, 1, 2, 3, 10, 11]
    for k, (table, old) in enumerate(zip(tables, before)):
        weight = table.weight.detach()
        assert_identical(weight[unused], old[unused], why=Exact.COPY)
        assert weight[used].numpy().std() == pytest.approx(0.25, rel=1e-5)
        ids, vectors = word2vec_vectors(SENTENCES, 8, sg=k == 1, seed=7 + k)
        expected = vectors * (0.25 / vectors.std())
        np.testing.assert_allclose(weight[torch.from_numpy(ids)].numpy(), expected, rtol=1e-6)


def _spy(monkeypatch, delay=0.0):
    calls = []

    def spy(embeddings, sequences, std, seed):
        calls.append((embeddings, len(sequences), std))
        time.sleep(delay)

    monkeypatch.setattr(translator_module, "start_from_word2vec", spy)
    return calls


@pytest.mark.parametrize(
    "init, meta, sides",
    [
        ("auto", True, ["tgt", "src"]),
        ("auto", False, []),
        ("word2vec", False, ["tgt", "src"]),
        ("random", True, []),
    ],
)
def test_which_tables_start_from_word2vec(init, meta, sides, monkeypatch):
    calls = _spy(monkeypatch)
    mt = DuoTranslator(
        **{**SMALL, "max_epochs": 1, "early_stopping": True, "validation_fraction": 0.35},
        embedding_init=init,
        meta_embeddings=meta,
    ).fit(EN * 2, FR * 2)
    module = mt.module_
    named = {id(module.tgt_embeddings): "tgt", id(module.src_embeddings): "src"}
    assert [named[id(c[0])] for c in calls] == sides
    # Only the training pairs, never the validation ones; a quarter of the random start's spread.
    assert all(n == 2 * len(EN) - int(np.ceil(0.35 * 2 * len(EN))) for _, n, _ in calls)
    assert all(std == pytest.approx(0.25 * SMALL["d_model"] ** -0.5) for *_, std in calls)


def test_source_from_a_meta_embedding_transformer_keeps_its_tables(monkeypatch):
    calls = _spy(monkeypatch)
    emb = MetaEmbeddingTransformer(
        [
            (
                "cbow",
                Word2VecVectorizer(pretrained=None, vector_size=8, min_count=1, random_state=0),
            ),
            (
                "sg",
                Word2VecVectorizer(
                    pretrained=None, vector_size=8, min_count=1, sg=1, random_state=0
                ),
            ),
        ],
        min_count=1,
    )
    X = emb.fit_transform(EN)
    mt = DuoTranslator(**{**SMALL, "max_epochs": 1}).fit(X, FR)
    assert [id(c[0]) for c in calls] == [id(mt.module_.tgt_embeddings)]


def test_word2vec_time_counts_in_the_budget(monkeypatch):
    _spy(monkeypatch, delay=0.5)
    mt = DuoTranslator(**SMALL, max_time=0.2).fit(EN, FR)
    # Out of time after the first batch, and the 0.5 s of starting vectors are in the record.
    assert len(mt.history_) == 1 and mt.history_[0]["train_batch_count"] == 1
    assert mt.history_[0]["seconds"] >= 0.5


def test_word2vec_start_changes_the_model_and_is_reproducible():
    params = {**SMALL, "max_epochs": 2}
    a = DuoTranslator(**params).fit(EN, FR)
    b = DuoTranslator(**params).fit(EN, FR)
    c = DuoTranslator(**params, embedding_init="random").fit(EN, FR)
    for name, value in a.module_.state_dict().items():
        assert_identical(value, b.module_.state_dict()[name], why=Exact.SAME_CALL)
    assert_differ(a.module_.tgt_embeddings[0].weight, c.module_.tgt_embeddings[0].weight)


def test_bad_embedding_init_is_refused_naming_the_parameter():
    with pytest.raises(ValueError, match="embedding_init"):
        DuoTranslator(**SMALL, embedding_init="glove").fit(EN, FR)
