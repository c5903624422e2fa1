"""Data-parallel training (``n_workers``, torchrun): one step, shards, faults, checkpoints."""

import functools
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
import warnings

import numpy as np
import pytest
import torch
from sklearn.model_selection import GridSearchCV
from skorch.callbacks import Callback

from sklearn_lama import DuoTranslator, LAMAClassifier, load_weights
from sklearn_lama.training._batching import BatchBudget, BucketBatchSampler, WeightedBatch
from sklearn_lama.training._callbacks import WeightAveraging, averaging_decay
from sklearn_lama.training._distributed import WorkerError
from tests._time_limit import time_limit
from tests._tolerances import (
    Exact,
    U,
    assert_identical,
    assert_within,
    chained_bound,
    estimator_decision_bound,
    estimator_probability_bound,
)

from .test_translator import BRIEF, EN, FR

IDS = np.random.RandomState(0).randint(2, 40, size=(48, 7))
Y = (IDS[:, 0] > 20).astype(int)
# A fit over workers starts processes: a hang would show as an overrun.
LIMIT = 120


def _lama(**params):
    return LAMAClassifier(
        n_heads=2,
        hidden_size=6,
        mlp_hidden=8,
        dropout=0.0,
        embedding_dropout=0.0,
        early_stopping=False,
        random_state=0,
        **params,
    )


def _per_document_gradients(clf, X, y):
    """``sum_i |g_i| / n``: the mean absolute per-document gradient of the loss, per parameter."""
    net = clf.net_
    params = dict(net.module_.named_parameters())
    sums = {name: torch.zeros_like(p, dtype=torch.float64) for name, p in params.items()}
    for i in range(len(X)):
        net.module_.zero_grad()
        ids = torch.as_tensor(X[i : i + 1])
        batch = WeightedBatch({"ids": ids, "lengths": torch.tensor([ids.shape[1]])}, torch.ones(1))
        net.module_.train()
        loss = net.get_loss(net.infer(batch), torch.as_tensor(y[i : i + 1]), X=batch)
        loss.backward()
        for name, p in params.items():
            if p.grad is not None:
                sums[name] += p.grad.double().abs()
    return {name: value / len(X) for name, value in sums.items()}


# One SGD step on 16 documents, every weight moved by it.
STEP = {"optimizer": "sgd", "lr": 0.5, "momentum": 0.0, "weight_decay": 0.0, "max_epochs": 1}


def _assert_one_step(other, X, y, device="cpu"):
    """``other`` (trained as :data:`STEP` on ``X``, ``y``) holds one worker's step at batch 16.

    The step of one worker runs on ``device``; the gradients that bound
    the comparison are measured on the CPU.

    The two differ at most by the reassociation of the per-document
    gradients' mean and by the kernels that the batch's shape picks, chained
    through the network, plus the rounding of each side's update
    ``w - lr g`` to float32.
    """
    one = _lama(batch_size=16, device=device, **STEP).fit(X, y)
    start = _lama(batch_size=16, **{**STEP, "lr": 1e-30}).fit(X, y)
    assert len(one.net_.history[-1, "batches"]) == len(other.net_.history[-1, "batches"]) == 1
    g_abs = _per_document_gradients(start, X, y)
    width = IDS.shape[1]
    n_terms = max(16, 2 * 6 * 3, 8, start.net_.module_.lookups[0].embedding_dim)
    for name, w_one in one.net_.module_.state_dict().items():
        w_other = other.net_.module_.state_dict()[name].cpu()
        w_one = w_one.cpu()
        bound = 0.5 * chained_bound(g_abs[name].numpy(), n_terms, depth=2 * width + 8)
        bound = bound + 2 * U * np.abs(w_one.double().numpy())
        assert_within(w_other.numpy(), w_one.numpy(), bound)
    # The step did move the weights (the comparison can fail).
    key = "core.classifier.3.weight"
    moved = one.net_.module_.state_dict()[key].cpu() - start.net_.module_.state_dict()[key]
    assert moved.abs().max() > 1e-3


def test_two_workers_at_half_the_batch_take_one_workers_step():
    # One worker's batch of 16, or two workers' 8 each with their gradients averaged.
    X, y = IDS[:16], Y[:16]
    with time_limit(LIMIT):
        two = _lama(n_workers=2, batch_size=8, **STEP).fit(X, y)
    _assert_one_step(two, X, y)


def _in_a_group_of_one(tmp_path, monkeypatch, work):
    """``work()`` in a gloo group of this process alone: its result and ``all_reduce`` calls."""
    import torch.distributed as dist

    reduced = []
    all_reduce = dist.all_reduce

    def counted(*args, **kwargs):
        reduced.append(1)
        return all_reduce(*args, **kwargs)

    monkeypatch.setattr(dist, "all_reduce", counted)
    store = dist.FileStore(str(tmp_path / "store"), 1)
    dist.init_process_group("gloo", store=store, rank=0, world_size=1)
    try:
        return work(), len(reduced)
    finally:
        dist.destroy_process_group()


def test_a_group_of_one_process_trains_through_its_collectives(tmp_path, monkeypatch):
    # torchrun --nproc-per-node=1 (on one GPU, the NCCL path): fit trains over
    # the group of one, its gradients averaged by the group's collective.
    X, y = IDS[:16], Y[:16]
    grouped, reduced = _in_a_group_of_one(
        tmp_path, monkeypatch, lambda: _lama(batch_size=16, **STEP).fit(X, y)
    )
    assert reduced
    _assert_one_step(grouped, X, y)


@pytest.mark.parametrize("max_time", [None, 1e6])
def test_workers_agree_after_each_batch_only_under_a_time_budget(tmp_path, monkeypatch, max_time):
    # A collective per step is a wait per step: the gradients' average, and under a
    # budget whether any worker has spent it (then also once per epoch).
    clf, reduced = _in_a_group_of_one(
        tmp_path,
        monkeypatch,
        lambda: _lama(batch_size=8, max_epochs=2, max_time=max_time).fit(IDS, Y),
    )
    steps = sum(len(e["batches"]) for e in clf.net_.history)
    epochs = len(clf.net_.history)
    assert reduced == (steps if max_time is None else 2 * steps + epochs)


class _Fake:
    """A stand-in for the workers of a group: rank, size, and rank 0's seed everywhere."""

    def __init__(self, rank, size):
        self.rank, self.size = rank, size

    def shared(self, value):
        return 12345


@pytest.mark.parametrize("size", [2, 3])
def test_each_worker_takes_its_share_of_the_same_batches(size):
    lengths = np.random.RandomState(1).randint(1, 60, size=203)
    budget = BatchBudget(400)
    shards = [
        list(BucketBatchSampler(lengths, 8, budget, pool_batches=4, workers=_Fake(r, size)))
        for r in range(size)
    ]
    assert len({len(s) for s in shards}) == 1  # every worker takes as many steps
    seen = []
    for step in zip(*shards):
        assert all(len(part) >= 1 for part in step)  # no worker idles a step
        batch = sorted(i for part in step for i in part)
        seen.extend(batch)
        # Balanced shards of a batch cut as one worker cuts within ``size`` times the
        # budget; a batch of fewer than ``size`` documents joined the one before it.
        assert max(map(len, step)) - min(map(len, step)) <= 1
        rest = np.sort(lengths[batch])[: len(batch) - size + 1]
        assert len(rest) * rest.max() <= size * budget.max_tokens or len(batch) < 2 * size
    assert sorted(seen) == list(range(len(lengths)))  # an epoch sees every document once


class _RaiseOnRank(Callback):
    def __init__(self, rank, exit_code=None):
        self.rank, self.exit_code = rank, exit_code

    def on_epoch_end(self, net, **kwargs):
        if net.workers is not None and net.workers.rank == self.rank:
            if self.exit_code is not None:
                os._exit(self.exit_code)
            raise ArithmeticError("worker-side failure")


def test_a_worker_that_raises_ends_the_fit_with_its_error():
    clf = _lama(n_workers=2, batch_size=8, max_epochs=50, callbacks=[_RaiseOnRank(1)])
    with time_limit(LIMIT), pytest.raises(WorkerError, match="worker 1 failed") as info:
        clf.fit(IDS, Y)
    assert isinstance(info.value.__cause__, ArithmeticError)
    assert "worker-side failure" in str(info.value)
    assert not hasattr(clf, "net_")


def test_a_worker_that_dies_ends_the_fit():
    clf = _lama(n_workers=2, batch_size=8, max_epochs=50, callbacks=[_RaiseOnRank(0, 3)])
    with time_limit(LIMIT), pytest.raises(WorkerError, match="exit code 3"):
        clf.fit(IDS, Y)


CALLER = textwrap.dedent(
    """
    import os, sys
    sys.path.insert(0, {root!r})
    from skorch.callbacks import Callback
    from tests.test_data_parallel import IDS, Y, _lama

    class Pid(Callback):
        def on_train_begin(self, net, **kwargs):
            with open({out!r}, "a") as file:
                file.write(f"{{os.getpid()}}\\n")

    _lama(n_workers=2, batch_size=8, max_epochs=10**6, callbacks=[Pid()]).fit(IDS, Y)
    """
)


def _running(pid):
    """Whether process ``pid`` runs: it exists and is not a zombie (ended, not yet reaped)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="reads processes from /proc")
def test_workers_end_when_their_caller_is_killed(tmp_path):
    # A caller killed by a signal runs no clean-up: its workers, training for a
    # million epochs, must notice that it has gone and end.
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    pids = tmp_path / "pids"
    script = tmp_path / "caller.py"
    script.write_text(CALLER.format(root=root, out=str(pids)))
    caller = subprocess.Popen(
        [sys.executable, str(script)], env={**os.environ, "OMP_NUM_THREADS": "1"}
    )
    workers = []
    try:
        with time_limit(LIMIT):
            while len(workers) < 2:
                assert caller.poll() is None, "the caller ended before its workers trained"
                time.sleep(0.1)
                workers = pids.read_text().split() if pids.exists() else []
        workers = [int(pid) for pid in workers]
        assert all(_running(pid) for pid in workers)
        caller.kill()
        caller.wait()
        with time_limit(30):
            while any(_running(pid) for pid in workers):
                time.sleep(0.1)
    finally:
        caller.kill()
        for pid in workers:
            try:
                os.kill(int(pid), signal.SIGKILL)
            except ProcessLookupError:
                pass


def test_workers_stop_together_on_the_time_budget_and_early_stopping():
    with time_limit(LIMIT), warnings.catch_warnings():
        warnings.simplefilter("error")  # the budget stops it, not an interruption
        clf = _lama(n_workers=2, batch_size=4, max_epochs=1000, max_time=3.0).fit(IDS, Y)
    assert 1 <= clf.n_epochs_ < 1000
    with time_limit(LIMIT):
        stopped = _lama(n_workers=2, batch_size=4, max_epochs=200, patience=2)
        stopped.set_params(early_stopping=True, validation_fraction=0.25).fit(IDS, Y)
    assert stopped.n_epochs_ < 200 and "valid_loss" in stopped.net_.history[-1]


def test_workers_stop_together_on_the_hold_out_accuracy():
    with time_limit(LIMIT):
        clf = _lama(n_workers=2, batch_size=4, max_epochs=200, patience=2, scoring="accuracy")
        clf.set_params(early_stopping=True, validation_fraction=0.25).fit(IDS, Y)
    accuracies = clf.net_.history[:, "valid_acc"]
    best = int(np.argmax(accuracies))  # the first epoch of the highest accuracy
    # Stopped after ``patience`` epochs that did not raise rank 0's accuracy.
    assert clf.n_epochs_ == best + 1 + 2 < 200
    assert all(a <= accuracies[best] for a in accuracies[best + 1 :])


class _CountValidated(Callback):
    """Records ``validated``: the validation batches this worker ran the network on."""

    def on_epoch_end(self, net, **kwargs):
        net.history.record("validated", getattr(net, "validated_", 0))
        net.validated_ = 0


def test_each_worker_validates_its_share_and_records_every_batch(monkeypatch):
    from sklearn_lama.training._net import PenalisedNet

    validation_step = PenalisedNet.validation_step

    def counted(net, batch, **kwargs):
        net.validated_ = getattr(net, "validated_", 0) + 1
        return validation_step(net, batch, **kwargs)

    monkeypatch.setattr(PenalisedNet, "validation_step", counted)
    # No step (lr 1e-30): both fits validate the weights they started from.
    held = {"early_stopping": True, "validation_fraction": 0.5, "inference_batch_size": 4}
    still = {**STEP, "lr": 1e-30}
    two = _lama(n_workers=2, batch_size=4, callbacks=[_CountValidated()], **still)
    one = _lama(batch_size=8, **still)
    with time_limit(LIMIT):
        two.set_params(**held).fit(IDS, Y)
    one.set_params(**held).fit(IDS, Y)
    batches = [b for b in two.net_.history[-1, "batches"] if "valid_loss" in b]
    assert len(batches) >= 4
    # Rank 0 ran every other validation batch, and recorded all of them.
    assert two.net_.history[-1, "validated"] == (len(batches) + 1) // 2
    # Other batch compositions: the mean loss moves at most as a logit difference does.
    bound = estimator_decision_bound(one, IDS, n=64, depth=2 * IDS.shape[1] + 8)
    for key in ("valid_loss", "valid_acc"):
        got, want = two.net_.history[-1, key], one.net_.history[-1, key]
        if key == "valid_loss":
            assert_within(np.array(got), np.array(want), np.max(bound) + 4 * U * abs(want))
        else:
            assert got == want


def test_the_progress_bar_of_workers_counts_every_workers_samples():
    # Rank 0 trains on its share of each step (9 documents of 18, then 10 of the last
    # 19: 37 training documents) and validates every batch: its bar still ends each
    # epoch at the whole sets' total.
    from .test_classifiers import _ProgressAtEpochEnd

    held = {"early_stopping": True, "validation_fraction": 0.22, "max_epochs": 2}
    clf = _lama(n_workers=2, batch_size=9, verbose=1, callbacks=[_ProgressAtEpochEnd()])
    with time_limit(LIMIT):
        clf.set_params(**held).fit(IDS, Y)
    assert clf.net_.history[:, "progress"] == [(len(IDS), len(IDS))] * 2


class _Decay(Callback):
    """Records the weight average's per-step decay in each epoch's ``decay``."""

    def on_epoch_end(self, net, **kwargs):
        for averaging in (cb for _, cb in net.callbacks_ if isinstance(cb, WeightAveraging)):
            net.history.record("decay", averaging.decay)


def test_the_weight_average_of_workers_spans_one_workers_share_of_an_epoch():
    # Two workers at batch 8 take one worker's steps at batch 16: 3 steps per epoch of
    # 48 documents, not 6, and the average over half an epoch is over 1.5 steps.
    two = _lama(n_workers=2, batch_size=8, max_epochs=1, ema_horizon=0.5, callbacks=[_Decay()])
    with time_limit(LIMIT):
        two.fit(IDS, Y)
    assert two.net_.history[-1, "decay"] == pytest.approx(averaging_decay(0.5, len(IDS), 16))
    one = _lama(batch_size=8, max_epochs=1, ema_horizon=0.5, callbacks=[_Decay()]).fit(IDS, Y)
    assert one.net_.history[-1, "decay"] == pytest.approx(averaging_decay(0.5, len(IDS), 8))


class _OnTheAverage(Callback):
    """Records ``on_average``: whether each validation step of this worker ran on the average."""

    def on_epoch_end(self, net, **kwargs):
        net.history.record("on_average", getattr(net, "on_average_", []))
        net.on_average_ = []


def test_workers_validate_the_weight_average(monkeypatch):
    # As one worker does: the average is in the network (its trained weights set
    # aside) during every validation step, on every worker.
    from sklearn_lama.training._net import PenalisedNet

    validation_step = PenalisedNet.validation_step

    def watched(net, batch, **kwargs):
        averaging = next(cb for _, cb in net.callbacks_ if isinstance(cb, WeightAveraging))
        net.on_average_ = [*getattr(net, "on_average_", []), averaging.trained_ is not None]
        return validation_step(net, batch, **kwargs)

    monkeypatch.setattr(PenalisedNet, "validation_step", watched)
    held = {"early_stopping": True, "validation_fraction": 0.5, "inference_batch_size": 4}
    two = _lama(n_workers=2, batch_size=4, max_epochs=2, callbacks=[_OnTheAverage()])
    with time_limit(LIMIT):
        two.set_params(**held).fit(IDS, Y)
    seen = two.net_.history[:, "on_average"]
    assert [len(epoch) for epoch in seen] == [3, 3]  # rank 0's 3 of the 6 validation batches
    assert all(all(epoch) for epoch in seen)


def test_checkpoints_of_workers_load_and_resume(tmp_path):
    path = tmp_path / "lama.safetensors"
    with time_limit(LIMIT):
        clf = _lama(n_workers=2, batch_size=8, max_epochs=2, checkpoint=path).fit(IDS, Y)
    saved = load_weights(clf.checkpoint_path_)
    assert_identical(saved.predict_proba(IDS), clf.predict_proba(IDS), why=Exact.COPY)
    with time_limit(LIMIT):
        clf.set_params(warm_start=True, max_epochs=1).fit(IDS, Y)
    assert clf.n_epochs_ == 3


def test_partial_fit_and_sample_weight_over_workers():
    clf = _lama(n_workers=2, batch_size=8)
    with time_limit(LIMIT):
        clf.partial_fit(IDS, Y, classes=[0, 1])
        clf.partial_fit(IDS, Y, sample_weight=np.linspace(0.5, 2.0, len(Y)))
    assert clf.n_epochs_ == 2 and clf.predict_proba(IDS).shape == (len(Y), 2)


def test_prediction_spreads_over_workers(monkeypatch):
    import sklearn_lama.training._inference as inference

    clf = _lama(batch_size=8, max_epochs=1).fit(IDS, Y)
    alone = clf.predict_proba(IDS)
    monkeypatch.setattr(inference, "SPREAD_DOCUMENTS", 10)
    started = []
    run_workers = inference.run_workers
    monkeypatch.setattr(
        inference,
        "run_workers",
        lambda *args, **kw: started.append(args[0]) or run_workers(*args, **kw),
    )
    with time_limit(LIMIT):
        spread = clf.set_params(n_workers=2).predict_proba(IDS)
    assert started == [2]
    # Another batch composition: each document's output within float32 rounding.
    bound = estimator_probability_bound(clf, IDS, n=64, depth=2 * IDS.shape[1] + 8)
    assert_within(spread, alone, bound)


def test_the_translator_trains_over_workers():
    with time_limit(LIMIT):
        model = DuoTranslator(**{**BRIEF, "max_epochs": 2}, n_workers=2).fit(EN, FR)
    assert len(model.history_) == 2 and model.predict(EN[:2]).shape == (2,)


def test_a_search_over_loky_processes_trains_each_fit_over_workers():
    # Each of the search's loky processes forks the workers of its fits; one
    # torch thread everywhere, so that both searches run the same kernels.
    search = {"estimator": _lama(n_workers=2, torch_threads=1, batch_size=8, max_epochs=2)}
    search.update(param_grid={"lr": [1e-3, 1e-2]}, cv=2)
    with time_limit(LIMIT):
        parallel = GridSearchCV(**search, n_jobs=2).fit(IDS, Y)
    sequential = GridSearchCV(**search, n_jobs=1).fit(IDS, Y)
    assert_identical(
        parallel.cv_results_["mean_test_score"],
        sequential.cv_results_["mean_test_score"],
        why=Exact.SAME_CALL,
    )


def test_workers_are_refused_what_they_cannot_do():
    from sklearn.utils._param_validation import InvalidParameterError

    with pytest.raises(ValueError, match="at least 3 documents"):
        _lama(n_workers=3, batch_size=2).fit(IDS[:2], [0, 1])
    with pytest.raises(InvalidParameterError, match="n_workers"):
        _lama(n_workers=0).fit(IDS, Y)


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


SCRIPT = textwrap.dedent(
    """
    import os, sys
    import numpy as np
    import torch.distributed as dist
    sys.path.insert(0, {root!r})
    from sklearn.pipeline import make_pipeline
    from sklearn_lama import DuoTranslator, MetaEmbeddingTransformer, Word2VecVectorizer
    from tests.test_data_parallel import IDS, Y, _lama
    from tests.test_translator import BRIEF, EN, FR

    dist.init_process_group("gloo")
    try:
        _lama(n_workers=2).fit(IDS, Y)
    except ValueError as exc:
        assert "set n_workers=1" in str(exc)
    rank = dist.get_rank()
    clf = _lama(batch_size=8, max_epochs=2).fit(IDS, Y)
    np.save(os.path.join({out!r}, f"proba{{rank}}.npy"), clf.predict_proba(IDS))
    np.save(os.path.join({out!r}, f"steps{{rank}}.npy"),
            [len(e["batches"]) for e in clf.net_.history])
    # Each rank passes its own part (rank 0 the first 30 rows, rank 1 the other 18): the
    # fit trains on both, as the fit above on all of them.
    part = slice(0, 30) if rank == 0 else slice(30, None)
    shard = _lama(batch_size=8, max_epochs=2).fit(IDS[part], Y[part])
    np.save(os.path.join({out!r}, f"shard{{rank}}.npy"), shard.predict_proba(IDS))
    np.save(os.path.join({out!r}, f"whole{{rank}}.npy"), clf.predict_proba(IDS))
    texts = [" ".join(f"w{{i}}" for i in row) for row in IDS]
    words = dict(pretrained=None, vector_size=4, min_count=1, epochs=1, random_state=0)
    whole = make_pipeline(Word2VecVectorizer(**words), _lama(max_epochs=1)).fit(texts, Y)
    parts = make_pipeline(Word2VecVectorizer(**words), _lama(max_epochs=1))
    parts.fit(texts[part], Y[part])
    assert parts[0].vocabulary_ == whole[0].vocabulary_
    sources = [("a", Word2VecVectorizer(**words)), ("b", Word2VecVectorizer(**words, sg=0))]
    meta = MetaEmbeddingTransformer(sources, min_count=1, n_jobs=2)
    assert len(meta.fit_transform(texts[part])) == len(texts[part])
    alone = MetaEmbeddingTransformer(sources, min_count=1).fit(texts)
    assert meta.vocabulary_ == alone.vocabulary_
    np.save(os.path.join({out!r}, f"texts{{rank}}.npy"),
            [whole.predict_proba(texts), parts.predict_proba(texts)])
    half = slice(0, len(EN) // 2) if rank == 0 else slice(len(EN) // 2, None)
    pairs = DuoTranslator(**BRIEF).fit(EN[half], FR[half])
    np.save(os.path.join({out!r}, f"pairs{{rank}}.npy"),
            np.array([pairs.predict(EN[:6]), DuoTranslator(**BRIEF).fit(EN, FR).predict(EN[:6])],
                     dtype=str))
    dist.destroy_process_group()
    """
)


def test_two_torchrun_nodes_train_one_model(tmp_path):
    # Two torchrun agents meeting on 127.0.0.1, one process each: two "nodes".
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    script = tmp_path / "train.py"
    script.write_text(SCRIPT.format(root=root, out=str(tmp_path)))
    port = _free_port()
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    agents = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "torch.distributed.run",
                "--nnodes=2",
                "--nproc-per-node=1",
                f"--node-rank={rank}",
                "--master-addr=127.0.0.1",
                f"--master-port={port}",
                str(script),
            ],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for rank in range(2)
    ]
    outputs = []
    try:
        for agent in agents:
            outputs.append(agent.communicate(timeout=240)[0])
    finally:
        for agent in agents:
            agent.kill()
    assert [a.returncode for a in agents] == [0, 0], "\n".join(outputs)[-3000:]
    # Every rank ends with the same fitted estimator, having trained on half of each batch.
    p0, p1 = (np.load(tmp_path / f"proba{r}.npy") for r in range(2))
    assert_identical(p1, p0, why=Exact.COPY)
    steps = np.load(tmp_path / "steps0.npy")
    single = _lama(batch_size=16, max_epochs=2).fit(IDS, Y)
    assert steps.tolist() == [len(e["batches"]) for e in single.net_.history]
    # Ranks that each passed a part trained, in the same process, the model of the whole.
    for r in range(2):
        shard, whole = (np.load(tmp_path / f"{kind}{r}.npy") for kind in ("shard", "whole"))
        assert_identical(shard, whole, why=Exact.SAME_CALL)
        whole_texts, parts_texts = np.load(tmp_path / f"texts{r}.npy")
        assert_identical(parts_texts, whole_texts, why=Exact.SAME_CALL)
    assert_identical(
        np.load(tmp_path / "shard1.npy"), np.load(tmp_path / "shard0.npy"), why=Exact.COPY
    )
    # The translator's pairs were joined too.
    for r in range(2):
        parts_pairs, whole_pairs = np.load(tmp_path / f"pairs{r}.npy")
        assert_identical(parts_pairs, whole_pairs, why=Exact.SAME_CALL)


NCCL_SCRIPT = textwrap.dedent(
    """
    import os, pickle, sys
    import torch, torch.distributed as dist
    sys.path.insert(0, {root!r})
    from tests.test_data_parallel import IDS, STEP, Y, _lama

    reduced = []
    all_reduce = dist.all_reduce

    def counted(*args, **kwargs):
        reduced.append(1)
        return all_reduce(*args, **kwargs)

    dist.all_reduce = counted
    dist.init_process_group("nccl")
    torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    clf = _lama(batch_size=16, device="cuda", **STEP).fit(IDS[:16], Y[:16])
    assert dist.get_backend() == "nccl" and reduced
    with open(os.path.join({out!r}, "grouped.pkl"), "wb") as fh:
        pickle.dump(clf, fh)
    dist.destroy_process_group()
    """
)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_nccl_group_trains_one_workers_step(tmp_path):
    # torchrun with one process on one GPU: the gradients go through NCCL's all_reduce.
    import pickle

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    script = tmp_path / "train.py"
    script.write_text(NCCL_SCRIPT.format(root=root, out=str(tmp_path)))
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone"]
    command += ["--nproc-per-node=1", str(script)]
    agent = subprocess.run(command, capture_output=True, text=True, timeout=240)
    assert agent.returncode == 0, (agent.stdout + agent.stderr)[-3000:]
    with open(tmp_path / "grouped.pkl", "rb") as fh:
        grouped = pickle.load(fh)
    _assert_one_step(grouped, IDS[:16], Y[:16], device="cuda")


def test_adam_on_the_cpu_leaves_cuda_alone(monkeypatch):
    # torch's Adam asks the accelerator whether a CUDA graph is being captured at
    # every step, initialising CUDA: a worker forked after the caller used CUDA fails.
    from sklearn_lama.training._parameters import Adam

    def queried(*args, **kwargs):
        raise AssertionError("the step queried CUDA")

    monkeypatch.setattr(torch.backends.cuda, "is_built", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_available", queried)
    if hasattr(torch, "accelerator"):  # torch >= 2.6
        monkeypatch.setattr(torch.accelerator, "current_accelerator", queried, raising=False)
    weight = torch.nn.Parameter(torch.ones(3))
    weight.grad = torch.ones(3)
    Adam([weight], lr=0.1).step()
    assert torch.all(weight < 1)
    with pytest.raises(AssertionError, match="queried CUDA"):
        torch.optim.Adam([weight], lr=0.1).step()


def _exit_failing():
    os._exit(1)


def _never_ending():
    import time

    while True:
        time.sleep(1)


@pytest.mark.parametrize("child", [_exit_failing, _never_ending])
def test_a_process_whose_forks_cannot_train_is_refused_before_the_workers(child, monkeypatch):
    # Where a forked child cannot run a backward pass (a process that used CUDA), the
    # fit is refused in the user's terms before any worker starts; a hung check ends.
    from sklearn_lama.training import _distributed

    monkeypatch.setattr(_distributed, "_backward_and_exit", child)
    monkeypatch.setattr(_distributed, "FORK_CHECK_TIMEOUT", 2)
    started = []
    monkeypatch.setattr(_distributed, "_supervise", lambda *args: started.append(args))
    with time_limit(30), pytest.raises(ValueError, match="n_workers=2 forks this process"):
        _lama(n_workers=2).fit(IDS, Y)
    assert not started


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cpu_workers_fork_from_a_process_that_used_cuda():
    # A CPU fit over forked workers, after this process trained on the GPU: torch
    # trains in the forks, or the fit is refused in the user's terms, never a
    # worker's CUDA error.
    _lama(batch_size=8, max_epochs=1, device="cuda").fit(IDS, Y)
    with time_limit(LIMIT):
        try:
            clf = _lama(n_workers=2, batch_size=8, max_epochs=2).fit(IDS, Y)
        except ValueError as exc:
            assert "Autograd and Fork" in str(exc)
        else:
            assert len(clf.net_.history) == 2


def test_parts_of_each_kind_join_in_rank_order():
    import pandas as pd
    import scipy.sparse as sp

    from sklearn_lama.utils._shards import _join

    for parts, want in [
        ([["a", "b"], ["c"]], ["a", "b", "c"]),
        ([np.arange(2), np.arange(2, 5)], np.arange(5)),
        ([pd.Series(["a"], index=[7]), pd.Series(["b"], index=[7])], pd.Series(["a", "b"])),
        ([sp.csr_matrix(np.eye(2)), sp.csr_matrix([[1, 1]])], np.vstack([np.eye(2), [1, 1]])),
    ]:
        joined = _join(parts, "X")
        joined = joined.toarray() if sp.issparse(joined) else joined
        assert_identical(np.asarray(joined), np.asarray(want), why=Exact.COPY)
    assert _join([None, None], "sample_weight") is None
    with pytest.raises(ValueError, match="sample_weight was passed on some ranks"):
        _join([None, np.ones(2)], "sample_weight")
    with pytest.raises(TypeError, match="passed X of different types"):
        _join([["a"], np.array(["b"])], "X")


def test_outside_a_group_and_in_a_group_of_one_the_data_stays_as_passed(tmp_path, monkeypatch):
    from sklearn_lama.utils._shards import joined_shards

    data, names = (IDS, Y, None), ("X", "y", "sample_weight")
    assert joined_shards(data, names) == (data, slice(None))
    work = functools.partial(joined_shards, data, names)
    (joined, rows), _ = _in_a_group_of_one(tmp_path, monkeypatch, work)
    assert joined is data and rows == slice(None)
