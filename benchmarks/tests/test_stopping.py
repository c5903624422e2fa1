"""The stopping part: the fits it runs, in which order, and its report."""

from benchmarks import stopping


def test_each_seed_fits_both_rules_alternating_which_goes_first(monkeypatch):
    calls = []

    def fake_cell(target, threads, kwargs):
        calls.append((kwargs["seed"], kwargs["scoring"]))
        return {"seconds": 1.0, "epochs": 2, "accuracy": 0.5, "n_fit": 8}

    monkeypatch.setattr(stopping, "run_cell", fake_cell)
    cfg = {"train_limit": 10, "seeds": [0, 1, 2], "models": ["duo"]}
    payload = stopping.run(cfg, 1, ["r8-long"], lambda line: None)
    assert calls == [
        (0, "loss"), (0, "accuracy"), (1, "accuracy"), (1, "loss"), (2, "loss"), (2, "accuracy"),
    ]  # fmt: skip
    assert payload["name"] == "stopping-r8-long" and len(payload["results"]) == 6


def test_the_report_sets_each_rule_against_the_loss_rules_fit():
    def row(scoring, seconds, epochs, accuracy, seed):
        return dict(corpus="imdb", model="duo", scoring=scoring, seed=seed, seconds=seconds,
                    epochs=epochs, accuracy=accuracy)  # fmt: skip

    rows = [
        row("loss", 100.0, 8, 0.90, 0),
        row("loss", 80.0, 6, 0.92, 1),
        row("accuracy", 45.0, 3, 0.91, 0),
        row("accuracy", 45.0, 3, 0.89, 1),
        {**row("accuracy", 1.0, 1, 0.1, 2), "error": "failed"},  # counts for nothing
    ]
    payload = {"name": "stopping-imdb", "config": {"train_limit": None, "threads": 2,
               "seeds": [0, 1]}, "results": rows}  # fmt: skip
    rst = stopping.render(payload)[0].rst([])
    rows = [line for line in rst.splitlines() if line.startswith("imdb")]
    loss_line, accuracy_line = rows  # loss first
    assert "7.0" in loss_line and "90.0" in loss_line and "1.00x" in loss_line
    assert "0.9100 (±0.0100)" in loss_line
    assert "3.0" in accuracy_line and "2.00x" in accuracy_line
    assert "0.9000 (±0.0100)" in accuracy_line
    assert "duo, seed 2, scoring accuracy: failed" in rst
