"""Fingerprints of fitted models, for showing that a change alters no result (or by how much).

Fits the three README pipelines on MR (``random_state=0``, ``--max-epochs``
epochs, every ``--every``-th training document) and records their test-split
probabilities, then a small :class:`DuoTranslator` on the gettext pairs
installed here (``--no-translator`` skips it), recording its translations and
BLEU. Each fit prints its accuracy, wall and CPU seconds and a digest of the
probabilities (equal digests: the same probabilities to 6 decimals), so a
whole-process run per version, alternated, is also a timing A/B. Run it on
two versions of the library and compare the files::

    python -m benchmarks.equivalence --out before.npz     # on the old commit
    python -m benchmarks.equivalence --out after.npz      # on the new one
    python -m benchmarks.equivalence --compare before.npz after.npz

(``python -m benchmarks equivalence ...`` is the same command.)
"""

import argparse
import hashlib
import time

import numpy as np

from ._models import OURS, make


def fingerprints(max_epochs=3, every=1, translator=True, n_pairs=4000):
    """``{name: array}``: the pipelines' probabilities and the translator's BLEU and output."""
    from sklearn_lama import DuoTranslator
    from sklearn_lama.datasets import load_gettext, load_mr

    train, y_train = load_mr(subset="train", return_X_y=True)
    test, y_test = load_mr(subset="test", return_X_y=True)
    out = {}
    for name in OURS:
        start, cpu = time.perf_counter(), time.process_time()
        model = make(name, seed=0, max_epochs=max_epochs).fit(train[::every], y_train[::every])
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu
        proba = out[f"{name}_proba"] = model.predict_proba(test)
        accuracy = np.mean(model.classes_[proba.argmax(1)] == np.asarray(y_test))
        digest = hashlib.sha1(np.round(proba, 6).tobytes()).hexdigest()[:10]
        print(
            f"{name}: accuracy {accuracy:.4f}, fit {wall:.1f} s ({cpu:.1f} CPU s), "
            f"probabilities {digest}",
            flush=True,
        )
    if translator:
        en, fr = load_gettext("fr", subset="train", return_X_y=True)
        en_test, fr_test = load_gettext("fr", subset="test", return_X_y=True)
        model = DuoTranslator(
            d_model=64,
            n_heads=4,
            d_ff=128,
            n_layers=1,
            vocab_size=1000,
            max_epochs=15,
            warmup_steps=100,
            random_state=0,
        ).fit(en[:n_pairs], fr[:n_pairs])
        out["translator_bleu"] = np.array([model.score(en_test[:200], fr_test[:200])])
        out["translator_output"] = model.predict(en_test[:200]).astype(str)
    return out


def compare(before, after, atol=1e-6):
    """Print the largest difference of each fingerprint; True when all are within ``atol``."""
    a, b = np.load(before), np.load(after)
    same = True
    for key in sorted(a.files):
        if a[key].dtype.kind in "US":
            equal = bool(np.array_equal(a[key], b[key]))
            print(f"{key}: {'identical' if equal else 'DIFFERENT'}")
        else:
            diff = float(np.max(np.abs(a[key] - b[key])))
            equal = diff <= atol
            print(f"{key}: max |difference| {diff:.3g}")
        same &= equal
    return same


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.equivalence", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--out", help="write the fingerprints to this .npz file")
    parser.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"))
    parser.add_argument("--max-epochs", type=int, default=3)
    parser.add_argument("--every", type=int, default=1, help="every n-th training document")
    parser.add_argument("--no-translator", action="store_true")
    args = parser.parse_args(argv)
    if args.compare:
        raise SystemExit(0 if compare(*args.compare) else 1)
    found = fingerprints(args.max_epochs, args.every, not args.no_translator)
    if args.out:
        np.savez(args.out, **found)


if __name__ == "__main__":
    main()
