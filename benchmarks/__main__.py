"""Command line of the suite: ``python -m benchmarks [PART ...] [options]``.

Every part measures one question on the shared harness and writes
``<name>.json`` (every measurement and the configuration), ``<name>.rst`` (the
tables the docs include) and ``<name>.png`` to the output folder, stamped with
the date, machine, versions, commit and load. ``--size``, ``--out-dir`` and
``--render-only`` apply to every part; any other option is read by some parts
only (``python -m benchmarks PART --help`` lists a part's), and an option
that a part named does not read is refused: with several parts, each of them
must read it. ``equivalence`` is the one same-results check between two
versions: ``python -m benchmarks equivalence --help``.
"""

import argparse
import glob
import os
import sys
import time

from . import _options
from ._env import ROOT, stamp
from ._options import MODES, SPECS, SUITE, benchmark, flag, read_by, readers, sections
from ._parts import DEFAULT, PARTS, benchmarks, part_of, read
from ._report import write


def parser(names=None, section=None, strict=True):
    """The command line of the parts ``names`` (all when None).

    With ``names``, the options are the suite's and those every part named
    reads (with its ``section``), each with the first part's help. Without,
    every option of every part, each saying which parts read it. ``strict=False``
    leaves every option unset unless given and its values unchecked: the
    first pass of :func:`main`, which then checks them part by part.
    """
    p = argparse.ArgumentParser(
        prog="python -m benchmarks" + (" " + " ".join(names) if names else ""),
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        add_help=strict,
    )
    if names is None or not strict:
        p.add_argument(
            "parts",
            nargs="*",
            metavar="part",
            help=f"among {', '.join(PARTS)} (default: all but gpu, in that order)",
        )
    for name in SUITE:
        _options.add(p, name, suppress=not strict)
    for name in SPECS:
        if names is None or not strict:
            read = f"{SPECS[name][2]} (read by {', '.join(readers(PARTS, name))})"
            _options.add(p, name, read, suppress=not strict)
            continue
        declared = [read_by(PARTS[n], section).get(name, False) for n in names]
        if all(d is not False for d in declared):
            _options.add(p, name, declared[0])
    return p


def _refuse(p, name, section, option, why=""):
    part = PARTS[name]
    if sections(part):  # the section read, given or the default
        section = section or next(iter(sections(part)))
    who = name + (f" --section {section}" if sections(part) else "")
    own = [flag(o) for o in SUITE] + [flag(o) for o in read_by(part, section)]
    others = readers(PARTS, option)
    p.error(
        f"{who} does not read {flag(option)}{why}; {who} reads {', '.join(own)}; "
        + (f"the parts that read {flag(option)}: {', '.join(others)}" if others else "")
    )


def _check(p, names, given, default_run):
    """Refuse what a part named (every part of a run without names) does not read."""
    section = given.get("section")
    why = " (a run without parts runs every part but gpu)" if default_run else ""
    for name in names:
        part = PARTS[name]
        options = read_by(part, section if section in sections(part) else None)
        for option in given:
            if option not in SUITE and option not in options:
                _refuse(p, name, section, option, why)
        for option, declaration in options.items():
            choices = isinstance(declaration, dict) and declaration.get("choices")
            values = given.get(option)
            values = values if isinstance(values, list) else [values]
            if choices and option in given and any(v not in choices for v in values):
                p.error(
                    f"{name} {flag(option)}: {', '.join(map(str, values))} is not among "
                    f"{', '.join(choices)}"
                )
    modes = [m for m in MODES if given.get(m)]
    if modes:
        other = [o for o in given if o not in (*SUITE, *MODES)]
        if other:
            p.error(f"{flag(modes[0])} measures nothing: it does not read {flag(other[0])}")
        if len(modes) > 1:
            p.error(f"{flag(modes[0])} and {flag(modes[1])} are two ways to measure nothing")
    if given.get("join") and len(names) != 1:
        p.error(f"--join writes the report of one part, not of {', '.join(names)}")


def configure(name, size, options):
    """``(module, cfg, threads, corpora)`` of a measurement of the part ``name``.

    ``options`` are the values given on the command line (absent: not given),
    all of them read by the part: :func:`main` refused the others. The
    configuration is the size's, with the options over it.
    """
    part = PARTS[name]
    section = options.get("section")
    module = benchmark(part, section)
    reads = read_by(part, section)
    assert set(options) <= set(reads), set(options) - set(reads)
    cfg = dict(module.SIZES[size])
    for option in ("jobs", "reuse", "grid", "precision"):
        if option in options:
            cfg[option] = options[option]
    if "model" in options:
        cfg["models"] = options["model"]
    if "set" in options:
        cfg["overrides"] = {**cfg["overrides"], **dict(options["set"])}
    # A part that does not read --threads runs its cells on one thread.
    threads = options.get("threads", 1)
    return module, cfg, threads, options.get("corpus")


def _measure(name, size, options, out_dir, command):
    print(f"== {name} ({size}) ==", flush=True)
    module, cfg, threads, corpora = configure(name, size, options)
    meta = stamp(size, threads)
    start = time.perf_counter()
    payload = module.run(cfg, threads, corpora, lambda msg: print("  " + msg, flush=True))
    if "device" in payload:  # a part that ran its cells on a device (gpu) names it
        meta["machine"]["device"] = payload["device"]["device"]
    meta.update(
        wall_s=time.perf_counter() - start,
        loadavg_end=round(os.getloadavg()[0], 2),
        command=command,
    )
    _write(module, meta, payload, out_dir)
    print(f"  {name}: {meta['wall_s']:.0f} s", flush=True)


def _write(module, meta, payload, out_dir):
    report, plot = module.render(dict(payload, meta=meta))
    for path in write(report, meta, payload, plot, out_dir):
        print("  wrote " + os.path.relpath(path, ROOT))


def _render_again(names, out_dir):
    """Rewrite the rst and PNG of the JSON results in ``out_dir`` of the parts ``names``."""
    for path in sorted(glob.glob(os.path.join(out_dir, "*.json"))):
        stem = os.path.basename(path)[: -len(".json")]
        found = part_of(stem)
        if found is None or found[0] not in names:
            continue
        meta, payload = read(path)
        try:
            _write(found[2], meta, payload, out_dir)
        except KeyError as exc:  # a result in the layout of an earlier version of its part
            print(f"  {stem}: not rendered, an earlier layout (no {exc})")


def _join(name, dirs, out_dir, command):
    """Write one report of a part from the JSON results of its runs in ``dirs`` (``--join``)."""
    module = PARTS[name]
    payloads = []
    for d in dirs:
        meta, payload = read(os.path.join(d, module.NAME + ".json"))
        payloads.append(dict(payload, meta=meta))
    meta = dict(payloads[0]["meta"])
    meta.update(
        date=max(p["meta"]["date"] for p in payloads),
        wall_s=sum(p["meta"]["wall_s"] for p in payloads),
        loadavg_start=max(p["meta"]["loadavg_start"] for p in payloads),
        loadavg_end=max(p["meta"]["loadavg_end"] for p in payloads),
        git_commit=" / ".join(dict.fromkeys(p["meta"]["git_commit"] for p in payloads)),
        command=command,
    )
    _write(module, meta, module.join(payloads), out_dir)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["equivalence"]:
        from . import equivalence

        return equivalence.main(argv[1:])
    # First pass: every option of every part, to find the parts and what was given.
    loose = parser(strict=False)
    given = vars(loose.parse_intermixed_args([a for a in argv if a not in ("-h", "--help")]))
    names = given.pop("parts")
    unknown = [n for n in names if n not in PARTS]
    if unknown:
        loose.error(f"unknown part(s) {', '.join(unknown)}; choose among {', '.join(PARTS)}")
    section = given.get("section")
    for name in names:
        found = sections(PARTS[name])
        if section is not None and found and section not in found:
            parser(names).error(f"{name} has no section {section!r}: one of {', '.join(found)}")
    strict = parser(names or None, section)
    if "-h" in argv or "--help" in argv:
        strict.print_help()
        return None
    _check(strict, names or DEFAULT, given, default_run=not names)
    names = names or DEFAULT
    size = given.pop("size", "quick")
    out_dir = given.pop("out_dir", None) or os.path.join(
        ROOT, "benchmarks", "results", *(["quick"] if size == "quick" else [])
    )
    command = "python -m benchmarks " + " ".join(argv)
    if given.pop("render_only", False):
        _render_again(names, out_dir)
    elif "join" in given:
        _join(names[0], given["join"], out_dir, command)
    else:
        for name in names:
            _measure(name, size, given, out_dir, command)


__all__ = ["PARTS", "DEFAULT", "benchmarks", "configure", "main", "parser", "part_of"]

if __name__ == "__main__":
    main()
