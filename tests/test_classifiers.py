"""Behaviour every classifier of the package shares: one test body, each estimator."""

import pickle
import subprocess
import sys
import types

import joblib
import numpy as np
import pytest
import torch
import tqdm.notebook
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.pipeline import Pipeline
from skorch.callbacks import Callback

from sklearn_lama import Word2VecVectorizer
from sklearn_lama.training._callbacks import SampleProgressBar
from tests._tolerances import Exact, assert_differ, assert_identical, assert_within

from .conftest import (
    CLASSIFIERS,
    decision_bound,
    make_classifier,
    make_pipeline,
    probability_bound,
)


@pytest.fixture(scope="module")
def fitted_pipelines(toy_corpus):
    texts, labels = toy_corpus
    return {kind: make_pipeline(kind).fit(texts, labels) for kind in CLASSIFIERS}


def test_learns_and_returns_user_labels(kind, fitted_pipelines, toy_corpus):
    texts, labels = toy_corpus
    pipe = fitted_pipelines[kind]
    assert list(pipe.classes_) == ["neg", "pos"]
    assert pipe.score(texts, labels) > 0.9
    np.testing.assert_allclose(pipe.predict_proba(texts).sum(1), 1.0)


def test_prediction_independent_of_batch(kind, fitted_pipelines, toy_corpus):
    texts, _ = toy_corpus
    pipe = fitted_pipelines[kind]
    short = "good movie"
    longer = [" ".join([t] * 3) for t in texts[:40]]
    alone = pipe.predict_proba([short])[0]
    batched = pipe.predict_proba(longer[:20] + [short] + longer[20:])[20]
    bound = probability_bound(kind, pipe, [short])
    np.testing.assert_allclose(alone, batched, rtol=0, atol=bound)


def test_subset_predictions_match_full(kind, fitted_pipelines, toy_corpus):
    texts, _ = toy_corpus
    pipe = fitted_pipelines[kind]
    full = pipe.predict_proba(texts)
    bound = probability_bound(kind, pipe, texts[5:17])
    np.testing.assert_allclose(pipe.predict_proba(texts[5:17]), full[5:17], rtol=0, atol=bound)


@pytest.mark.parametrize("dtype", [np.float64, np.int64])
def test_scores_alone_are_those_in_a_batch(kind, dtype):
    # Documents of one length (scalar features, or token ids without padding), as
    # in scikit-learn's subset-invariance check: a document alone is a product of
    # another shape than in a batch, another computation: the rounding bound of the
    # scores (the check's own 1e-7 is below a float32 ulp of a score; tests/test_common.py).
    X = np.random.RandomState(0).uniform(1, 9, size=(40, 5)).astype(dtype)
    y = (X[:, 0] > 5).astype(int)
    clf = make_classifier(kind, max_epochs=2).fit(X, y)
    full = clf.decision_function(X[:20])
    alone = np.concatenate([clf.decision_function(X[i : i + 1]) for i in range(20)])
    assert_within(alone, full, decision_bound(kind, clf, X[:20]))


def test_same_random_state_same_probabilities(kind, toy_corpus):
    texts, labels = toy_corpus
    a = make_pipeline(kind, max_epochs=3).fit(texts, labels).predict_proba(texts)
    b = make_pipeline(kind, max_epochs=3).fit(texts, labels).predict_proba(texts)
    c = make_pipeline(kind, max_epochs=3, random_state=1).fit(texts, labels).predict_proba(texts)
    assert_identical(a, b, why=Exact.SAME_CALL)
    assert_differ(a, c)


def test_grid_search_in_pipeline(kind, toy_corpus):
    texts, labels = toy_corpus
    name, values = CLASSIFIERS[kind][2]
    search = GridSearchCV(make_pipeline(kind, max_epochs=2), {f"clf__{name}": values}, cv=2)
    search.fit(texts, labels)
    # Each candidate scores as the same pipeline fitted on its own.
    for params, score in zip(search.cv_results_["params"], search.cv_results_["mean_test_score"]):
        alone = cross_val_score(
            make_pipeline(kind, max_epochs=2).set_params(**params), texts, labels, cv=2
        )
        # The same fits on the same folds, in this process: the same scores.
        assert_identical(score, alone.mean(), why=Exact.SAME_CALL)
    assert getattr(search.best_estimator_["clf"], name) == search.best_params_[f"clf__{name}"]


def test_joblib_roundtrip_in_new_process(kind, fitted_pipelines, toy_corpus, tmp_path):
    texts, _ = toy_corpus
    pipe = fitted_pipelines[kind]
    joblib.dump(pipe, tmp_path / "model.joblib")
    (tmp_path / "texts.txt").write_text("\n".join(texts))
    code = (
        "import sys, joblib, numpy as np;"
        "pipe = joblib.load(sys.argv[1]);"
        "texts = open(sys.argv[2]).read().split('\\n');"
        "np.save(sys.argv[3], pipe.predict_proba(texts))"
    )
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            code,
            str(tmp_path / "model.joblib"),
            str(tmp_path / "texts.txt"),
            str(tmp_path / "proba.npy"),
        ],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    # Another process may run other torch threads (its torch_threads=None leaves out the
    # cores it finds busy): the same weights, within the rounding bound.
    bound = probability_bound(kind, pipe, texts)
    assert_within(np.load(tmp_path / "proba.npy"), pipe.predict_proba(texts), bound)


def test_plain_array_inputs(kind):
    rng = np.random.RandomState(0)
    ids = rng.randint(1, 20, size=(60, 7))
    y = (ids[:, 0] > 10).astype(int)
    ids[::3, 5:] = 0  # padding
    clf = make_classifier(kind, max_epochs=3).fit(ids, y)
    assert clf.n_features_in_ == 7 and clf.input_adapter_.vocabulary_size == 20
    assert clf.predict(ids).shape == (60,)
    with pytest.raises(ValueError, match="token id 25"):
        clf.predict(np.full((2, 7), 25))
    dense = rng.randn(60, 5, 3).astype(np.float32)
    y = (dense[:, 0, 0] > 0).astype(int)
    clf = make_classifier(kind, max_epochs=3).fit(dense, y)
    assert clf.predict_proba(dense).shape == (60, 2)
    with pytest.raises(ValueError, match="fitted with 3"):
        clf.predict(dense[:, :, :2])
    with pytest.raises(ValueError, match="fitted on a 3-D float array, but X is a 2-D integer"):
        clf.predict(ids[:, :5])


def test_verbose_prints_progress_per_epoch(kind, toy_corpus, capsys):
    texts, labels = toy_corpus
    make_pipeline(kind, max_epochs=2, verbose=1).fit(texts, labels)
    printed = capsys.readouterr()
    for column in ("epoch", "train_loss", "train_acc", "valid_loss", "valid_acc"):
        assert column in printed.out
    assert "sample/s" in printed.err  # the progress bar


class _ProgressAtEpochEnd(Callback):
    """Records the progress bar's count and total in each epoch's ``progress`` (before it closes).

    In the net's history, which a fit over workers brings back from the first
    (the only one with a bar).
    """

    def on_epoch_end(self, net, **kwargs):
        for bar in (cb.pbar_ for _, cb in net.callbacks_ if isinstance(cb, SampleProgressBar)):
            net.history.record("progress", (bar.n, bar.total))


def test_progress_counts_every_sample_whatever_the_batches(kind, toy_corpus):
    # A small token budget cuts the batches smaller than batch_size: the bar still
    # ends each epoch at its total, the documents of the training and validation sets.
    texts, labels = toy_corpus
    progress = _ProgressAtEpochEnd()
    model = make_pipeline(kind, max_epochs=2, verbose=1, max_batch_tokens=64, callbacks=[progress])
    model.fit(texts, labels)
    assert model[-1].net_.history[:, "progress"] == [(len(texts), len(texts))] * 2


def test_progress_in_a_notebook_without_widgets_is_the_text_bar(toy_corpus, monkeypatch, capsys):
    # tqdm's notebook bar raises without ipywidgets: a verbose fit must not.
    monkeypatch.setattr(SampleProgressBar, "in_notebook", lambda self: True)
    monkeypatch.setattr(tqdm.notebook, "IProgress", None)
    texts, labels = toy_corpus
    make_pipeline("duo", max_epochs=1, verbose=1).fit(texts, labels)
    assert "sample/s" in capsys.readouterr().err


def test_a_notebook_is_told_by_its_shell_and_the_text_bar_imports_no_notebook_module(
    monkeypatch,
):
    class ZMQInteractiveShell:  # the class of a notebook kernel's shell
        pass

    bar = SampleProgressBar()
    monkeypatch.delitem(sys.modules, "IPython", raising=False)
    assert not bar.in_notebook()
    shell = types.ModuleType("IPython")
    monkeypatch.setitem(sys.modules, "IPython", shell)
    shell.get_ipython = lambda: None  # IPython imported outside its shell
    assert not bar.in_notebook()
    shell.get_ipython = ZMQInteractiveShell
    assert bar.in_notebook()
    # Outside a notebook tqdm's notebook module (which imports IPython) is not imported.
    monkeypatch.delitem(sys.modules, "IPython")
    monkeypatch.delitem(sys.modules, "tqdm.notebook")
    monkeypatch.delattr(tqdm, "notebook")
    bar.on_epoch_begin(None, dataset_train=range(3), dataset_valid=range(2))
    assert type(bar.pbar_) is tqdm.tqdm and bar.pbar_.total == 5
    assert "tqdm.notebook" not in sys.modules
    bar.pbar_.close()
    assert "pbar_" not in vars(pickle.loads(pickle.dumps(bar)))


@pytest.mark.skipif(torch.cuda.is_available(), reason="tests the error raised without CUDA")
def test_cuda_without_cuda_is_a_clear_error(kind, toy_corpus):
    texts, labels = toy_corpus
    with pytest.raises(ValueError, match="device='cuda'.*CUDA is not available"):
        make_pipeline(kind, device="cuda").fit(texts, labels)


def test_a_gpu_device_is_tagged_non_deterministic(kind):
    # On a GPU a document's scores can move in the last bits with the shape of its batch,
    # which scikit-learn's subset-invariance check (tolerance 1e-7) does not allow.
    assert not make_classifier(kind).__sklearn_tags__().non_deterministic
    assert make_classifier(kind, device="cuda").__sklearn_tags__().non_deterministic


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_fit(kind, toy_corpus):
    texts, labels = toy_corpus
    gpu = make_pipeline(kind, device="cuda").fit(texts, labels)
    assert next(gpu["clf"].net_.module_.parameters()).is_cuda
    assert gpu.score(texts, labels) > 0.9


def test_bad_input_is_refused_before_training(kind, toy_corpus):
    texts, labels = toy_corpus
    pipe = make_pipeline(kind)
    cls = CLASSIFIERS[kind][0]
    with pytest.raises(TypeError, match="single string"):
        pipe.fit("just one document", ["pos"])
    with pytest.raises(TypeError, match="Document 3"):
        pipe.fit(texts[:3] + [None] + texts[4:], labels)
    with pytest.raises(ValueError, match="empty"):
        pipe.fit([], [])
    with pytest.raises(ValueError, match="min_count"):
        Pipeline([("emb", Word2VecVectorizer()), ("clf", cls())]).fit(["a b", "c d"], [0, 1])
    with pytest.raises(ValueError, match="only one class"):
        pipe.fit(texts, ["pos"] * len(texts))
    with pytest.raises(ValueError, match="NaN"):
        cls().fit(np.array([[0.1, np.nan], [0.2, 0.3]]), [0, 1])
    with pytest.raises(ValueError, match="infinity"):
        cls().fit(np.array([[0.1, np.inf], [0.2, 0.3]]), [0, 1])
    with pytest.raises(ValueError, match="NaN"):
        pipe.fit(texts, np.where(labels == "pos", 1.0, np.nan))
    with pytest.raises(ValueError, match="X holds 120 documents but y holds 3"):
        pipe.fit(texts, labels[:3])
    with pytest.raises(TypeError, match="not raw text"):
        cls().fit(texts, labels)
    with pytest.raises(ValueError, match="negative token ids"):
        cls().fit(np.array([[1, -2], [3, 4]]), [0, 1])


def test_container_from_other_vocabulary_is_refused(kind, fitted_pipelines, toy_corpus):
    texts, _ = toy_corpus
    other = Word2VecVectorizer(
        pretrained=None, vector_size=16, min_count=1, lowercase=False, random_state=0
    )
    seqs = other.fit_transform([t.upper() for t in texts])
    with pytest.raises(ValueError, match="different vocabulary"):
        fitted_pipelines[kind]["clf"].predict(seqs)


def test_empty_and_unknown_documents_still_get_predictions(kind, fitted_pipelines):
    proba = fitted_pipelines[kind].predict_proba(["", "zzz qqq", "!!!", "good"])
    assert proba.shape == (4, 2) and np.all(np.isfinite(proba))


@pytest.mark.parametrize(
    "params, match",
    [
        ({"lr": 0.0}, "lr"),
        ({"optimizer": "rmsprop"}, "optimizer"),
        ({"validation_fraction": 1.5}, "validation_fraction"),
        ({"max_epochs": 0}, "max_epochs"),
        ({"batch_size": -3}, "batch_size"),
        ({"device": "tpu"}, "device"),
    ],
)
def test_invalid_common_hyperparameters(kind, toy_corpus, params, match):
    texts, labels = toy_corpus
    with pytest.raises(ValueError, match=match):
        make_pipeline(kind, **params).fit(texts, labels)
