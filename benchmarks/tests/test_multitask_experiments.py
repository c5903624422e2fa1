"""The multi-task experiments of the benchmarks: batching, and the comparison over seeds."""

from benchmarks import multitask_batches as mb

# The stamp fields the reports print.
_META = {
    "date": "d",
    "git_commit": "c",
    "command": "x",
    "loadavg_start": 1,
    "loadavg_end": 1,
    "machine": {"cpu": "cpu", "cores": 2},
}


def _rows(grouped, mixed, grouped_cpu=100.0, mixed_cpu=120.0):
    rows = []
    for batching, acc, cpu in (("grouped", grouped, grouped_cpu), ("mixed", mixed, mixed_cpu)):
        for fold in range(2):
            rows.append(
                {
                    "model": "lama",
                    "batching": batching,
                    "fold": fold,
                    "mr": acc,
                    "r8": acc,
                    "fit_cpu_s": cpu / 2,
                }
            )
    return rows


def test_summary_averages_folds_and_tasks_and_sums_cost():
    rows = _rows(0.8, 0.7)
    rows[0]["mr"] = 0.6  # grouped, fold 0
    summary = mb.summarise(rows)
    assert summary["lama", "grouped"]["mr"] == 0.7
    assert abs(summary["lama", "grouped"]["mean"] - 0.75) < 1e-12
    assert summary["lama", "mixed"]["fit_cpu_s"] == 120.0


def test_rule_takes_the_more_accurate_unless_the_other_is_close_and_cheaper():
    assert mb.choose(mb.summarise(_rows(0.80, 0.79)))[0] == "grouped"
    assert mb.choose(mb.summarise(_rows(0.79, 0.80)))[0] == "mixed"
    # Within the tolerance, the cheaper one.
    assert mb.choose(mb.summarise(_rows(0.799, 0.800)))[0] == "grouped"
    assert mb.choose(mb.summarise(_rows(0.799, 0.800, 130.0, 120.0)))[0] == "mixed"


def test_report_names_the_choice():
    assert "**mixed**" in mb.markdown(_META, _rows(0.79, 0.80))


def test_seed_table_gives_mean_gaps_per_task():
    from benchmarks import multitask_seeds as ms

    def row(seed, joint_mr, separate_mr):
        return {
            "model": "duo",
            "seed": seed,
            "joint_mr": joint_mr,
            "separate_mr": separate_mr,
            "joint_r8": 0.97,
            "separate_r8": 0.96,
            "joint_fit_cpu_s": 10.0,
            "separate_fit_cpu_s": 12.0,
        }

    rows = [row(1, 0.78, 0.77), row(0, 0.76, 0.77)]
    t = ms.table(rows)["duo"]
    assert t["seeds"] == [0, 1] and t["mr"] == ([0.76, 0.78], [0.77, 0.77])
    line = [x for x in ms.markdown(_META, rows).splitlines() if x.startswith("| duo")][0]
    # MR: joint 0.77 ± 0.01 against 0.77, gap 0; R8: +1 point.
    assert "0.7700 ± 0.0100" in line and "+0.00" in line and "+1.00" in line
