"""The multi-label part of the benchmarks (benchmarks.multilabel): ECE, cell order, targets."""

import numpy as np
import pytest

from benchmarks import multilabel


def _two_classes(confidence, right):
    """Two-class probabilities, class 0 on top at ``confidence``; ``y`` right or not."""
    confidence = np.asarray(confidence, dtype=float)
    proba = np.stack([confidence, 1 - confidence], axis=1)
    return proba, np.where(right, 0, 1)


def test_ece_is_zero_when_confidence_matches_accuracy():
    proba, y = _two_classes([0.8] * 10, [True] * 8 + [False] * 2)
    assert multilabel.expected_calibration_error(proba, y) == pytest.approx(0.0)


def test_ece_of_a_sure_model_right_half_the_time():
    proba, y = _two_classes([1.0] * 4, [True, False, True, False])
    assert multilabel.expected_calibration_error(proba, y) == pytest.approx(0.5)


def test_ece_errors_of_separate_bins_do_not_cancel():
    # Under-confident at 0.9 (all right), over-confident at 0.6 (half right):
    # the pooled accuracy equals the pooled confidence, each bin is off by 0.1.
    proba, y = _two_classes([0.9, 0.9, 0.6, 0.6], [True, True, True, False])
    assert multilabel.expected_calibration_error(proba, y) == pytest.approx(0.1)


def test_cells_measure_what_only_this_part_measures_first():
    cells = multilabel.cells({"models": ["fcsr", "duo"]})
    assert cells[0] == ("multilabel", "multilabel_cell", {"model": "tfidf_lr"})
    sections = [section for section, _, _ in cells]
    assert sections.count("multitask") == 2 and sections.count("calibrated_cv") == 4
    assert sections[-2:] == ["multilabel", "multilabel"]


def _payload(joint_mr, joint_fit_s):
    calibration = {
        "temperature": 1.5,
        "before": {"accuracy": 0.9, "ece": 0.1, "log_loss": 0.3},
        "after": {"accuracy": 0.9, "ece": 0.04, "log_loss": 0.25},
        "fit_s": 10.0,
        "fit_cpu_s": 10.0,
    }
    multitask = {
        "model": "fcsr",
        "joint_mr": joint_mr,
        "separate_mr": 0.78,
        "joint_r8": 0.97,
        "separate_r8": 0.96,
        "joint_fit_s": joint_fit_s,
        "joint_fit_cpu_s": joint_fit_s,
        "separate_fit_s": 20.0,
        "separate_fit_cpu_s": 20.0,
        "calibration_mr": calibration,
        "calibration_r8": calibration,
    }
    return {
        "name": "multilabel",
        "config": {"train_limit": None, "max_epochs": None, "models": ["fcsr"]},
        "results": {"multilabel": [], "multitask": [multitask], "calibrated_cv": []},
    }


@pytest.mark.parametrize(
    "joint_mr, joint_fit_s, verdict",
    [
        (0.776, 15.0, "met"),  # 0.4 point below on MR, above on R8, faster
        (0.774, 15.0, "missed"),  # 0.6 point below on MR
        (0.776, 25.0, "missed"),  # slower than the two separate fits
    ],
)
def test_multitask_target(joint_mr, joint_fit_s, verdict):
    report, _ = multilabel.render(_payload(joint_mr, joint_fit_s))
    table = [body for kind, *body in report.blocks if kind == "table"][1]
    assert table[1][0][-1] == verdict


def test_calibration_target_and_partial_results():
    report, _ = multilabel.render(_payload(0.78, 15.0))
    text = report.rst([])
    # ECE 0.1 -> 0.04 at the same accuracy: halved; no CalibratedClassifierCV row yet.
    assert text.count("target (ECE at least halved, no accuracy cost) met") == 2
    assert "CalibratedClassifierCV (sigmoid" not in text
    assert "Only FCSRClassifier measured" in text


def _run(model, commit):
    payload = _payload(0.776, 15.0)
    payload["config"]["models"] = [model]
    payload["results"]["multitask"][0]["model"] = model
    payload["results"]["multilabel"] = [
        {"model": "tfidf_lr", "micro_f1": 0.96, "macro_f1": 0.8, "fit_s": 5.0},
        {"model": model, "micro_f1": 0.98, "macro_f1": 0.9, "fit_s": 50.0},
    ]
    payload["meta"] = {
        "command": f"python -m benchmarks multilabel --model {model}",
        "git_commit": commit,
        "date": "2026-11-24T23:00:00+00:00",
        "wall_s": 100.0,
        "loadavg_start": 1.0,
        "loadavg_end": 2.0,
    }
    return payload


def test_join_keeps_each_run_rows_and_one_baseline():
    joined = multilabel.join([_run("fcsr", "abc"), _run("lama", "def")])
    assert joined["config"]["models"] == ["lama", "fcsr"]
    rows = joined["results"]["multilabel"]
    assert [(r["model"], r["run"]) for r in rows] == [("tfidf_lr", 0), ("fcsr", 0), ("lama", 1)]
    assert [r["run"] for r in joined["results"]["multitask"]] == [0, 1]
    report, _ = multilabel.render(joined)
    texts = [body[0] for kind, *body in report.blocks if kind == "text"]
    runs = [text for text in texts if text.startswith("Run")]
    assert len(runs) == 2 and "--model lama" in runs[1] and "commit def" in runs[1]
    assert "LAMAClassifier" in runs[1] and "FCSRClassifier" not in runs[1]


def test_join_refuses_a_model_twice_or_runs_of_two_sizes():
    with pytest.raises(ValueError, match="again"):
        multilabel.join([_run("fcsr", "abc"), _run("fcsr", "def")])
    quick = _run("lama", "def")
    quick["config"]["train_limit"] = 800
    with pytest.raises(ValueError, match="another size"):
        multilabel.join([_run("fcsr", "abc"), quick])
