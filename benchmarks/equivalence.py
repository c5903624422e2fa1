"""Fingerprints of fitted models, for showing that a refactoring changes no result.

Fits the three README pipelines on MR for 3 epochs (``random_state=0``) and
records their test-split probabilities, and a small :class:`DuoTranslator`
on the gettext pairs installed here, recording its translations and BLEU.
Run it on two versions of the library and compare the files::

    python -m benchmarks.equivalence --out before.npz     # on the old commit
    python -m benchmarks.equivalence --out after.npz      # on the new one
    python -m benchmarks.equivalence --compare before.npz after.npz
"""

import argparse
import time

import numpy as np

from ._models import OURS, make


def fingerprints(n_pairs=4000):
    """``{name: array}``: the pipelines' probabilities and the translator's BLEU and output."""
    from sklearn_lama import DuoTranslator
    from sklearn_lama.datasets import load_gettext, load_mr

    train, y_train = load_mr(subset="train", return_X_y=True)
    test, _ = load_mr(subset="test", return_X_y=True)
    out = {}
    for name in OURS:
        start = time.process_time()
        model = make(name, seed=0, max_epochs=3).fit(train, y_train)
        out[f"{name}_proba"] = model.predict_proba(test)
        print(f"{name}: {time.process_time() - start:.1f} CPU s", flush=True)
    en, fr = load_gettext("fr", subset="train", return_X_y=True)
    en_test, fr_test = load_gettext("fr", subset="test", return_X_y=True)
    translator = DuoTranslator(
        d_model=64,
        n_heads=4,
        d_ff=128,
        n_layers=1,
        vocab_size=1000,
        max_epochs=15,
        warmup_steps=100,
        random_state=0,
    ).fit(en[:n_pairs], fr[:n_pairs])
    out["translator_bleu"] = np.array([translator.score(en_test[:200], fr_test[:200])])
    out["translator_output"] = translator.predict(en_test[:200]).astype(str)
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
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="write the fingerprints to this .npz file")
    parser.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"))
    args = parser.parse_args(argv)
    if args.compare:
        raise SystemExit(0 if compare(*args.compare) else 1)
    np.savez(args.out, **fingerprints())


if __name__ == "__main__":
    main()
