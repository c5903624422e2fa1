"""Saved models of earlier releases: the committed files load and predict as recorded.

``tests/fixtures/persistence/<version>/`` holds what each release from 0.9.0
on wrote with ``make_fixtures.py`` (the same models saved with
``save_weights`` and ``joblib``, and what they predicted then); the
migrations of :mod:`sklearn_lama.utils._compatibility` and the pickles'
upgrade are tested on them and on files altered as a later release would
have changed them.
"""

import copy
import io
import json
import pickle
import re
from pathlib import Path
from unittest import mock

import joblib
import numpy as np
import pytest
import torch

from sklearn_lama import LAMAClassifier, __version__, load_weights, save_weights
from sklearn_lama.utils import _compatibility
from sklearn_lama.utils._compatibility import IncompatibleFileError, migration, release
from sklearn_lama.utils._state import STATE_KEY, VERSION_KEY
from tests._tolerances import Exact, assert_identical, assert_same_predictions

from .conftest import probability_bound
from .test_persistence import IDS, IDS_Y, _file_bytes, _payload

FIXTURES = Path(__file__).parent / "fixtures" / "persistence"
VERSIONS = sorted(
    (p.name for p in FIXTURES.iterdir() if re.fullmatch(r"\d+\.\d+\.\d+", p.name)), key=release
)
# Models trained on a GPU (make_cuda_fixtures.py), by release.
CUDA_VERSIONS = sorted((p.name for p in (FIXTURES / "cuda").iterdir()), key=release)
CASES = [
    (version, name)
    for version in VERSIONS
    for name in json.loads((FIXTURES / version / "expected.json").read_text())["models"]
]


def _expected(version, name):
    return json.loads((FIXTURES / version / "expected.json").read_text())["models"][name]


def _load(version, name, how):
    path = FIXTURES / version / f"{name}.{'safetensors' if how == 'load_weights' else 'joblib'}"
    return load_weights(path) if how == "load_weights" else joblib.load(path)


def _recording_bound(model, inputs, name):
    """Rounding bound of the probabilities recorded by another machine (another CPU or a GPU).

    The fixtures' networks are the small ones of ``make_fixtures.py`` on
    documents of at most 64 tokens, within conftest's ``ROUNDING``.
    """
    return probability_bound(name.split("_")[0], model, inputs)


def _assert_predicts_as_recorded(model, record, name):
    inputs = record["inputs"]
    if "predict_proba" not in record:  # a translator
        assert model.predict(inputs).tolist() == record["predict"]
        return
    proba = model.predict_proba(inputs)
    expected = record["predict_proba"]
    bound = _recording_bound(model, inputs, name)
    if isinstance(proba, list):  # one array per task
        assert len(proba) == len(expected)
        for p, e in zip(proba, expected):
            np.testing.assert_allclose(p, e, rtol=0, atol=bound)
        expected = [np.asarray(e) for e in expected]
    else:
        np.testing.assert_allclose(proba, expected, rtol=0, atol=bound)
    # Labels decided by the recorded probabilities are the recorded ones; a near tie's may
    # be any class that this machine's rounding can put first.
    assert_same_predictions(
        model.predict(inputs), record["predict"], expected, bound, model.classes_
    )


def test_every_release_from_0_9_0_has_fixtures():
    # make_fixtures.py writes the current release's files before it is released.
    assert VERSIONS[0] == "0.9.0"
    assert __version__ in VERSIONS
    for version in VERSIONS:
        recorded = json.loads((FIXTURES / version / "expected.json").read_text())
        assert recorded["library_version"] == version
        assert set(recorded["models"]) >= {
            "lama",
            "fcsr",
            "duo",
            "lama_multilabel",
            "fcsr_multitask",
            "duo_calibrated",
            "translator",
        }


@pytest.mark.parametrize("how", ["load_weights", "joblib"])
@pytest.mark.parametrize("version, name", CASES)
def test_saved_models_load_and_predict_as_recorded(version, name, how):
    model = _load(version, name, how)
    _assert_predicts_as_recorded(model, _expected(version, name), name)
    # Saved again by this release, it loads as it was.
    buffer = io.BytesIO()
    joblib.dump(model, buffer)
    buffer.seek(0)
    _assert_predicts_as_recorded(joblib.load(buffer), _expected(version, name), name)


@pytest.mark.parametrize("version, name", [c for c in CASES if c[1] in ("lama", "translator")])
def test_loaded_models_keep_their_training_state(version, name, tmp_path):
    by_weights = _load(version, name, "load_weights")
    by_joblib = _load(version, name, "joblib")
    estimator = by_joblib[-1] if hasattr(by_joblib, "steps") else by_joblib
    other = by_weights[-1] if hasattr(by_weights, "steps") else by_weights
    assert estimator.net_.history.to_list() == other.net_.history.to_list()
    moments = estimator.net_.optimizer_.state_dict()["state"]
    assert moments and moments.keys() == other.net_.optimizer_.state_dict()["state"].keys()
    for k, state in moments.items():
        for key, value in state.items():
            assert_identical(
                value, other.net_.optimizer_.state_dict()["state"][k][key], why=Exact.COPY
            )


@pytest.mark.parametrize("how", ["load_weights", "joblib"])
@pytest.mark.parametrize("version", CUDA_VERSIONS)
def test_models_trained_on_a_gpu_load_without_one(version, how):
    if torch.cuda.is_available():
        pytest.skip("tests loading where CUDA is missing")
    record = json.loads((FIXTURES / "cuda" / version / "expected.json").read_text())
    record = record["models"]["lama"]
    suffix = "safetensors" if how == "load_weights" else "joblib"
    path = FIXTURES / "cuda" / version / f"lama.{suffix}"
    if how == "joblib" and release(version) < (0, 10, 0):
        # A 0.9.0 pickle holds the tensors themselves, which torch restores on
        # the GPU before this package sees them; mapped to the CPU as the
        # Reliability page shows, it loads.
        with pytest.raises(RuntimeError, match="map_location"):
            joblib.load(path)

        def to_cpu(data):
            return torch.load(io.BytesIO(data), map_location="cpu", weights_only=False)

        with mock.patch("torch.storage._load_from_bytes", to_cpu), pytest.warns(UserWarning):
            model = joblib.load(path)
    else:
        with pytest.warns(UserWarning, match="device='cuda', which is not available here"):
            model = load_weights(path) if how == "load_weights" else joblib.load(path)
    assert model["clf"].device == "cuda" and str(model["clf"].net_.device) == "cpu"
    # Computed on the GPU then, on the CPU now: float rounding apart.
    bound = _recording_bound(model, record["inputs"], "lama")
    expected = record["predict_proba"]
    np.testing.assert_allclose(model.predict_proba(record["inputs"]), expected, rtol=0, atol=bound)
    predicted = model.predict(record["inputs"])
    assert_same_predictions(predicted, record["predict"], expected, bound, model.classes_)


# ----------------------------------------------------------------- versions
def test_release_numbers():
    assert release("0.9.0") < release("0.10.0") < release("0.10.1") < release("1.0")
    assert release("0.10.0.dev0") == (0, 10, 0)
    for bad in ("", "x.1", "1", None):
        with pytest.raises(ValueError):
            release(bad)


def test_migrations_upgrade_from_earlier_releases_only():
    # A migration keyed by this release would change what this release writes.
    assert all(version < release(__version__) for version in _compatibility._MIGRATIONS)


@pytest.fixture
def lama_file(tmp_path):
    """``(path, payload, classifier)``: a fitted LAMAClassifier's weights file and its payload."""
    clf = LAMAClassifier(n_heads=2, hidden_size=4, mlp_hidden=8, max_epochs=2, random_state=0)
    clf.fit(IDS, IDS_Y)
    path = tmp_path / "model.safetensors"
    save_weights(clf, path)
    return path, _payload(path), clf


@pytest.fixture
def registry(monkeypatch):
    """An empty migration registry for the test, restored afterwards."""
    monkeypatch.setattr(_compatibility, "_MIGRATIONS", {})
    return _compatibility._MIGRATIONS


def _as_if_written_by(path, payload, version, change):
    """Rewrite ``path`` as release ``version`` would have written it: ``change(node)``."""
    payload = {**copy.deepcopy(payload), "library_version": version}
    change(payload["estimator"])
    path.write_bytes(_file_bytes(payload))


@pytest.fixture
def pickled_by(monkeypatch):
    """``pickled_by(clf, version, change)``: ``clf`` pickled as release ``version`` would have.

    ``change(state)`` alters the pickled state as that release wrote it.
    """

    def pickled(clf, version, change):
        state = clf.__getstate__()
        state[VERSION_KEY] = version
        change(state)
        with monkeypatch.context() as patch:
            patch.setattr(type(clf), "__getstate__", lambda self: state)
            return pickle.dumps(clf)

    return pickled


def test_parameters_added_since_take_their_defaults(lama_file, registry, pickled_by):
    path, payload, clf = lama_file

    def drop(node):
        del node["params"]["calibration"], node["params"]["ema_horizon"]

    _as_if_written_by(path, payload, "0.9.0", drop)
    loaded = load_weights(path)
    assert loaded.calibration is None and loaded.ema_horizon == 0.5
    assert_identical(loaded.predict_proba(IDS), clf.predict_proba(IDS), why=Exact.COPY)

    data = pickled_by(clf, "0.9.0", lambda state: state.pop("calibration"))
    assert pickle.loads(data).calibration is None


def test_renamed_parameters_are_mapped_by_a_migration(lama_file, registry, pickled_by):
    path, payload, clf = lama_file

    def rename(node):
        node["params"]["heads"] = node["params"].pop("n_heads")

    _as_if_written_by(path, payload, "0.9.0", rename)
    message = str(pytest.raises(IncompatibleFileError, load_weights, path).value)
    assert str(path) in message and "['heads']" in message
    assert "saved by sklearn_lama 0.9.0" in message and __version__ in message

    @migration("0.9.0")
    def heads_renamed(node):
        if node["class"] == "LAMAClassifier" and "heads" in node["params"]:
            node["params"]["n_heads"] = node["params"].pop("heads")
        return node

    loaded = load_weights(path)
    assert loaded.n_heads == 2
    assert_identical(loaded.predict_proba(IDS), clf.predict_proba(IDS), why=Exact.COPY)
    data = pickled_by(clf, "0.9.0", lambda state: rename({"params": state}))
    assert pickle.loads(data).n_heads == 2


def test_changed_state_is_migrated_in_order(lama_file, registry, pickled_by):
    # Two releases' changes: 0.9.0 wrote the temperature as "T", which 0.9.5
    # renamed "temperatures"; 0.9.5 wrote what this release reads.
    path, payload, clf = lama_file
    calls = []

    @migration("0.9.5")
    def temperatures_renamed(node):
        calls.append("0.9.5")
        node["state"]["temperature"] = node["state"].pop("temperatures")
        return node

    @migration("0.9.0")
    def temperature_named(node):
        calls.append("0.9.0")
        node["state"]["temperatures"] = node["state"].pop("T")
        return node

    def as_0_9_0(node):
        node["state"]["T"] = node["state"].pop("temperature")

    _as_if_written_by(path, payload, "0.9.0", as_0_9_0)
    loaded = load_weights(path)
    assert calls == ["0.9.0", "0.9.5"]
    assert_identical(loaded.predict_proba(IDS), clf.predict_proba(IDS), why=Exact.COPY)

    calls.clear()
    data = pickled_by(clf, "0.9.0", lambda state: as_0_9_0({"state": state[STATE_KEY]}))
    assert_identical(pickle.loads(data).predict_proba(IDS), clf.predict_proba(IDS), why=Exact.COPY)
    assert calls == ["0.9.0", "0.9.5"]

    # A file of 0.9.5 runs only the later migration.
    calls.clear()
    _as_if_written_by(
        path,
        payload,
        "0.9.5",
        lambda node: node["state"].update(temperatures=node["state"].pop("temperature")),
    )
    load_weights(path)
    assert calls == ["0.9.5"]


# The next release after this one, and the next major release: later releases.
NEXT = "{}.{}.{}".format(*(release(__version__)[:2]), release(__version__)[2] + 1)


@pytest.mark.parametrize("version", ["0.8.0", "0.6.0", NEXT, "1.0.0", "not a version"])
def test_files_of_unread_releases_are_refused_naming_the_versions(version, lama_file, pickled_by):
    path, payload, clf = lama_file
    _as_if_written_by(path, payload, version, lambda node: None)
    message = str(pytest.raises(IncompatibleFileError, load_weights, path).value)
    assert str(path) in message and version in message
    if version != "not a version":
        assert __version__ in message
    data = pickled_by(clf, version, lambda state: None)
    message = str(pytest.raises(IncompatibleFileError, pickle.loads, data).value)
    assert version in message and "LAMAClassifier" in message


def test_a_later_format_version_is_refused_naming_the_versions(lama_file):
    path, payload, _ = lama_file
    payload = {**payload, "format_version": "4", "library_version": "0.12.0"}
    path.write_bytes(_file_bytes(payload))
    message = str(pytest.raises(ValueError, load_weights, path).value)
    assert re.search(r"format version '4' \(saved by sklearn_lama 0\.12\.0\)", message)
    assert f"sklearn_lama {__version__} reads version 3" in message


def test_0_9_0_sequence_inputs_read_as_not_pretrained():
    from sklearn_lama.classification._inputs import _sequences_record_pretrained_tables

    node = {
        "class": "LAMAClassifier",
        "params": {},
        "state": {"input": {"kind": "sequences", "vocabulary_id": "v", "vocabulary_size": 5}},
    }
    upgraded = _sequences_record_pretrained_tables(node)
    assert upgraded["state"]["input"]["pretrained"] is False
    ids = {"class": "LAMAClassifier", "params": {}, "state": {"input": {"kind": "ids"}}}
    assert _sequences_record_pretrained_tables(ids)["state"]["input"] == {"kind": "ids"}
    unfitted = {"class": "LAMAClassifier", "params": {}, "state": None}
    assert _sequences_record_pretrained_tables(unfitted) is unfitted
