"""The faithfulness part of the benchmarks (benchmarks.explain) and the defaults it sets."""

import json
import os

import numpy as np
import pytest
from sklearn.pipeline import make_pipeline

from benchmarks._env import ROOT
from benchmarks.explain import MODELS, _without, best_methods, deletion_drops
from sklearn_lama import DuoClassifier, FCSRClassifier, LAMAClassifier, Word2VecVectorizer

CLASSES = {"lama": LAMAClassifier, "fcsr": FCSRClassifier, "duo": DuoClassifier}


@pytest.fixture(scope="module")
def fitted():
    docs = ["a good great film", "a bad awful film", "good plot", "awful plot"] * 10
    labels = ["pos", "neg", "pos", "neg"] * 10
    return make_pipeline(
        Word2VecVectorizer(vector_size=8, min_count=1, random_state=0),
        FCSRClassifier(max_epochs=5, random_state=0),
    ).fit(docs, labels)


def test_without_deletes_the_ranked_positions(fitted):
    sequences = fitted[:-1].transform(["a good great film", "awful plot", ""])
    rankings = [np.array([2, 0, 1, 3]), np.array([1, 0]), np.array([], dtype=int)]
    words = {i: w for w, i in fitted[0].vocabulary_.items()}

    def text(sequences):
        return [[words[i] for i in sequences.document(d)] for d in range(len(sequences))]

    assert text(_without(sequences, rankings, 1)) == [["a", "good", "film"], ["awful"], []]
    assert text(_without(sequences, rankings, 2)) == [["good", "film"], [], []]
    # Deleting more tokens than a document has leaves it empty.
    assert text(_without(sequences, rankings, 9)) == [[], [], []]


def test_deletion_drops_are_the_falls_of_the_explained_probability(fitted):
    sequences = fitted[:-1].transform(["a good great film", "awful plot"])
    classifier = fitted[-1]
    rankings = [np.array([1, 2, 0, 3]), np.array([0, 1])]
    explained = np.array([1, 0])
    drops = deletion_drops(classifier, sequences, rankings, explained, max_k=3)
    assert drops.shape == (2, 3)
    before = classifier.predict_proba(sequences)[[0, 1], explained]
    for k in range(1, 4):
        after = classifier.predict_proba(_without(sequences, rankings, k))[[0, 1], explained]
        np.testing.assert_allclose(drops[:, k - 1], before - after)
    # Both tokens of the second document are gone from k = 2 on.
    assert drops[1, 1] == drops[1, 2]


def test_default_explanations_follow_the_committed_table():
    with open(os.path.join(ROOT, "benchmarks", "results", "explain.json")) as fh:
        payload = json.load(fh)
    assert payload["meta"]["size"] == "full"
    best = best_methods(payload["results"])
    assert set(best) == set(MODELS)
    for model, method in best.items():
        assert CLASSES[model]._default_explanation == method, model
