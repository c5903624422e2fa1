"""The command line: each part reads the options it declares, and refuses the others."""

import pytest

from benchmarks import __main__ as cli
from benchmarks import cost, gpu, select
from benchmarks._options import SPECS, SUITE, read_by, sections
from benchmarks._parts import PARTS, benchmarks


@pytest.fixture
def measured(monkeypatch):
    """The ``(part, size, options)`` that :func:`benchmarks.__main__.main` would measure."""
    calls = []
    monkeypatch.setattr(cli, "_measure", lambda *args: calls.append(args[:3]))
    return calls


def refused(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(argv)
    assert exc.value.code == 2
    return capsys.readouterr().err


def test_set_reads_literals_and_keeps_other_text_as_strings():
    args = cli.parser().parse_args(
        ["cost", "--set", "max_batch_tokens=4096", "--set", "tol=1e-3", "--set", "optimizer=sgd"]
    )
    assert dict(args.set) == {"max_batch_tokens": 4096, "tol": 0.001, "optimizer": "sgd"}


@pytest.mark.parametrize("text", ["max_batch_tokens", "=4096", "max batch=1"])
def test_set_refuses_what_is_not_name_equals_value(text, capsys):
    assert "NAME=VALUE" in refused(["cost", "--set", text], capsys)


def test_every_part_declares_options_of_the_suite_with_what_they_need():
    for name, section, module in benchmarks():
        assert set(module.OPTIONS) <= set(SPECS), (name, section)
        for size in ("quick", "full"):
            if "set" in module.OPTIONS:  # --set goes over the size's overrides
                assert "overrides" in module.SIZES[size], (name, section)
        assert callable(module.run) and callable(module.render)
    for name, part in PARTS.items():
        if sections(part):
            assert set(part.OPTIONS) == {"section"}, name
            assert part.OPTIONS["section"]["choices"] == list(sections(part))
        if "join" in read_by(part):
            assert callable(part.join), name


@pytest.mark.parametrize(
    "argv, part, options",
    [
        (
            "cost --size full --corpus r8-long --model fcsr --threads 2 "
            "--set max_batch_tokens=4096",
            "cost",
            {
                "corpus": ["r8-long"],
                "model": ["fcsr"],
                "threads": 2,
                "set": [("max_batch_tokens", 4096)],
            },
        ),
        ("gpu --precision 32", "gpu", {"precision": ["32"]}),
        ("select --grid default --jobs 2", "select", {"grid": "default", "jobs": 2}),
        (
            "cost --section paper-length --threads 2",
            "cost",
            {"section": "paper-length", "threads": 2},
        ),
        ("gpu --section cores --corpus mr", "gpu", {"section": "cores", "corpus": ["mr"]}),
    ],
)
def test_a_part_takes_the_options_it_reads(argv, part, options, measured):
    cli.main(argv.split())
    assert measured == [(part, "full" if "full" in argv else "quick", options)]


def test_several_parts_take_the_options_every_one_of_them_reads(measured):
    cli.main(["accuracy", "explain", "--corpus", "mr", "--threads", "2"])
    assert [name for name, _, _ in measured] == ["accuracy", "explain"]
    assert all(options == {"corpus": ["mr"], "threads": 2} for _, _, options in measured)


def test_a_run_without_parts_runs_all_but_gpu_with_the_suites_options(measured):
    cli.main(["--size", "quick"])
    assert [name for name, _, _ in measured] == [n for n in PARTS if n != "gpu"]


@pytest.mark.parametrize(
    "argv, message",
    [
        (["params", "--set", "tol=0"], "params does not read --set"),
        (["export", "--threads", "2"], "export does not read --threads"),
        (["translation", "--corpus", "mr"], "translation does not read --corpus"),
        (["accuracy", "--grid", "speed"], "accuracy does not read --grid"),
        (["explain", "--model", "lama"], "explain does not read --model"),
        (["latency", "--model", "lama"], "latency does not read --model"),
        (["accuracy", "params", "--jobs", "2"], "params does not read --jobs"),
        (["--threads", "2"], "params does not read --threads (a run without parts"),
        (["cost", "--precision", "32"], "cost --section pipelines does not read --precision"),
        (["cost", "--section", "doc-length", "--set", "tol=0"], "doc-length does not read --set"),
        (
            ["cost", "--section", "doc-length", "--model", "lama"],
            "doc-length does not read --model",
        ),
        (["gpu", "--section", "cores", "--threads", "2"], "cores does not read --threads"),
        (["cost", "--section", "cores"], "cost has no section 'cores'"),
        (["select", "--grid", "nope"], "select --grid: nope is not among"),
        (["gpu", "--precision", "64"], "gpu --precision: 64 is not among"),
        (["side", "--join", "a", "--model", "fcsr"], "--join measures nothing"),
        (["multilabel", "side", "--join", "a"], "--join writes the report of one part"),
        (["accuracy", "--render-only", "--corpus", "mr"], "--render-only measures nothing"),
        (["nope"], "unknown part(s) nope"),
    ],
)
def test_an_option_a_part_does_not_read_is_refused_naming_both(argv, message, measured, capsys):
    err = refused(argv, capsys)
    assert message in err
    assert measured == []


def test_the_refusal_names_what_the_part_reads_and_who_reads_the_option(capsys):
    err = refused(["params", "--set", "tol=0"], capsys)
    assert "params reads --size, --out-dir, --render-only;" in err
    assert "the parts that read --set: accuracy, cost (pipelines, corpus-size), select" in err


def test_a_parts_help_lists_its_options_only(capsys):
    assert cli.main(["cost", "--section", "doc-length", "--help"]) is None
    text = capsys.readouterr().out
    assert "--threads" in text and "--section" in text
    assert "--set" not in text and "--model" not in text and "--grid" not in text
    cli.main(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert all(flag in text for flag, _, _ in [*SPECS.values(), *SUITE.values()])
    assert "read by gpu (device, epoch)" in text  # --precision


def test_configure_puts_the_options_over_the_sizes_settings():
    module, cfg, threads, corpora = cli.configure(
        "cost", "quick", {"set": [("max_batch_tokens", 4096)], "corpus": ["mr"]}
    )
    assert module is cost.pipelines and threads == 1 and corpora == ["mr"]
    assert cfg["overrides"] == {"max_epochs": 2, "max_batch_tokens": 4096}
    assert cost.pipelines.SIZES["quick"]["overrides"] == {"max_epochs": 2}
    module, cfg, _, _ = cli.configure("gpu", "full", {"section": "cores", "model": ["duo"]})
    assert module is gpu.cores and cfg["models"] == ["duo"]
    module, cfg, _, _ = cli.configure("select", "full", {"grid": "speed", "reuse": "d"})
    assert module is select and (cfg["grid"], cfg["reuse"]) == ("speed", "d")


def test_corpus_size_grows_one_corpus():
    with pytest.raises(SystemExit, match="give --corpus once"):
        cost.corpus_size.run(cost.corpus_size.SIZES["quick"], 1, ["mr", "r8"], print)
