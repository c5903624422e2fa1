"""The long-document corpus and the speed part's choice rule."""

import numpy as np

from benchmarks._data import long_documents
from benchmarks.speed import TOLERANCE, admissible, choose


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


def test_speed_choice_takes_the_cheapest_lever_within_tolerance():
    levers = ["baseline", "cheap", "cheaper"]
    # (CV accuracy, wall seconds, CPU seconds)
    ok = [(0.75, 10, 10), (0.75 - TOLERANCE / 2, 5, 5), (0.75 - 2 * TOLERANCE, 2, 2)]
    assert choose(levers, ok) == "cheap"
    better = [(0.75, 10, 10), (0.76, 5, 5), (0.77, 2, 2)]
    assert choose(levers, better) == "cheaper"
    worse = [(0.75, 10, 10), (0.74, 5, 5), (0.73, 2, 2)]
    assert choose(levers, worse) == "baseline"
    failed = [(0.75, 10, 10), (float("nan"), float("nan"), float("nan")), (0.75, 20, 20)]
    assert choose(levers, failed) == "baseline"


def test_speed_choice_must_hold_on_every_corpus():
    levers = ["baseline", "cheap", "cheaper"]
    ok = [(0.75, 10, 10), (0.75, 5, 5), (0.75, 2, 2)]
    # "cheaper" was not admissible on the confirming corpus: the next cheapest is.
    assert choose(levers, ok, [["baseline", "cheap"]]) == "cheap"
    assert choose(levers, ok, [["cheap", "cheaper"], ["baseline"]]) == "baseline"
    assert admissible(levers, ok) == ["cheaper", "cheap", "baseline"]


def test_speed_lever_must_be_cheaper_than_the_baseline():
    levers = ["baseline", "dearer"]
    more_accurate_but_dearer = [(0.75, 10, 10), (0.76, 12, 11)]
    assert admissible(levers, more_accurate_but_dearer) == ["baseline"]
    assert choose(levers, more_accurate_but_dearer) == "baseline"
