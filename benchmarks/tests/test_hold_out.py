"""The hold_out driver: every fit takes the value measured and the settings of ``--set``."""

import re

from benchmarks import hold_out


def test_each_fit_takes_the_value_and_the_fixed_settings(capsys):
    hold_out.main(
        [
            "--model",
            "duo",
            "--corpus",
            "mr",
            "--limit",
            "200",
            "--param",
            "clf__batch_size",
            "--value",
            "16",
            "--set",
            "clf__max_epochs=1",
            "--seed",
            "0",
            "--jobs",
            "1",
        ]
    )
    printed = capsys.readouterr().out
    # One epoch (the setting) where Duo's defaults train up to 100 with early stopping.
    assert re.search(r"clf__batch_size=16, seed 0: [\d.]+ s, 1 epochs, hold-out accuracy", printed)
    assert "clf__batch_size=16: accuracy" in printed
