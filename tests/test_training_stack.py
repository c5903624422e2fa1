"""The training layer's pieces that all estimators share: time budget, epoch cuts, seq2seq net."""

import dataclasses
import math
import warnings

import numpy as np
import pytest
import torch
from skorch.callbacks import Callback
from torch.nn import functional as F

from sklearn_lama import DuoTranslator, LAMAClassifier, load_weights
from sklearn_lama.base import _trained
from sklearn_lama.training import _net
from sklearn_lama.training._batching import PairBatches
from sklearn_lama.training._callbacks import (
    EpochCut,
    HoldOutStopping,
    TimeBudget,
    build_callbacks,
)
from sklearn_lama.training._driver import TrainingResult, train
from sklearn_lama.training._seq2seq import transformer_schedule
from sklearn_lama.training._splits import hold_out
from sklearn_lama.utils._random import derive_seed
from tests._tolerances import Exact, assert_identical

from .test_translator import BRIEF, EN, FR

IDS = np.random.RandomState(0).randint(1, 12, size=(64, 6))
IDS_Y = (IDS[:, 0] > 6).astype(int)


class _CutAfter(EpochCut):
    def __init__(self, batches):
        self.batches = batches

    def ends_epoch(self, net):
        return len(net.history[-1, "batches"]) >= self.batches


class _ValidationData(Callback):
    def on_epoch_end(self, net, dataset_valid=None, **kwargs):
        self.valid = dataset_valid


def _dataset(net):
    return next(cb for _, cb in net.callbacks_ if isinstance(cb, _ValidationData))


def _classifier(**params):
    return LAMAClassifier(
        n_heads=2, hidden_size=4, mlp_hidden=8, batch_size=8, random_state=0, **params
    )


def test_time_budget_stops_a_classifier_after_one_batch():
    clf = _classifier(max_epochs=5, max_time=1e-9)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # stopped by the budget: not an interruption
        clf.fit(IDS, IDS_Y)
    history = clf.net_.history
    assert len(history) == 1 and history[0, "train_batch_count"] == 1
    assert history[0, "seconds"] > 0


def test_time_budget_counts_what_was_spent_before_training():
    clf = _classifier(max_epochs=2, early_stopping=False)
    config = clf._training_config()
    budget = build_callbacks(config, None, None, None, [], spent=100.0)[-1]
    assert isinstance(budget, TimeBudget) and budget.spent == 100.0
    seconds = clf.fit(IDS, IDS_Y).net_.history[:, "seconds"]
    assert len(seconds) == 2 and 0 < seconds[0] < seconds[1] < 100


def _stopping_run(scores, tol, patience, scoring="loss"):
    """Epochs run and the epoch whose weights are kept, early stopping fed ``scores``."""
    from skorch.history import History

    class Net:
        verbose = 0
        history = History()
        module_ = torch.nn.Linear(1, 1, bias=False)

    net = Net()
    stopping = HoldOutStopping(scoring, tol=tol, patience=patience, sink=lambda *a, **k: None)
    stopping.on_train_begin(net)
    for epoch, score in enumerate(scores, 1):
        net.history.new_epoch()
        net.history.record("epoch", epoch)
        net.history.record(stopping.monitor, score)
        with torch.no_grad():
            net.module_.weight.fill_(epoch)  # the weights name their epoch
        try:
            stopping.on_epoch_end(net)
        except KeyboardInterrupt:
            break
    stopping.on_train_end(net)
    return len(net.history), int(net.module_.weight.item())


@pytest.mark.parametrize(
    "losses, tol, patience, expected",
    [
        # Every decrease counts at tol=0; the weights of the last, lowest epoch stay.
        ([1.0, 0.5, 0.4996, 0.499, 0.3], 0.0, 2, (5, 5)),
        # Two decreases under tol: stopped after epoch 4, which has the lowest loss.
        ([1.0, 0.5, 0.4996, 0.499, 0.3], 1e-3, 2, (4, 4)),
        # Rises: stopped, the weights of the lowest loss (epoch 2) restored.
        ([1.0, 0.5, 0.6, 0.7, 0.1], 0.0, 2, (4, 2)),
        # Small decreases are measured from the lowest loss so far, as scikit-learn
        # does, not from the last epoch that improved by more than tol.
        ([1.0, 0.9994, 0.9988, 0.9982, 0.5], 1e-3, 3, (4, 4)),
    ],
)
def test_early_stopping_counts_decreases_over_tol_and_keeps_the_lowest_loss(
    losses, tol, patience, expected
):
    assert _stopping_run(losses, tol, patience) == expected


@pytest.mark.parametrize(
    "accuracies, tol, patience, expected",
    [
        # A perfect hold-out cannot improve: stopped after patience epochs, the
        # first epoch that reached it kept.
        ([1.0, 1.0, 1.0, 1.0], 0.0, 2, (3, 1)),
        # Every rise counts at tol=0; a tie is not a rise.
        ([0.5, 0.6, 0.6, 0.7, 0.7, 0.7], 0.0, 2, (6, 4)),
        # Rises under tol count towards patience; the best accuracy is kept.
        ([0.5, 0.8, 0.802, 0.803, 0.9], 0.005, 2, (4, 4)),
        # A fall: the weights of the highest accuracy (epoch 2) restored.
        ([0.5, 0.8, 0.7, 0.6, 0.95], 0.0, 2, (4, 2)),
    ],
)
def test_early_stopping_on_accuracy_counts_rises_over_tol_and_keeps_the_best(
    accuracies, tol, patience, expected
):
    assert _stopping_run(accuracies, tol, patience, scoring="accuracy") == expected


def test_early_stopping_parameters_are_its_own_and_clone():
    from sklearn.base import clone

    stopping = HoldOutStopping("accuracy", tol=0.01, patience=2, sink=print)
    assert clone(stopping).get_params() == {
        "scoring": "accuracy",
        "tol": 0.01,
        "patience": 2,
        "sink": print,
    }


def _epochs_until_stopped(scores, patience, higher_is_better):
    """The epochs a rule with ``tol=0`` runs on ``scores``: until ``patience`` misses in a row."""
    best, misses = -np.inf, 0
    for epoch, score in enumerate(scores, 1):
        score = score if higher_is_better else -score
        misses = 0 if score > best else misses + 1
        best = max(best, score)
        if misses == patience:
            return epoch
    return len(scores)


def test_scoring_accuracy_stops_when_the_hold_out_accuracy_stops_rising():
    params = dict(max_epochs=30, patience=2, tol=0.0, validation_fraction=0.25, lr=0.02)
    by_loss = _classifier(**params).fit(IDS, IDS_Y)
    by_accuracy = _classifier(scoring="accuracy", **params).fit(IDS, IDS_Y)
    loss_history, history = by_loss.net_.history, by_accuracy.net_.history
    accuracies = history[:, "valid_acc"]
    # Each fit ran exactly as long as its own rule says, on its own hold-out score
    # (the two trajectories are not compared: they are two calls).
    assert len(history) == _epochs_until_stopped(accuracies, 2, True) < 30
    assert len(loss_history) == _epochs_until_stopped(loss_history[:, "valid_loss"], 2, False)
    kept = int(np.argmax(accuracies))
    assert history[kept, "valid_acc_best"] and by_accuracy.n_epochs_ == len(history)
    with pytest.raises(ValueError, match="scoring"):
        _classifier(scoring="f1").fit(IDS, IDS_Y)


def test_tol_stops_a_fit_after_patience_epochs_without_a_large_enough_decrease():
    clf = _classifier(max_epochs=6, patience=2, tol=1e9, validation_fraction=0.5)
    clf.fit(IDS, IDS_Y)
    assert len(clf.net_.history) == 3
    with pytest.raises(ValueError, match="tol"):
        _classifier(tol=-1.0).fit(IDS, IDS_Y)


class _TrainingPredictions(Callback):
    """Records whether the training batches' predictions reach the callbacks with a graph."""

    def initialize(self):
        self.graphs_ = []
        return self

    def on_batch_end(self, net, training=False, y_pred=None, **kwargs):
        if training:
            parts = y_pred if isinstance(y_pred, tuple) else (y_pred,)
            self.graphs_.append(any(part.grad_fn is not None for part in parts))


@pytest.mark.parametrize(
    "fit",
    [
        lambda callback: _classifier(max_epochs=2, callbacks=[callback]).fit(IDS, IDS_Y),
        lambda callback: DuoTranslator(**{**BRIEF, "callbacks": [callback]}).fit(EN, FR),
    ],
    ids=["classifier", "translator"],
)
def test_training_predictions_reach_the_callbacks_without_their_graph(fit):
    # The train_acc score keeps every training batch's predictions until the epoch
    # ends; with their graphs (a node per recurrence step) memory grew through every
    # epoch by the graph of each batch.
    callback = _TrainingPredictions()
    fitted = fit(callback)
    assert callback.graphs_ and not any(callback.graphs_)
    assert all(np.isfinite(row["train_loss"]) for row in fitted.net_.history)


def test_epoch_cut_ends_every_epoch_early():
    clf = _classifier(max_epochs=3, early_stopping=False, callbacks=[_CutAfter(2)])
    history = clf.fit(IDS, IDS_Y).net_.history
    assert history[:, "train_batch_count"] == [2, 2, 2]  # of 8 batches per epoch


def test_pair_batches_shift_the_targets_for_teacher_forcing():
    data = PairBatches(
        [np.array([5, 6]), np.array([7])], [np.array([2, 8, 9, 3]), np.array([2, 10, 3])]
    )
    assert data.lengths.tolist() == [3, 2]
    inputs, following = data.__getitems__([0, 1])
    assert inputs["src_ids"].tolist() == [[5, 6], [7, 0]]
    assert inputs["tgt_ids"].tolist() == [[2, 8, 9], [2, 10, 3]]
    assert following.tolist() == [[8, 9, 3], [10, 3, 0]]


def test_validation_loss_is_unsmoothed_cross_entropy_per_target_token():
    mt = DuoTranslator(
        **{**BRIEF, "max_epochs": 1, "label_smoothing": 0.3, "early_stopping": True},
        callbacks=[_ValidationData()],
        validation_fraction=0.35,  # 12 of the 32 pairs: at least the 10 of the rule
        max_batch_tokens=16,  # several validation batches of different sizes
    ).fit(EN * 2, FR * 2)
    net = mt.net_
    valid = _dataset(net).valid
    inputs, following = valid.__getitems__(list(range(len(valid))))
    module = net.module_.eval()
    with torch.no_grad():
        logits = module(inputs["src_ids"], inputs["tgt_ids"])
    total = F.cross_entropy(
        logits.reshape(-1, logits.shape[-1]),
        following.reshape(-1),
        ignore_index=0,
        reduction="sum",
    )
    expected = float(total) / int((following != 0).sum())
    assert len(net.history[0, "batches"]) > 2
    assert net.history[0, "valid_loss"] == pytest.approx(expected, rel=1e-5)
    assert net.history[0, "valid_perplexity"] == pytest.approx(math.exp(expected), rel=1e-5)


def test_transformer_schedule_warms_up_then_decays():
    assert transformer_schedule(0, 10) == pytest.approx(0.1)
    assert transformer_schedule(9, 10) == pytest.approx(1.0)
    assert transformer_schedule(39, 10) == pytest.approx(0.5)


@pytest.mark.parametrize("optimizer", ["adam", "sgd"])
def test_cpu_optimizer_step_is_fused_and_takes_the_unfused_step(optimizer, monkeypatch):
    # The fused kernel is the speed path; the update must stay the one torch defines.
    # One step (one batch, one epoch): later Adam steps amplify float rounding on
    # parameters whose gradients are near zero, which is not a different update.
    params = dict(optimizer=optimizer, max_epochs=1, early_stopping=False)
    fused = _classifier(**params).set_params(batch_size=len(IDS)).fit(IDS, IDS_Y)
    assert fused.net_.optimizer_.defaults["fused"] is True
    monkeypatch.setattr(_net, "_FUSED_DEVICES", ())
    plain = _classifier(**params).set_params(batch_size=len(IDS)).fit(IDS, IDS_Y)
    assert plain.net_.optimizer_.defaults["fused"] is False
    expected = plain.net_.module_.state_dict()
    for name, value in fused.net_.module_.state_dict().items():
        torch.testing.assert_close(value, expected[name], rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------- the training boundary
def test_the_config_decides_the_hold_out():
    config = _classifier(validation_fraction=0.1)._training_config()
    strata = np.arange(200) % 2
    assert len(hold_out(config, 200, 0).valid_rows) == 20
    assert len(hold_out(config, 200, 0, strata).valid_rows) == 20
    off = dataclasses.replace(config, early_stopping=False)
    assert hold_out(off, 200, 0) is None and hold_out(off, 200, 0, strata) is None


def test_validation_rows_come_in_order_of_length():
    # Validation batches of similar lengths pad little (the translator's rule too).
    ids = IDS.copy()
    lengths = np.random.RandomState(1).randint(1, ids.shape[1] + 1, size=len(ids))
    ids[np.arange(ids.shape[1]) >= lengths[:, None]] = 0
    record = _ValidationData()
    _classifier(max_epochs=1, validation_fraction=0.5, callbacks=[record]).fit(ids, IDS_Y)
    held = record.valid.dataset.lengths[record.valid.indices]
    assert len(held) == len(ids) // 2 and np.all(np.diff(held) >= 0)
    rows = np.sort(record.valid.indices)
    assert np.any(np.diff(lengths[rows]) < 0)  # in their own order they are not sorted


def test_fit_calls_the_driver_once_with_explicit_arguments(monkeypatch):
    calls = []

    def recording(*args, **kwargs):
        calls.append((args, kwargs))
        result = train(*args, **kwargs)
        assert isinstance(result, TrainingResult)
        return result

    monkeypatch.setattr(_trained, "train", recording)
    clf = _classifier(max_epochs=2, early_stopping=False).fit(IDS, IDS_Y)
    [(args, kwargs)] = calls
    assert args[1] is not None and args[0] is not clf  # the data, never the estimator
    assert kwargs["split"] is None and kwargs["config"].early_stopping is False
    assert clf.n_epochs_ == len(clf.net_.history) == 2
    # The translator's fit goes through the same call.
    mt = DuoTranslator(**{**BRIEF, "max_epochs": 1}).fit(EN, FR)
    [_, (args, kwargs)] = calls
    assert args[1] is None and kwargs["config"].owner == "DuoTranslator"
    assert len(mt.history_) == 1


def test_the_estimator_gets_its_net_when_training_returns(tmp_path):
    # The checkpoints write the model in training without it: the estimator
    # sets its fitted attributes once, from what the driver returns.
    class _HasNet(Callback):
        def on_epoch_end(self, net, **kwargs):
            seen.append(hasattr(clf, "net_"))

    seen = []
    path = tmp_path / "lama.safetensors"
    clf = _classifier(max_epochs=2, early_stopping=False, checkpoint=path, callbacks=[_HasNet()])
    clf.fit(IDS, IDS_Y)
    assert seen == [False, False]
    # Without validation every epoch is written: the file holds the final weights.
    saved = load_weights(clf.checkpoint_path_)
    assert_identical(saved.predict_proba(IDS), clf.predict_proba(IDS), why=Exact.COPY)
    assert saved.checkpoint_path_ == clf.checkpoint_path_ and saved.temperature_ is None


@pytest.mark.parametrize("n_rows", [16, 40])
def test_the_translator_and_the_classifiers_hold_out_by_one_rule(n_rows):
    # 16 rows at 0.25 hold out 4, fewer than the rule's 10 (the translator used
    # to early-stop on them); 40 rows hold out 10, the same rows for both.
    params = {"early_stopping": True, "validation_fraction": 0.25, "max_epochs": 1}
    mt = DuoTranslator(**{**BRIEF, **params}).fit((EN * 3)[:n_rows], (FR * 3)[:n_rows])
    indicator = np.stack([IDS_Y, 1 - IDS_Y], axis=1)  # several labels: not stratified
    clf = _classifier(**params).fit(IDS[:n_rows], indicator[:n_rows])
    expected = hold_out(clf._training_config(), n_rows, derive_seed(0))
    assert (expected is None) == (n_rows == 16)
    for net in (mt.net_, clf.net_):
        if expected is None:
            assert net.train_split is None and "valid_loss" not in net.history[-1]
        else:
            assert sorted(net.train_split.valid_rows) == sorted(expected.valid_rows)
