"""The batch_rule part: which learning-rate rule its report chooses."""

import pytest

from benchmarks import batch_rule


def _row(rule, accuracy, workers=2, seed=0):
    return {
        "corpus": "imdb",
        "model": "duo",
        "workers": workers,
        "rule": rule,
        "seed": seed,
        "seconds": 10.0,
        "epochs": 3,
        "accuracy": accuracy,
    }


def test_the_rule_of_best_mean_hold_out_accuracy_is_chosen_over_the_workers():
    rows = [
        _row(None, 0.99, workers=1),  # one worker: not a rule, never chosen
        _row("1", 0.90),
        _row("1", 0.80, seed=1),
        _row("sqrt(k)", 0.86),
        _row("sqrt(k)", 0.86, seed=1),
        _row("k", 0.70),
        {**_row("k", 0.99), "error": "failed"},  # a failed fit counts for nothing
    ]
    assert batch_rule.chosen(batch_rule._summary(rows)) == {("imdb", "duo"): "sqrt(k)"}


def test_each_rule_scales_the_learning_rate_by_its_factor_of_the_workers():
    factors = [batch_rule.FACTORS[rule](4) for rule in ("1", "sqrt(k)", "k")]
    assert factors == pytest.approx([1, 2, 4])
