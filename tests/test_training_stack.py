"""The training layer's pieces that all estimators share: time budget, epoch cuts, seq2seq net."""

import math
import warnings

import numpy as np
import pytest
import torch
from skorch.callbacks import Callback
from torch.nn import functional as F

from sklearn_lama import DuoTranslator, LAMAClassifier
from sklearn_lama.training import _net
from sklearn_lama.training._batching import PairBatches
from sklearn_lama.training._callbacks import EpochCut, TimeBudget, build_callbacks
from sklearn_lama.training._seq2seq import transformer_schedule

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
        validation_fraction=0.25,
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
