"""``ema_horizon``: the weight average that validation, early stopping and the model use."""

import pickle
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from skorch.callbacks import Callback

from sklearn_lama.training._callbacks import WeightAveraging, averaging_decay, group_decay
from tests._tolerances import Exact, identical

from .conftest import make_pipeline


def _fake_net(weight):
    module = torch.nn.Linear(1, 1, bias=False)
    frozen = torch.nn.Parameter(torch.zeros(1), requires_grad=False)
    module.register_parameter("frozen", frozen)
    with torch.no_grad():
        module.weight.fill_(weight)
    return SimpleNamespace(module_=module)


def _set(net, value):
    with torch.no_grad():
        net.module_.weight.fill_(value)


def _value(net):
    return float(net.module_.weight.detach())


def test_average_starts_from_the_initial_weights():
    net = _fake_net(0.0)
    averaging = WeightAveraging(0.9).initialize()
    averaging.on_train_begin(net)
    expected = 0.0
    for value in [1.0, 2.0, 3.0, 4.0]:
        _set(net, value)
        averaging.on_batch_end(net, training=True)
        expected = 0.9 * expected + 0.1 * value
    assert float(averaging.average_[0]) == pytest.approx(expected)
    # Validation batches do not move it.
    averaging.on_batch_end(net, training=False)
    assert float(averaging.average_[0]) == pytest.approx(expected)
    assert len(averaging.average_) == 1  # the frozen parameter is not averaged


@pytest.mark.parametrize(
    "horizon, n_documents, batch_size, decay",
    [(0.5, 6400, 32, 0.99), (1.0, 100, 10, 0.9), (0.5, 40, 32, 0.0), (2.0, 33, 32, 0.75)],
)
def test_decay_spans_the_horizon_in_epochs(horizon, n_documents, batch_size, decay):
    assert averaging_decay(horizon, n_documents, batch_size) == pytest.approx(decay)


@pytest.mark.parametrize("n_workers", [1, 2, 4])
def test_over_workers_the_decay_spans_the_same_share_of_an_epoch(n_workers):
    # k workers take one step per k batches: the decay of one worker at k times the
    # batch (6400 documents: 200 steps of 32, 100 of 64, 50 of 128).
    alone = averaging_decay(0.5, 6400, 32)
    assert group_decay(alone, n_workers) == pytest.approx(
        averaging_decay(0.5, 6400, 32 * n_workers)
    )
    # An average over less than a step, or none, stays none.
    assert group_decay(averaging_decay(0.5, 40, 8), 4) == 0.0
    assert group_decay(0.0, n_workers) == 0.0


def _one_step():
    """A net that started at 0 and took one step to 4, and its average (decay 0.5)."""
    net = _fake_net(0.0)
    averaging = WeightAveraging(0.5).initialize()
    averaging.on_train_begin(net)
    _set(net, 4.0)
    averaging.on_batch_end(net, training=True)
    return net, averaging


def test_validation_sees_the_average_and_training_resumes_from_its_weights():
    net, averaging = _one_step()
    average = float(averaging.average_[0])
    assert average not in (0.0, 4.0)

    averaging.on_batch_begin(net, training=False)
    assert _value(net) == pytest.approx(average)
    averaging.on_batch_begin(net, training=False)  # a second batch swaps nothing more
    averaging.on_epoch_end(net)
    assert _value(net) == pytest.approx(average)

    averaging.on_epoch_begin(net)
    assert _value(net) == 4.0


def test_without_validation_the_epoch_end_sees_the_average():
    net, averaging = _one_step()
    averaging.on_epoch_end(net)
    assert _value(net) == pytest.approx(float(averaging.average_[0]))


def test_training_ends_on_the_average_and_drops_the_copies():
    net, averaging = _one_step()
    average = float(averaging.average_[0])
    averaging.on_train_end(net)  # e.g. interrupted in the middle of an epoch
    assert _value(net) == pytest.approx(average)
    assert averaging.average_ is None and averaging.trained_ is None


class _Record(Callback):
    """Weights at each epoch's end, and the weights training resumes from."""

    def initialize(self):
        self.at_end, self.resumed = [], []
        self._first = True
        return self

    def _weights(self, net):
        return [p.detach().clone() for p in net.module_.parameters() if p.requires_grad]

    def on_epoch_begin(self, net, **kwargs):
        self._first = True

    def on_batch_begin(self, net, training=False, **kwargs):
        if training and self._first and self.at_end:
            self.resumed.append(self._weights(net))
        self._first = self._first and not training

    def on_epoch_end(self, net, **kwargs):
        self.at_end.append(self._weights(net))


def _same(a, b):
    """Whether two lists of weights are the same tensors' values: copies, never recomputed."""
    return identical(a, b, why=Exact.COPY)


@pytest.mark.parametrize("kind", ["lama", "duo"])
def test_model_keeps_the_average_of_the_best_epoch(kind, toy_corpus):
    texts, labels = toy_corpus
    record = _Record()
    pipe = make_pipeline(kind, max_epochs=6, patience=6, ema_horizon=2.0, callbacks=[record])
    pipe.fit(texts, labels)
    clf = pipe["clf"]
    best = int(np.argmin(clf.net_.history[:, "valid_loss"]))
    kept = [p.detach() for p in clf.net_.module_.parameters() if p.requires_grad]
    assert _same(kept, record.at_end[best])
    # Each epoch trained on from its own weights, not from the average validated before it.
    assert len(record.resumed) == len(record.at_end) - 1
    assert not any(_same(a, r) for a, r in zip(record.at_end, record.resumed))
    # The copies the average needed are not kept with the model.
    averaging = [cb for _, cb in clf.net_.callbacks_ if isinstance(cb, WeightAveraging)]
    assert len(averaging) == 1 and averaging[0].average_ is None
    assert pickle.loads(pickle.dumps(clf)).predict_proba(pipe[0].transform(texts)).shape == (
        len(texts),
        2,
    )


def test_zero_decay_trains_as_the_papers(toy_corpus):
    texts, labels = toy_corpus
    record = _Record()
    pipe = make_pipeline("lama", max_epochs=3, ema_horizon=0.0, callbacks=[record])
    pipe.fit(texts, labels)
    assert not any(isinstance(cb, WeightAveraging) for _, cb in pipe["clf"].net_.callbacks_)
    assert all(_same(a, r) for a, r in zip(record.at_end, record.resumed))
    averaged = make_pipeline("lama", max_epochs=3).fit(texts, labels)
    assert not np.allclose(pipe.predict_proba(texts), averaged.predict_proba(texts))


def test_partial_fit_does_not_average(toy_corpus):
    texts, labels = toy_corpus
    pipe = make_pipeline("lama")
    sequences = pipe[0].fit_transform(texts)
    clf = pipe["clf"].partial_fit(sequences, labels, classes=["neg", "pos"])
    assert not any(isinstance(cb, WeightAveraging) for _, cb in clf.net_.callbacks_)


@pytest.mark.parametrize("value", [-0.1, "long"])
def test_invalid_horizon_is_refused(value, toy_corpus):
    texts, labels = toy_corpus
    with pytest.raises(ValueError, match="ema_horizon"):
        make_pipeline("fcsr", ema_horizon=value).fit(texts, labels)
