"""Reliability: odd input, interruption, persistence and concurrent use."""

import pickle
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pandas as pd
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from joblib import Parallel, cpu_count, delayed, parallel_config
from sklearn.model_selection import GridSearchCV
from sklearn.utils._param_validation import (
    InvalidParameterError,
    generate_invalid_param_val,
    make_constraint,
)
from skorch.callbacks import Callback, EarlyStopping

from sklearn_lama import LAMAClassifier, Word2VecVectorizer
from tests._tolerances import Exact, assert_identical, assert_within

from .conftest import CLASSIFIERS, InterruptAt, make_pipeline, probability_bound


@pytest.fixture(scope="module")
def pipelines(toy_corpus):
    texts, labels = toy_corpus
    return {kind: make_pipeline(kind, max_epochs=3).fit(texts, labels) for kind in CLASSIFIERS}


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(documents=st.lists(st.text(max_size=60), min_size=1, max_size=6))
def test_random_unicode_documents_get_finite_probabilities(pipelines, documents):
    for pipe in pipelines.values():
        proba = pipe.predict_proba(documents)
        assert proba.shape == (len(documents), 2)
        assert np.all(np.isfinite(proba))
        np.testing.assert_allclose(proba.sum(1), 1.0)


def test_series_array_and_generator_inputs_are_accepted(pipelines, toy_corpus):
    texts, labels = toy_corpus
    pipe = pipelines["lama"]
    expected = pipe.predict_proba(texts)
    assert_identical(pipe.predict_proba(pd.Series(texts)), expected, why=Exact.SAME_CALL)
    assert_identical(pipe.predict_proba(np.array(texts)), expected, why=Exact.SAME_CALL)
    assert_identical(pipe.predict_proba(t for t in texts), expected, why=Exact.SAME_CALL)
    refit = make_pipeline("lama", max_epochs=3).fit(pd.Series(texts), pd.Series(labels))
    assert_identical(refit.predict_proba(texts), expected, why=Exact.SAME_CALL)


def test_concurrent_predictions_match_sequential(pipelines, toy_corpus):
    texts, _ = toy_corpus
    for kind, pipe in pipelines.items():
        expected = pipe.predict_proba(texts)
        with ThreadPoolExecutor(max_workers=8) as pool:
            results = list(pool.map(lambda _, p=pipe: p.predict_proba(texts), range(16)))
        # A call beside others takes its share of the torch threads: other kernels' rounding.
        bound = probability_bound(kind, pipe, texts)
        for result in results:
            assert_within(result, expected, bound)


@pytest.mark.parametrize("early_stopping", [True, False])
def test_keyboard_interrupt_leaves_a_usable_estimator(toy_corpus, early_stopping):
    texts, labels = toy_corpus
    vectorizer = Word2VecVectorizer(pretrained=None, vector_size=16, min_count=1, random_state=0)
    seqs = vectorizer.fit_transform(texts)
    clf = LAMAClassifier(
        n_heads=4, hidden_size=8, max_epochs=20, random_state=0, early_stopping=early_stopping
    )
    clf._extra_callbacks = lambda: [InterruptAt(3)]
    with pytest.warns(UserWarning, match="interrupted .* during epoch 3; the estimator is usable"):
        clf.fit(seqs, labels)
    assert clf.n_epochs_ == 3
    assert np.all(np.isfinite(clf.predict_proba(seqs)))
    if early_stopping:
        stopper = next(cb for _, cb in clf.net_.callbacks_ if isinstance(cb, EarlyStopping))
        assert stopper.best_epoch_ <= 3
        restored = clf.net_.module_.state_dict()
        for name, value in stopper.best_model_weights_.items():
            torch.testing.assert_close(restored[name], value)


def test_pickle_is_complete(pipelines, toy_corpus):
    texts, _ = toy_corpus
    for pipe in pipelines.values():
        restored = pickle.loads(pickle.dumps(pipe))
        assert_identical(restored.predict_proba(texts), pipe.predict_proba(texts), why=Exact.COPY)


def test_truncated_pickle_is_a_clear_error(pipelines):
    data = pickle.dumps(pipelines["lama"])
    with pytest.raises((pickle.UnpicklingError, EOFError, ValueError, RuntimeError)):
        pickle.loads(data[: len(data) // 2])


def test_early_stopping_is_not_reported_as_an_interruption(toy_corpus, recwarn):
    texts, labels = toy_corpus
    seqs = Word2VecVectorizer(
        pretrained=None, vector_size=16, min_count=1, random_state=0
    ).fit_transform(texts)
    clf = LAMAClassifier(
        n_heads=4, hidden_size=8, max_epochs=60, patience=2, lr=0.05, random_state=0
    ).fit(seqs, labels)
    assert clf.n_epochs_ < 60  # early stopping did stop it
    assert not [w for w in recwarn if "interrupted" in str(w.message)]


def test_model_saved_on_cuda_loads_on_cpu_with_a_warning(pipelines, toy_corpus):
    texts, _ = toy_corpus
    pipe = pipelines["fcsr"]
    expected = pipe.predict_proba(texts)
    # Stands in for a classifier trained with device="cuda": its net is rebuilt
    # on that device when the pickle is loaded.
    pipe["clf"].device = "cuda"
    try:
        data = pickle.dumps(pipe)
    finally:
        pipe["clf"].device = "cpu"
    if torch.cuda.is_available():
        pytest.skip("CUDA is present, so there is nothing to fall back from")
    with pytest.warns(UserWarning, match="device='cuda', which is not available here"):
        restored = pickle.loads(data)
    assert str(restored["clf"].net_.device) == "cpu"
    np.testing.assert_allclose(restored.predict_proba(texts), expected, rtol=1e-6)


@pytest.mark.parametrize("kind", sorted(CLASSIFIERS))
def test_every_hyperparameter_is_validated_before_training(kind, toy_corpus):
    texts, labels = toy_corpus
    seqs = Word2VecVectorizer(
        pretrained=None, vector_size=8, min_count=1, random_state=0
    ).fit_transform(texts)
    cls = CLASSIFIERS[kind][0]
    for name, constraints in cls._parameter_constraints.items():
        try:
            bad = generate_invalid_param_val(make_constraint(constraints[0]))
        except NotImplementedError:  # e.g. "random_state" accepts nearly anything
            continue
        clf = cls(**{name: bad})
        clf._build_core = _must_not_train
        with pytest.raises(InvalidParameterError, match=f"'{name}' parameter"):
            clf.fit(seqs, labels)


def _must_not_train(*args, **kwargs):
    raise AssertionError("a network was built despite an invalid parameter")


def test_grid_search_with_two_worker_processes(toy_corpus):
    texts, labels = toy_corpus
    grid = {"clf__d_ff": [8, 16]}
    # One torch thread in the workers and here (torch_threads=None would give each worker
    # its share of the cores, and this process the suite's --torch-threads): the same fits.
    pipe = make_pipeline("duo", max_epochs=5, torch_threads=1)
    parallel = GridSearchCV(pipe, grid, cv=2, n_jobs=2)
    sequential = GridSearchCV(pipe, grid, cv=2, n_jobs=1)
    parallel.fit(texts, labels)
    sequential.fit(texts, labels)
    assert_identical(
        parallel.cv_results_["mean_test_score"],
        sequential.cv_results_["mean_test_score"],
        why=Exact.SAME_CALL,
    )
    proba = parallel.predict_proba(texts)  # both refitted here, on the same parameters
    assert_identical(proba, sequential.predict_proba(texts), why=Exact.SAME_CALL)


class _RecordTorchThreads(Callback):
    def on_epoch_begin(self, net, **kwargs):
        self.threads = torch.get_num_threads()


class _ThreadRecordingLAMA(LAMAClassifier):
    def _extra_callbacks(self):
        return [_RecordTorchThreads()]


def _torch_threads_during_fit(seqs, labels):
    clf = _ThreadRecordingLAMA(
        n_heads=2, hidden_size=4, mlp_hidden=8, max_epochs=1, random_state=0
    ).fit(seqs, labels)
    return next(cb.threads for _, cb in clf.net_.callbacks_ if isinstance(cb, _RecordTorchThreads))


def test_loky_workers_fit_with_their_share_of_the_cores(toy_corpus, monkeypatch):
    # torch_threads=None fits with the worker's share of the CPUs (loky sets
    # OMP_NUM_THREADS to cpu_count() // n_jobs when the parent has not):
    # never 2 workers x 2 threads on 2 cores.
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    texts, labels = toy_corpus
    seqs = Word2VecVectorizer(
        pretrained=None, vector_size=8, min_count=1, random_state=0
    ).fit_transform(texts)
    with parallel_config(backend="loky"):
        threads = Parallel(n_jobs=2)(
            delayed(_torch_threads_during_fit)(seqs, labels) for _ in range(2)
        )
    # Workers are other processes, where the load average is real and may
    # leave busy cores out (busy_cpus): at most the share, at least one.
    assert len(threads) == 2 and all(1 <= t <= max(cpu_count() // 2, 1) for t in threads)


def test_predictions_do_not_depend_on_document_order(pipelines, toy_corpus):
    texts, _ = toy_corpus
    perm = np.random.RandomState(0).permutation(len(texts))
    for pipe in pipelines.values():
        assert_identical(
            pipe.predict_proba([texts[i] for i in perm]),
            pipe.predict_proba(texts)[perm],
            why=Exact.SAME_CALL,
        )
