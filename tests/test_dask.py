"""Searches on a Dask cluster through joblib's Dask backend (needs the ``[dask]`` extra)."""

import pytest
import torch
from joblib import Parallel, delayed, parallel_config
from sklearn.model_selection import GridSearchCV, RandomizedSearchCV

from tests._tolerances import Exact, assert_identical

from .conftest import CLASSIFIERS, make_pipeline
from .test_scaling import RecordThreads

distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def client():
    """Two single-threaded worker processes whose torch would start with 2 threads.

    Dask's nanny sets ``OMP_NUM_THREADS=1`` (and MKL's, OpenBLAS's) in its
    workers unless the environment sets them; here it passes on 2, as a
    cluster started by other means (no nanny, a scheduler's own environment)
    may, so that nothing but the estimators limits torch.
    """
    with pytest.MonkeyPatch.context() as env:
        for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
            env.setenv(name, "2")
        cluster = distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        )
        with cluster, distributed.Client(cluster) as client:
            yield client


def _fit_threads(kind, texts, labels):
    record = RecordThreads()
    make_pipeline(kind, max_epochs=2, callbacks=[record]).fit(texts, labels)
    return torch.get_num_threads(), record.threads


@pytest.mark.parametrize("search", ["grid", "randomized"])
def test_search_on_dask_scores_as_the_sequential_search(client, kind, toy_corpus, search):
    texts, labels = toy_corpus
    name, values = CLASSIFIERS[kind][2]
    grid = {f"clf__{name}": values}

    def make_search():
        # A task of a Dask worker fits with one torch thread: so does the sequential search,
        # whatever the suite's --torch-threads, so that both run the same kernels.
        pipe = make_pipeline(kind, max_epochs=3, torch_threads=1)
        if search == "grid":
            return GridSearchCV(pipe, grid, cv=2, refit=False)
        return RandomizedSearchCV(pipe, grid, n_iter=2, cv=2, refit=False, random_state=0)

    sequential = make_search().fit(texts, labels)
    with parallel_config(backend="dask"):
        on_dask = make_search().fit(texts, labels)
    for key in ("params", "mean_test_score", "split0_test_score", "split1_test_score"):
        assert_identical(
            on_dask.cv_results_[key], sequential.cv_results_[key], why=Exact.SAME_CALL
        )


def test_each_fit_on_a_dask_worker_uses_one_torch_thread(client, toy_corpus):
    texts, labels = toy_corpus
    # Without a limit, every fit would run torch's 2 threads on a 1-thread worker.
    assert set(client.run(torch.get_num_threads).values()) == {2}
    with parallel_config(backend="dask"):
        results = Parallel(n_jobs=-1)(
            delayed(_fit_threads)(kind, texts, labels) for kind in sorted(CLASSIFIERS)
        )
    for after, during in results:
        assert during == [1, 1]
        # The worker's own setting is restored after the fit.
        assert after == 2
