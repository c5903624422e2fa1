import numpy as np
import pytest
import torch
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from sklearn_lama import LAMAClassifier, Word2VecVectorizer
from sklearn_lama.modules import BiGRUEncoder, LAMAAttention, LAMAModule
from tests._tolerances import Exact, assert_identical
from tests.conftest import probability_bound

SMALL = dict(n_heads=4, hidden_size=8, mlp_hidden=16, max_epochs=25, lr=0.01, random_state=0)


def _pipeline(**params):
    return Pipeline(
        [
            (
                "emb",
                Word2VecVectorizer(pretrained=None, vector_size=16, min_count=1, random_state=0),
            ),
            ("clf", LAMAClassifier(**{**SMALL, **params})),
        ]
    )


@pytest.fixture(scope="module")
def fitted(toy_corpus):
    texts, labels = toy_corpus
    return _pipeline().fit(texts, labels)


def test_attention_module_masks_padding_and_rows_sum_to_one():
    torch.manual_seed(0)
    attention = LAMAAttention(6, n_heads=3, rank=2)
    H = torch.randn(2, 5, 6)
    context = torch.randn(2, 6)
    mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 0, 0, 0]], dtype=torch.bool)
    A = attention(H, context, mask)
    assert A.shape == (2, 3, 5)
    torch.testing.assert_close(A.sum(-1), torch.ones(2, 3))
    assert torch.all(A[1, :, 2:] == 0)


def test_attention_weights_method(fitted, toy_corpus):
    texts, _ = toy_corpus
    seqs = fitted["emb"].transform(texts[:10])
    weights = fitted["clf"].attention_weights(seqs)
    assert len(weights) == 10
    for w, n in zip(weights, seqs.lengths):
        assert w.shape == (4, n)
        np.testing.assert_allclose(w.sum(1), 1.0, rtol=1e-5)


@pytest.mark.parametrize("encoder", ["bigru", "none"])
def test_prediction_independent_of_batch(toy_corpus, encoder):
    texts, labels = toy_corpus
    pipe = _pipeline(encoder=encoder, max_epochs=2).fit(texts, labels)
    short = "good movie"
    longer = [t + " " + t + " " + t for t in texts[:40]]
    alone = pipe.predict_proba([short])
    batched = pipe.predict_proba(longer[:20] + [short] + longer[20:])[20]
    bound = probability_bound("lama", pipe, [short])
    np.testing.assert_allclose(alone[0], batched, rtol=0, atol=bound)
    weights_alone = pipe["clf"].attention_weights(pipe["emb"].transform([short]))[0]
    weights_batched = pipe["clf"].attention_weights(pipe["emb"].transform(longer + [short]))[-1]
    np.testing.assert_allclose(weights_alone, weights_batched, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    "params",
    [
        {"encoder": "none"},
        {"context": "learned"},
        {"regularization": "positions"},
        {"regularization": "embeddings"},
        {"rank": 3},
        {"optimizer": "sgd", "lr": 0.05},
    ],
)
def test_variants_train(toy_corpus, params):
    texts, labels = toy_corpus
    settings = {"early_stopping": False, "lr": 0.05, "max_epochs": 40, **params}
    pipe = _pipeline(**settings).fit(texts, labels)
    assert pipe.score(texts, labels) > 0.8


def test_freeze_embeddings_keeps_table(toy_corpus):
    texts, labels = toy_corpus
    pipe = _pipeline(freeze_embeddings=True, max_epochs=2).fit(texts, labels)
    weight = pipe["clf"].net_.module_.lookups[0].weight.detach().numpy()
    table = pipe["emb"].embedding_
    # The word vectors alone: the Naive Bayes ratios join them at lookup time.
    assert_identical(weight, table, why=Exact.COPY)


def test_disagreement_penalties_match_equations():
    module = LAMAModule(4, 2, n_heads=2, regularization="positions", reg_lambda=0.5)
    A = torch.tensor([[[1.0, 0.0, 0.0], [0.5, 0.5, 0.0]]])
    # AAᵀ − I = [[0, .5], [.5, -.5]] → squared Frobenius norm 0.75 (Eq. 19a)
    torch.testing.assert_close(module.penalty(A, None), torch.tensor(0.5 * 0.75))
    module.regularization = "embeddings"
    S = torch.tensor([[[1.0, 0.0], [0.0, 2.0]]])
    # cosines [[1, 0], [0, 1]] → mean 0.5 (Eq. 19b)
    torch.testing.assert_close(module.penalty(None, S), torch.tensor(0.5 * 0.5))


def test_penalty_enters_the_loss(toy_corpus):
    texts, labels = toy_corpus
    plain = _pipeline(max_epochs=1).fit(texts, labels)
    penalised = _pipeline(max_epochs=1, regularization="positions", reg_lambda=5.0).fit(
        texts, labels
    )
    assert (
        penalised["clf"].net_.history[-1, "train_loss"]
        > plain["clf"].net_.history[-1, "train_loss"]
    )


def test_grid_search_over_heads(toy_corpus):
    texts, labels = toy_corpus
    search = GridSearchCV(_pipeline(max_epochs=2), {"clf__n_heads": [1, 3]}, cv=2)
    search.fit(texts, labels)
    assert (
        search.best_estimator_["clf"].net_.module_.core.attention.n_heads
        == search.best_params_["clf__n_heads"]
    )


def test_early_stopping_restores_best_epoch(toy_corpus):
    texts, labels = toy_corpus
    pipe = _pipeline(max_epochs=60, patience=2, lr=0.5).fit(texts, labels)
    history = pipe["clf"].net_.history
    assert pipe["clf"].n_epochs_ < 60
    losses = history[:, "valid_loss"]
    assert np.argmin(losses) == len(losses) - 1 - 2  # stopped `patience` epochs later


@pytest.mark.parametrize(
    "params, match",
    [
        ({"n_heads": 0}, "n_heads"),
        ({"hidden_size": -1}, "hidden_size"),
        ({"context": "global"}, "context"),
        ({"encoder": "lstm"}, "encoder"),
        ({"regularization": "heads"}, "regularization"),
    ],
)
def test_invalid_hyperparameters(toy_corpus, params, match):
    texts, labels = toy_corpus
    seqs = Word2VecVectorizer(
        pretrained=None, vector_size=4, min_count=1, random_state=0
    ).fit_transform(texts)
    with pytest.raises(ValueError, match=match):
        LAMAClassifier(**params).fit(seqs, labels)


def _encoder_and_reference():
    torch.manual_seed(0)
    encoder = BiGRUEncoder(10, 6)
    reference = torch.nn.GRU(10, 6, batch_first=True, bidirectional=True)
    with torch.no_grad():
        for suffix, gru in (("", encoder.forward_gru), ("_reverse", encoder.backward_gru)):
            for name in ("weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0"):
                getattr(reference, name + suffix).copy_(getattr(gru, name))
    x = torch.randn(4, 9, 10)
    lengths = torch.tensor([9, 3, 5, 1])
    mask = torch.arange(9) < lengths[:, None]
    packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
    expected, _ = pad_packed_sequence(reference(packed)[0], batch_first=True, total_length=9)
    return encoder, reference, x, mask, expected


def test_bigru_encoder_equals_packed_bidirectional_gru():
    encoder, _, x, mask, expected = _encoder_and_reference()
    torch.testing.assert_close(encoder(x, mask)[mask], expected[mask])


def test_bigru_encoder_gradients_equal_the_two_directions():
    # The fused recurrence's block-diagonal weights pass each direction's gradient to
    # its own GRU's parameters, and nothing of the other's.
    encoder, reference, x, mask, expected = _encoder_and_reference()
    weights = torch.randn(expected.shape)
    (encoder(x, mask)[mask] * weights[mask]).sum().backward()
    (expected[mask] * weights[mask]).sum().backward()
    for suffix, gru in (("", encoder.forward_gru), ("_reverse", encoder.backward_gru)):
        for name, parameter in gru.named_parameters():
            torch.testing.assert_close(parameter.grad, getattr(reference, name + suffix).grad)
