import subprocess
import sys

import joblib
import numpy as np
import pytest
import torch
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline

from sklearn_lama import LAMAClassifier, Word2VecVectorizer
from sklearn_lama.modules import LAMAAttention, LAMAModule

SMALL = dict(n_heads=4, hidden_size=8, mlp_hidden=16, max_epochs=25, lr=0.1, random_state=0)


def _pipeline(**params):
    return Pipeline([
        ("emb", Word2VecVectorizer(vector_size=16, min_count=1, random_state=0)),
        ("clf", LAMAClassifier(**{**SMALL, **params})),
    ])


@pytest.fixture(scope="module")
def fitted(toy_corpus):
    texts, labels = toy_corpus
    return _pipeline().fit(texts, labels)


def test_learns_and_returns_user_labels(fitted, toy_corpus):
    texts, labels = toy_corpus
    assert set(fitted.classes_) == {"neg", "pos"}
    assert fitted.score(texts, labels) > 0.9
    proba = fitted.predict_proba(texts)
    np.testing.assert_allclose(proba.sum(1), 1.0)
    assert fitted.predict(["great excellent love", "awful terrible hate"]).tolist() == ["pos", "neg"]


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
    np.testing.assert_allclose(alone[0], batched, rtol=1e-5, atol=1e-6)
    weights_alone = pipe["clf"].attention_weights(pipe["emb"].transform([short]))[0]
    weights_batched = pipe["clf"].attention_weights(pipe["emb"].transform(longer + [short]))[-1]
    np.testing.assert_allclose(weights_alone, weights_batched, rtol=1e-5, atol=1e-6)


def test_same_random_state_same_probabilities(toy_corpus):
    texts, labels = toy_corpus
    a = _pipeline(max_epochs=3).fit(texts, labels).predict_proba(texts)
    b = _pipeline(max_epochs=3).fit(texts, labels).predict_proba(texts)
    c = _pipeline(max_epochs=3, random_state=1).fit(texts, labels).predict_proba(texts)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


@pytest.mark.parametrize(
    "params",
    [
        {"encoder": "none"},
        {"context": "learned"},
        {"regularization": "positions"},
        {"regularization": "embeddings"},
        {"rank": 3},
        {"optimizer": "adam", "lr": 0.01},
    ],
)
def test_variants_train(toy_corpus, params):
    texts, labels = toy_corpus
    settings = {"early_stopping": False, "lr": 0.05, "max_epochs": 30, **params}
    pipe = _pipeline(**settings).fit(texts, labels)
    assert pipe.score(texts, labels) > 0.8


def test_freeze_embeddings_keeps_table(toy_corpus):
    texts, labels = toy_corpus
    pipe = _pipeline(freeze_embeddings=True, max_epochs=2).fit(texts, labels)
    weight = pipe["clf"].net_.module_.lookups[0].weight.detach().numpy()
    np.testing.assert_array_equal(weight, pipe["emb"].embedding_)


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
    penalised = _pipeline(max_epochs=1, regularization="positions", reg_lambda=5.0).fit(texts, labels)
    assert penalised["clf"].net_.history[-1, "train_loss"] > plain["clf"].net_.history[-1, "train_loss"]


def test_plain_array_inputs():
    rng = np.random.RandomState(0)
    ids = rng.randint(1, 20, size=(60, 7))
    y = (ids[:, 0] > 10).astype(int)
    ids[::3, 5:] = 0  # padding
    clf = LAMAClassifier(**SMALL).fit(ids, y)
    assert clf.n_features_in_ == 7 and clf.vocabulary_size_ == 20
    assert clf.predict(ids).shape == (60,)
    dense = rng.randn(60, 5, 3).astype(np.float32)
    y = (dense[:, 0, 0] > 0).astype(int)
    clf = LAMAClassifier(**SMALL).fit(dense, y)
    assert clf.predict_proba(dense).shape == (60, 2)
    with pytest.raises(ValueError, match="fitted with 3"):
        clf.predict(dense[:, :, :2])
    with pytest.raises(ValueError, match="fitted on a float array"):
        clf.predict(ids[:, :5])


def test_grid_search_over_heads(toy_corpus):
    texts, labels = toy_corpus
    search = GridSearchCV(_pipeline(max_epochs=2), {"clf__n_heads": [1, 3]}, cv=2)
    search.fit(texts, labels)
    assert search.best_params_["clf__n_heads"] in (1, 3)
    assert search.best_estimator_["clf"].net_.module_.core.attention.n_heads == \
        search.best_params_["clf__n_heads"]


def test_joblib_roundtrip_in_new_process(fitted, toy_corpus, tmp_path):
    texts, _ = toy_corpus
    path = tmp_path / "model.joblib"
    joblib.dump(fitted, path)
    np.save(tmp_path / "expected.npy", fitted.predict_proba(texts))
    (tmp_path / "texts.txt").write_text("\n".join(texts))
    code = (
        "import sys, joblib, numpy as np;"
        "pipe = joblib.load(sys.argv[1]);"
        "texts = open(sys.argv[2]).read().split('\\n');"
        "np.testing.assert_array_equal(pipe.predict_proba(texts), np.load(sys.argv[3]));"
        "print('same')"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(path), str(tmp_path / "texts.txt"),
         str(tmp_path / "expected.npy")],
        capture_output=True, text=True,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "same"


def test_verbose_prints_progress_per_epoch(toy_corpus, capsys):
    texts, labels = toy_corpus
    _pipeline(max_epochs=2, verbose=1).fit(texts, labels)
    printed = capsys.readouterr()
    assert "train_acc" in printed.out and "valid_acc" in printed.out
    assert "train_loss" in printed.out


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
        ({"lr": 0.0}, "lr"),
        ({"optimizer": "rmsprop"}, "optimizer"),
        ({"validation_fraction": 1.5}, "validation_fraction"),
        ({"device": "tpu"}, "device"),
    ],
)
def test_invalid_hyperparameters(toy_corpus, params, match):
    texts, labels = toy_corpus
    seqs = Word2VecVectorizer(vector_size=4, min_count=1, random_state=0).fit_transform(texts)
    with pytest.raises(ValueError, match=match):
        LAMAClassifier(**params).fit(seqs, labels)


@pytest.mark.skipif(torch.cuda.is_available(), reason="tests the error raised without CUDA")
def test_cuda_without_cuda_is_a_clear_error(toy_corpus):
    texts, labels = toy_corpus
    with pytest.raises(ValueError, match="device='cuda'.*CUDA is not available"):
        _pipeline(device="cuda").fit(texts, labels)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_fit_matches_cpu_predictions(toy_corpus):
    texts, labels = toy_corpus
    gpu = _pipeline(device="cuda").fit(texts, labels)
    assert next(gpu["clf"].net_.module_.parameters()).is_cuda
    assert gpu.score(texts, labels) > 0.9


def test_bad_input_is_refused_before_training(toy_corpus):
    texts, labels = toy_corpus
    pipe = _pipeline()
    with pytest.raises(TypeError, match="single string"):
        pipe.fit("just one document", ["pos"])
    with pytest.raises(TypeError, match="Document 3"):
        pipe.fit(texts[:3] + [None] + texts[4:], labels)
    with pytest.raises(ValueError, match="empty"):
        pipe.fit([], [])
    with pytest.raises(ValueError, match="min_count"):
        Pipeline([("emb", Word2VecVectorizer()), ("clf", LAMAClassifier())]).fit(
            ["a b", "c d"], [0, 1])
    with pytest.raises(ValueError, match="only one class"):
        pipe.fit(texts, ["pos"] * len(texts))
    with pytest.raises(ValueError, match="NaN"):
        LAMAClassifier().fit(np.array([[0.1, np.nan], [0.2, 0.3]]), [0, 1])
    with pytest.raises(ValueError, match="infinity"):
        LAMAClassifier().fit(np.array([[0.1, np.inf], [0.2, 0.3]]), [0, 1])
    with pytest.raises(ValueError, match="NaN"):
        pipe.fit(texts, np.where(labels == "pos", 1.0, np.nan))
    with pytest.raises(TypeError, match="not raw text"):
        LAMAClassifier().fit(texts, labels)
    with pytest.raises(ValueError, match="negative token ids"):
        LAMAClassifier().fit(np.array([[1, -2], [3, 4]]), [0, 1])


def test_container_from_other_vocabulary_is_refused(fitted, toy_corpus):
    texts, _ = toy_corpus
    other = Word2VecVectorizer(vector_size=16, min_count=1, lowercase=False, random_state=0)
    seqs = other.fit_transform([t.upper() for t in texts])
    with pytest.raises(ValueError, match="different vocabulary"):
        fitted["clf"].predict(seqs)


def test_empty_and_unknown_documents_still_get_predictions(fitted):
    proba = fitted.predict_proba(["", "zzz qqq", "!!!", "good"])
    assert proba.shape == (4, 2) and np.all(np.isfinite(proba))
