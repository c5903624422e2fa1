"""The command line: classifier parameters set for a run (``--set``)."""

import pytest

from benchmarks import cost
from benchmarks.__main__ import parser


def test_set_reads_literals_and_keeps_other_text_as_strings():
    args = parser().parse_args(
        ["cost", "--set", "max_batch_tokens=4096", "--set", "tol=1e-3", "--set", "optimizer=sgd"]
    )
    assert dict(args.set) == {"max_batch_tokens": 4096, "tol": 0.001, "optimizer": "sgd"}


@pytest.mark.parametrize("text", ["max_batch_tokens", "=4096", "max batch=1"])
def test_set_refuses_what_is_not_name_equals_value(text, capsys):
    with pytest.raises(SystemExit):
        parser().parse_args(["cost", "--set", text])
    assert "NAME=VALUE" in capsys.readouterr().err


def test_cost_passes_the_settings_to_its_section_over_the_sizes(monkeypatch):
    seen = {}
    monkeypatch.setitem(cost.SECTIONS, "pipelines", lambda cfg, *args: seen.update(cfg))
    cfg = dict(cost.SIZES["quick"], overrides={"max_batch_tokens": 4096})
    cost.run(cfg, 1, None, print)
    assert seen["overrides"] == {"max_epochs": 2, "max_batch_tokens": 4096}


def test_cost_refuses_settings_for_a_section_that_takes_none():
    cfg = dict(cost.SIZES["quick"], section="doc-length", overrides={"tol": 0.0})
    with pytest.raises(SystemExit, match="takes no classifier parameters"):
        cost.run(cfg, 1, None, print)
