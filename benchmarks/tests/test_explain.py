"""The faithfulness part of the benchmarks (benchmarks.explain) sets the default explanations."""

import json
import os

from benchmarks._env import ROOT
from benchmarks.explain import MODELS, best_methods
from sklearn_lama import DuoClassifier, FCSRClassifier, LAMAClassifier

CLASSES = {"lama": LAMAClassifier, "fcsr": FCSRClassifier, "duo": DuoClassifier}


def test_default_explanations_follow_the_committed_table():
    with open(os.path.join(ROOT, "benchmarks", "results", "explain.json")) as fh:
        payload = json.load(fh)
    assert payload["meta"]["size"] == "full"
    best = best_methods(payload["results"])
    assert set(best) == set(MODELS)
    for model, method in best.items():
        assert CLASSES[model]._default_explanation == method, model
