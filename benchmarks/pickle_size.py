"""Size of the README's LAMA pipeline saved each way, by the installed release.

Fits ``Word2VecVectorizer → LAMAClassifier`` on MR's training split with
the defaults (``random_state=0``) and ``max_epochs=3``, and measures the
bytes of ``joblib.dump`` (no compression), ``pickle.dumps``,
``save_weights`` and ``skops.io.dumps`` (or the error the release gives).
Only the public API is used, so any release runs it: from this checkout's
root, ``python -m benchmarks.pickle_size``; for another release, from a
folder holding its ``sklearn_lama`` and a copy of this file,
``python pickle_size.py <this checkout>/benchmarks/results``.

It adds the release's row to ``pickle_size.json`` in that folder
(``benchmarks/results`` by default) and rewrites ``pickle_size.md`` from
all rows.
"""

import io
import json
import os
import pickle
import sys
import tempfile
from pathlib import Path

import joblib
import torch
from sklearn.pipeline import Pipeline

import sklearn_lama
from sklearn_lama import LAMAClassifier, Word2VecVectorizer, save_weights
from sklearn_lama.datasets import load_mr

RESULTS = Path(__file__).resolve().parent / "results"


def sizes(pipe):
    """``{format: bytes or the error's name}`` of ``pipe`` saved each way."""
    buffer = io.BytesIO()
    joblib.dump(pipe, buffer)
    out = {"joblib": len(buffer.getvalue()), "pickle": len(pickle.dumps(pipe))}
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "model.safetensors")
        save_weights(pipe, path)
        out["save_weights"] = os.path.getsize(path)
    try:
        import skops.io

        out["skops"] = len(skops.io.dumps(pipe))
    except Exception as exc:  # what the release gives is the result
        out["skops"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:80]}"
    return out


def main(results=RESULTS):
    results = Path(results)
    texts, labels = load_mr(return_X_y=True)
    pipe = Pipeline(
        [
            ("emb", Word2VecVectorizer(random_state=0)),
            ("clf", LAMAClassifier(random_state=0, max_epochs=3)),
        ]
    ).fit(texts, labels)
    row = {
        "sklearn_lama": sklearn_lama.__version__,
        "torch": torch.__version__,
        "vocabulary": len(pipe["emb"].vocabulary_),
        "epochs": int(pipe["clf"].n_epochs_),
        **sizes(pipe),
    }
    path = results / "pickle_size.json"
    rows = json.loads(path.read_text()) if path.exists() else []
    rows = [r for r in rows if r["sklearn_lama"] != row["sklearn_lama"]] + [row]
    path.write_text(json.dumps(rows, indent=1) + "\n")
    lines = [
        "# Size of the README's LAMA pipeline (MR, defaults, 3 epochs), bytes",
        "",
        "Written by `benchmarks/pickle_size.py` under each release.",
        "",
        "| release | vocabulary | joblib | pickle | save_weights | skops |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        cells = [r[k] for k in ("joblib", "pickle", "save_weights", "skops")]
        cells = [f"{c:,}" if isinstance(c, int) else c for c in cells]
        lines.append(f"| {r['sklearn_lama']} | {r['vocabulary']:,} | " + " | ".join(cells) + " |")
    (results / "pickle_size.md").write_text("\n".join(lines) + "\n")
    print(json.dumps(row), file=sys.stderr)


if __name__ == "__main__":
    main(*sys.argv[1:])
