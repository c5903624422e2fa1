"""Write one part's results: JSON (everything), reStructuredText (tables), PNG (plot).

A report is a list of blocks (paragraphs, bullet lists, tables) rendered as
reStructuredText, which the docs include and GitHub shows as it is.
"""

import json
import math
import os


def sig(x, digits=3):
    """``x`` to ``digits`` significant digits, with thousands separators, never as an exponent."""
    if x == 0 or not math.isfinite(x):
        return f"{x:g}"
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(x))))
    return f"{x:,.{decimals}f}"


class Report:
    """The text of one part's results, built block by block.

    Parameters
    ----------
    name : str
        File stem of the outputs.
    title : str
        Heading of the Markdown and rst documents.
    """

    def __init__(self, name, title):
        self.name = name
        self.title = title
        self.blocks = []

    def text(self, paragraph):
        self.blocks.append(("text", paragraph))

    def bullets(self, items):
        self.blocks.append(("bullets", list(items)))

    def table(self, columns, rows):
        """Add a table; cells are strings (format numbers before)."""
        self.blocks.append(("table", list(columns), [[str(c) for c in row] for row in rows]))

    def _render(self, head, table, tail):
        out = list(head)
        for kind, *body in self.blocks:
            if kind == "text":
                out += [body[0], ""]
            elif kind == "bullets":
                out += [f"- {item}" for item in body[0]] + [""]
            else:
                out += table(*body) + [""]
        return "\n".join(out + tail)

    def rst(self, stamp_lines, underline="-", title=None):
        # Underlined with "-": included below a docs page's "=" title, this
        # becomes a section of that page rather than a page of its own (the
        # Results page nests each result in its part's section: "~").
        title = title or self.title
        head = [title, underline * len(title), ""] + [f"- {line}" for line in stamp_lines] + [""]
        return self._render(head, _rst_table, [])


def _rst_table(columns, rows):
    widths = [max(len(r[i]) for r in [columns] + rows) for i in range(len(columns))]
    rule = "  ".join("=" * w for w in widths)

    def line(cells):
        return "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()

    return [rule, line(columns), rule] + [line(r) for r in rows] + [rule]


def write(report, meta, payload, plot, out_dir):
    """Write ``<name>.{json,rst,png}`` under ``out_dir``; return their paths.

    ``plot(fig)`` draws the part's figure; the stamp goes in its footer so a
    plot copied elsewhere still says where it was measured.
    """
    from ._env import describe

    os.makedirs(out_dir, exist_ok=True)
    stem = os.path.join(out_dir, report.name)
    with open(stem + ".json", "w") as fh:
        json.dump({"meta": meta, **payload}, fh, indent=1)
    with open(stem + ".rst", "w") as fh:
        fh.write(report.rst(describe(meta)))
    figure(plot, meta, stem + ".png")
    return [stem + ext for ext in (".json", ".rst", ".png")]


def figure(plot, meta, path):
    """Draw ``plot(fig)`` with the stamp ``meta`` in its footer, to the PNG file ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    fig = plt.figure(figsize=(11, 4.6))
    plot(fig)
    v, m = meta["versions"], meta["machine"]
    fig.text(
        0.01,
        0.01,
        f"{meta['date']} | {m['cpu']}, {m['cores']} cores, {m['device']}, "
        f"{meta['torch_threads']} torch thread(s) | torch {v['torch']}, scikit-learn "
        f"{v['scikit-learn']}, skorch {v['skorch']}, gensim {v['gensim']}, numpy {v['numpy']} | "
        f"size {meta['size']}",
        fontsize=7,
        color="0.35",
    )
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)
