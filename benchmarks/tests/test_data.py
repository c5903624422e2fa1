"""The long-document corpus."""

import numpy as np

from benchmarks._data import long_documents


def _short_corpus():
    rng = np.random.default_rng(0)
    labels = np.array(["a", "b", "c"] * 40, dtype=object)
    texts = [
        " ".join(f"{c}{rng.integers(50)}" for _ in range(rng.integers(5, 40))) for c in labels
    ]
    return texts, labels


def test_long_documents_lengths_words_and_labels():
    texts, labels = _short_corpus()
    out, out_labels = long_documents(texts, labels, 200_000, seed=0, longest=5_000)
    lengths = np.array([len(t.split()) for t in out])
    assert lengths.sum() >= 200_000
    assert lengths.max() == 5_000
    assert lengths.min() >= 10
    # A log-normal of mean 500: the sample mean is near it, the median well below.
    assert 350 < lengths.mean() < 700
    assert np.median(lengths) < lengths.mean()
    # Every word of a document comes from documents of its own label.
    for text, label in zip(out, out_labels):
        assert {w[0] for w in text.split()} == {label}
    assert set(out_labels) == set(labels)


def test_long_documents_are_deterministic():
    texts, labels = _short_corpus()
    first = long_documents(texts, labels, 20_000, seed=3, longest=2_000)
    second = long_documents(texts, labels, 20_000, seed=3, longest=2_000)
    assert first[0] == second[0]
    assert list(first[1]) == list(second[1])
