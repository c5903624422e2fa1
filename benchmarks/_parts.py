"""The suite's parts, the module of each results file, and the reports rendered from them.

A *part* is what the command line names (``cost``); a part with sections
(``SECTIONS``) measures one question per section module. Either way the
module that measures (a *benchmark*) has ``NAME`` (the stem of its results
files; ``STEMS`` when it writes several), ``SIZES``, ``OPTIONS``,
``run(cfg, threads, corpora, log)`` and ``render(payload)``. A results file
``<stem>.json`` belongs to the benchmark with the longest name that is
``stem`` or a prefix of it followed by ``-`` (``scaling-length`` is
``doc-length``'s, ``scaling-mr`` is ``corpus-size``'s).
"""

import glob
import json
import os

from . import (
    accuracy,
    batch_rule,
    cost,
    explain,
    export,
    gpu,
    latency,
    multilabel,
    params,
    select,
    side,
    stopping,
    translation,
    workers,
)
from ._env import ROOT, describe
from ._options import sections

PARTS = {
    "params": params,
    "accuracy": accuracy,
    "cost": cost,
    "select": select,
    "translation": translation,
    "multilabel": multilabel,
    "export": export,
    "latency": latency,
    "explain": explain,
    "side": side,
    "workers": workers,
    "batch_rule": batch_rule,
    "stopping": stopping,
    "gpu": gpu,
}
# A run without parts runs these; the GPU part runs when named.
DEFAULT = [name for name in PARTS if name != "gpu"]
RESULTS = os.path.join(ROOT, "benchmarks", "results")


def benchmarks(names=None):
    """``[(part name, section or None, module)]`` of every benchmark of the parts ``names``."""
    out = []
    for name in names or PARTS:
        found = sections(PARTS[name])
        out += [(name, s, module) for s, module in found.items()] or [(name, None, PARTS[name])]
    return out


def stems(module):
    return getattr(module, "STEMS", (module.NAME,))


def part_of(stem):
    """``(part name, section or None, module)`` of the results file ``<stem>.json``, else None."""
    best, length = None, -1
    for entry in benchmarks():
        for name in stems(entry[2]):
            if (stem == name or stem.startswith(name + "-")) and len(name) > length:
                best, length = entry, len(name)
    return best


def read(path):
    """``(meta, payload)`` of a results file; the payload is named after the file."""
    with open(path) as fh:
        payload = json.load(fh)
    meta = payload.pop("meta")
    payload.setdefault("name", os.path.basename(path)[: -len(".json")])
    return meta, payload


def render(path, underline="-", named=False):
    """``(rst text, plot)`` of the results file ``path``, rendered by its benchmark.

    The text is the stamp (what ran, where, when) and the tables, as
    ``python -m benchmarks --render-only`` writes them (``underline`` the
    title's; ``named``: the title ends with the file's name, which tells
    apart the results of one benchmark on a page). ``plot(fig)`` draws its
    figure.
    """
    meta, payload = read(path)
    _, _, module = part_of(payload["name"])
    report, plot = module.render(dict(payload, meta=meta))
    title = f"{report.title} ({os.path.basename(path)})" if named else None
    return report.rst(describe(meta), underline, title), plot


def write_docs(out_dir, results=RESULTS):
    """Write ``<stem>.rst`` of every results file in ``results`` to ``out_dir``; return the stems.

    Also ``<stem>.png`` where the results folder keeps a figure of that
    result (the suite's plots of some results say little). The
    documentation's Results page includes them (``docs/conf.py``), so its
    tables and figures are those of the JSON files, whatever was committed
    beside them. The titles, each ending with its file's name, are underlined
    with ``~``: sections of the page's parts.
    """
    import warnings

    from ._report import figure

    os.makedirs(out_dir, exist_ok=True)
    written = []
    for path in sorted(glob.glob(os.path.join(results, "*.json"))):
        stem = os.path.basename(path)[: -len(".json")]
        text, plot = render(path, underline="~", named=True)
        target = os.path.join(out_dir, stem)
        with open(target + ".rst", "w") as fh:
            fh.write(text)
        if os.path.exists(path[: -len(".json")] + ".png"):
            with warnings.catch_warnings():  # matplotlib's layout notes
                warnings.simplefilter("ignore")
                figure(plot, read(path)[0], target + ".png")
        written.append(stem)
    return written


def options_table():
    """The options each part (each section of a part) reads, as an rst table.

    The Benchmarks page includes it (``docs/conf.py``): it is the parts'
    own declarations, so it cannot drift from what the command line takes.
    """
    from ._options import SUITE, flag, read_by

    rows = []
    for name, section, _ in benchmarks():
        options = read_by(PARTS[name], section)
        who = f"``{name}``" + (f" ``--section {section}``" if section else "")
        rows.append(
            [who, ", ".join(f"``{flag(o)}``" for o in options) or "those of every part only"]
        )
    rows.append(["every part", ", ".join(f"``{flag(o)}``" for o in SUITE)])
    columns = ["part", "options it reads"]
    widths = [max(len(r[i]) for r in [columns, *rows]) for i in range(2)]
    rule = "  ".join("=" * w for w in widths)

    def line(cells):
        return "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()

    return "\n".join([rule, line(columns), rule, *map(line, rows), rule, ""])
