"""The choices of the ``select`` part's rules, on made-up CV rows."""

from benchmarks import select
from benchmarks.select import MARGIN, TOLERANCE, by_cost, candidates, fastest_within


def test_speed_candidates_scale_each_default_learning_rate_with_the_batch():
    from sklearn_lama import DuoClassifier, LAMAClassifier

    for model, estimator in (("lama", LAMAClassifier()), ("duo", DuoClassifier())):
        batches = [c for lever, c in candidates("speed", model) if lever == "batch"]
        scaled = [c for c in batches if "lr" in c]
        sizes = [c["batch_size"] for c in scaled]
        assert sizes == [estimator.batch_size * k for k in (2, 4, 8)]
        for c in scaled:
            growth = c["batch_size"] / estimator.batch_size
            assert abs(c["lr"] / estimator.lr - growth**0.5) < 0.01


def test_the_fastest_option_within_the_tolerance_is_chosen():
    base = ({}, 0.75, 10.0)
    slower = ({"a": 1}, 0.80, 20.0)
    faster_close = ({"b": 1}, 0.75 - TOLERANCE / 2, 4.0)
    faster_worse = ({"c": 1}, 0.75 - 2 * TOLERANCE, 1.0)
    assert fastest_within([base, slower, faster_close, faster_worse], 0.75) is faster_close
    assert fastest_within([base, slower], 0.75) is base


def _rows(model, table):
    return [
        {"corpus": "mr", "model": model, "candidate": c, "accuracy": acc, "fit_cpu_s": cpu}
        for c, acc, cpu in table
    ]


def test_levers_are_combined_and_the_combination_kept_when_it_stays_close():
    batch, vectors = {"batch_size": 128}, {"emb__epochs": 5}
    levers = [("base", {}), ("batch", batch), ("vectors", vectors)]
    rows = _rows("lama", [({}, 0.75, 10.0), (batch, 0.75, 5.0), (vectors, 0.749, 7.0)])
    tried = []

    def cv_more(jobs):
        tried.extend(jobs)
        return _rows("lama", [(jobs[0][1], 0.7495, 3.0)])

    chosen, picks = by_cost("lama", rows, "mr", levers, lambda msg: None, cv_more)
    assert tried == [("lama", {**batch, **vectors})]
    assert chosen == {**batch, **vectors}
    assert picks == [batch, vectors]

    def worse(jobs):
        return _rows("lama", [(jobs[0][1], 0.70, 3.0)])

    rows = _rows("lama", [({}, 0.75, 10.0), (batch, 0.75, 5.0), (vectors, 0.749, 7.0)])
    assert by_cost("lama", rows, "mr", levers, lambda msg: None, worse)[0] == batch


def _on(corpus, model, table):
    return [
        {"corpus": corpus, "model": model, "candidate": c, "accuracy": acc, "fit_cpu_s": 1.0}
        for c, acc in table
    ]


def test_a_choice_that_fails_on_another_corpus_keeps_only_the_levers_that_hold():
    batch, vectors = {"batch_size": 128}, {"emb__epochs": 5}
    both = {**batch, **vectors}
    rows = _on("mr", "lama", [({}, 0.75), (both, 0.75)])
    rows += _on("r8", "lama", [({}, 0.96), (both, 0.95)])
    fitted = []

    def cv_on(corpus, jobs):
        fitted.extend((corpus, c) for _, c in jobs)
        scores = {"r8": {"batch_size": 0.96, "emb__epochs": 0.94}, "mr": {"batch_size": 0.75}}
        return _on(corpus, "lama", [(c, scores[corpus][next(iter(c))]) for _, c in jobs])

    chosen = select.hold_on(
        "lama", rows, ["mr", "r8"], both, [batch, vectors], lambda m: None, cv_on
    )
    assert chosen == batch
    # The single levers on the failing corpus, then the kept one where it was not measured.
    assert fitted == [("r8", batch), ("r8", vectors), ("mr", batch)]


def test_when_the_kept_levers_fail_together_the_fastest_one_that_holds_is_chosen():
    batch, patience = {"batch_size": 128}, {"patience": 1}
    both = {**batch, **patience}
    rows = _on("mr", "lama", [({}, 0.75), (both, 0.75), (batch, 0.75), (patience, 0.75)])
    rows += _on("r8", "lama", [({}, 0.96), (both, 0.95)])
    rows = [dict(r, fit_cpu_s=2.0 if r["candidate"] == patience else 1.0) for r in rows]

    def cv_on(corpus, jobs):
        return [
            dict(r, fit_cpu_s=2.0 if r["candidate"] == patience else 1.0)
            for r in _on(corpus, "lama", [(c, 0.959) for _, c in jobs])
        ]

    chosen = select.hold_on(
        "lama", rows, ["mr", "r8"], both, [batch, patience], lambda m: None, cv_on
    )
    assert chosen == batch


def test_a_choice_that_holds_is_kept_without_more_fits():
    both = {"batch_size": 128, "emb__epochs": 5}
    rows = _on("mr", "lama", [({}, 0.75), (both, 0.75)]) + _on(
        "r8", "lama", [({}, 0.96), (both, 0.96)]
    )

    def cv_on(corpus, jobs):
        raise AssertionError("nothing more to fit")

    assert select.hold_on("lama", rows, ["mr", "r8"], both, [both], print, cv_on) == both


def test_margin_rule_combines_the_levers_that_beat_the_base_and_keeps_the_base_otherwise(
    monkeypatch,
):
    grid = {
        "name": "g",
        "base": {"lama": {"x": 0}},
        "levers": {
            "lama": [("reference", {"x": -1}), ("base", {}), ("a", {"a": 1}), ("b", {"b": 1})]
        },
    }
    monkeypatch.setitem(select.GRIDS, "g", grid)
    base, a, b = {"x": 0}, {"x": 0, "a": 1}, {"x": 0, "b": 1}
    table = [({"x": -1}, 0.70, 1.0), (base, 0.75, 1.0), (a, 0.75 + 2 * MARGIN, 1.0)]
    fitted = []

    def cv_more(jobs):
        fitted.extend(jobs)
        return _rows("lama", [(jobs[0][1], 0.75 + 3 * MARGIN, 1.0)])

    # Both levers beat the base by more than the margin: their combination is fitted and wins.
    rows = _rows("lama", table + [(b, 0.75 + 2 * MARGIN, 1.0)])
    assert select.by_margin("g", "lama", rows, "mr", None, cv_more) == {"x": 0, "a": 1, "b": 1}
    assert fitted == [("lama", {"x": 0, "a": 1, "b": 1})]
    # Gains within the margin leave the base.
    rows = _rows(
        "lama", [({"x": -1}, 0.70, 1.0), (base, 0.75, 1.0), (a, 0.754, 1.0), (b, 0.7, 1.0)]
    )
    assert select.by_margin("g", "lama", rows, "mr", None, cv_more) == base


def test_every_grid_starts_each_model_with_its_base_or_reference_then_base():
    for name, grid in select.GRIDS.items():
        for model, levers in grid["levers"].items():
            first = [lever for lever, _ in levers[:2]]
            assert first in (["reference", "base"], ["base", "batch"]), (name, model)


def test_a_margin_choice_below_the_base_on_another_corpus_gives_way_to_the_base():
    grid = {"base": {"duo": {}}}
    lr = {"lr": 1e-3}
    rows = _on("mr", "duo", [({}, 0.75), (lr, 0.76)])
    lower = rows + _on("r8", "duo", [({}, 0.971), (lr, 0.969)])
    assert select.held("duo", lower, ["mr", "r8"], lr, grid, print) == {}
    level = rows + _on("r8", "duo", [({}, 0.971), (lr, 0.971)])
    assert select.held("duo", level, ["mr", "r8"], lr, grid, print) == lr
