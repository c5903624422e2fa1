"""The options of ``python -m benchmarks``: the suite's own, and those each part declares.

The suite's options (:data:`SUITE`: ``--size``, ``--out-dir``,
``--render-only``) apply to every part. Any other option is read by some
parts only, so each part, or each section of a part with sections, declares
the options it reads in ``OPTIONS``: a dict from a name of :data:`SPECS` to
what the option means for that part (its help), or to a dict of argparse
keyword arguments that adds to the spec (``help``, ``choices``). A part with
sections (``SECTIONS``, a dict of section name to module) reads its own
``OPTIONS`` (``--section``) and those of the section chosen (the first when
none is given).

The command line refuses an option that a part named on it does not read;
with several parts, every one of them must read it. So an option is never
silently ignored.
"""

import argparse
import ast


def literal(text):
    """A value given on the command line: a Python literal, else the text."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def setting(text):
    """``NAME=VALUE`` of ``--set`` as ``(name, value)``: the value a :func:`literal`."""
    name, sep, value = text.partition("=")
    if not sep or not name.isidentifier():
        raise argparse.ArgumentTypeError(f"{text!r} is not NAME=VALUE (e.g. tol=0.001)")
    return name, literal(value)


# The options of every part: flag, argparse keyword arguments and help.
SUITE = {
    "size": (
        "--size",
        {"choices": ["quick", "full"], "default": "quick"},
        "quick: minutes, checks the suite (its numbers are not results); full: the results",
    ),
    "out_dir": (
        "--out-dir",
        {"default": None},
        "default: benchmarks/results (full) or benchmarks/results/quick (quick)",
    ),
    "render_only": (
        "--render-only",
        {"action": "store_true"},
        "measure nothing: rewrite the .rst and .png of the parts' JSON results in the output "
        "folder",
    ),
}
# The options some parts read: flag, argparse keyword arguments and the generic help
# (a part's declaration says what the option means for it).
SPECS = {
    "threads": (
        "--threads",
        {"type": int, "default": 1},
        "torch/BLAS threads of every measurement (default 1: on a shared CPU, multi-threaded "
        "small operations stall on barriers and timings become noise)",
    ),
    "corpus": (
        "--corpus",
        {"action": "append", "metavar": "NAME_OR_PATH"},
        "'r8', 'mr', 'r8-long', a directory with train.jsonl[.gz] and test.jsonl[.gz], or one "
        ".jsonl[.gz] file (split 80/20); repeatable (default: the part's)",
    ),
    "model": (
        "--model",
        {"action": "append", "metavar": "NAME"},
        "only these pipelines (names of benchmarks/_models.py); repeatable",
    ),
    "set": (
        "--set",
        {"action": "append", "type": setting, "metavar": "NAME=VALUE"},
        "a parameter of our classifiers in every pipeline measured, over the size's settings "
        "(e.g. max_batch_tokens=4096; the value a Python literal, else a string); repeatable",
    ),
    "jobs": ("--jobs", {"type": int}, "cells at a time (default: the size's)"),
    "reuse": ("--reuse", {"metavar": "DIR"}, "take results measured before from DIR"),
    "grid": ("--grid", {}, "the candidates"),
    "section": ("--section", {}, "the question of the part measured"),
    "precision": ("--precision", {"action": "append"}, "only these precisions; repeatable"),
    "join": (
        "--join",
        {"action": "append", "metavar": "DIR"},
        "measure nothing: one report of the part from the JSON results of its runs in these "
        "folders; repeatable",
    ),
}
# Options that replace a measurement: given, a part reads no other option of SPECS.
MODES = ("render_only", "join")


def flag(name):
    return (SUITE.get(name) or SPECS[name])[0]


def sections(part):
    """``{section: module}`` of a part with sections, else ``{}``."""
    return getattr(part, "SECTIONS", {})


def benchmark(part, section=None):
    """The module that measures ``part`` (``section``'s, for a part with sections)."""
    found = sections(part)
    if not found:
        return part
    return found[section] if section is not None else next(iter(found.values()))


def read_by(part, section=None):
    """``{option: declaration}`` of the options of :data:`SPECS` that ``part`` reads.

    For a part with sections: its own and those of ``section`` (the first
    section when None).
    """
    options = dict(getattr(part, "OPTIONS", {}))
    if sections(part):
        options.update(benchmark(part, section).OPTIONS)
    return options


def readers(parts, name):
    """Who reads the option ``name`` among ``parts`` (``{part name: part}``), as text."""
    out = []
    for part_name, part in parts.items():
        if name in getattr(part, "OPTIONS", {}):
            out.append(part_name)
            continue
        found = [s for s, module in sections(part).items() if name in module.OPTIONS]
        if found:
            out.append(f"{part_name} ({', '.join(found)})")
    return out


def add(parser, name, declaration=None, suppress=False):
    """Add the option ``name`` to ``parser``, with a part's ``declaration`` over the spec."""
    option, kwargs, help_text = SUITE.get(name) or SPECS[name]
    kwargs = dict(kwargs, help=help_text)
    if isinstance(declaration, str):
        kwargs["help"] = declaration
    elif declaration:
        kwargs.update(declaration)
    if suppress:
        # Parsing every option of every part: what a part may take is checked after.
        kwargs["default"] = argparse.SUPPRESS
        kwargs.pop("choices", None)
    parser.add_argument(option, dest=name, **kwargs)
