"""Pickled state of numpy arrays and plain values: pickle, skops and MLflow carry it all."""

import io
import os
import pickle
import subprocess
import sys

import joblib
import numpy as np
import pytest
import torch
from sklearn.frozen import FrozenEstimator
from sklearn.pipeline import Pipeline
from skorch.callbacks import GradientNormClipping

import sklearn_lama
from sklearn_lama import (
    DuoClassifier,
    DuoTranslator,
    FCSRClassifier,
    LAMAClassifier,
    MetaEmbeddingTransformer,
    Word2VecVectorizer,
    skops_trusted_types,
)
from sklearn_lama.utils._state import STATE_KEY, VERSION_KEY, plain_state
from tests._tolerances import Exact, assert_identical, assert_within

from .conftest import make_classifier, make_pipeline, probability_bound
from .test_persistence import IDS, IDS_Y
from .test_translator import EN, FR

skops_io = pytest.importorskip("skops.io")

TRANSLATOR = dict(
    d_model=16, n_heads=2, d_ff=32, n_layers=1, vocab_size=300, max_epochs=2,
    early_stopping=False, beam_size=1, random_state=0,
)  # fmt: skip


def _vectorizer(**params):
    return Word2VecVectorizer(
        pretrained=None, vector_size=8, min_count=1, epochs=2, random_state=0, **params
    )


def _meta():
    return MetaEmbeddingTransformer([("cbow", _vectorizer(sg=0)), ("sg", _vectorizer(sg=1))])


@pytest.fixture(scope="module")
def fitted(toy_corpus):
    """Every public estimator and the README's pipelines, fitted: ``{name: (estimator, X)}``."""
    texts, labels = toy_corpus
    sequences = _vectorizer().fit_transform(texts)
    models = {
        "lama": (make_classifier("lama", max_epochs=2).fit(sequences, labels), sequences),
        "fcsr": (make_classifier("fcsr", max_epochs=2).fit(IDS, IDS_Y), IDS),
        "duo": (make_classifier("duo", max_epochs=2).fit(sequences, labels), sequences),
        "vectorizer": (_vectorizer().fit(texts), texts),
        "meta_embedding": (_meta().fit(texts), texts),
        "translator": (DuoTranslator(**TRANSLATOR).fit(EN, FR), EN),
        "readme_lama": (make_pipeline("lama", max_epochs=2).fit(texts, labels), texts),
        "readme_duo": (
            Pipeline([("emb", _meta()), ("clf", make_classifier("duo", max_epochs=2))]).fit(
                texts, labels
            ),
            texts,
        ),
        "readme_frozen": (
            Pipeline(
                [
                    ("emb", FrozenEstimator(_vectorizer().fit(texts))),
                    ("clf", make_classifier("fcsr", max_epochs=2)),
                ]
            ).fit(texts, labels),
            texts,
        ),
    }
    return models


MODELS = [
    "lama", "fcsr", "duo", "vectorizer", "meta_embedding", "translator",
    "readme_lama", "readme_duo", "readme_frozen",
]  # fmt: skip


def _output(model, X):
    """What ``model`` computes for ``X``: probabilities, translations or token ids."""
    if hasattr(model, "predict_proba"):
        return model.predict_proba(X)
    if hasattr(model, "predict"):
        return np.asarray(model.predict(X))
    out = model.transform(X)
    return np.concatenate([out.ids, out.offsets])


def _assert_same_output(a, b, X):
    expected, got = _output(a, X), _output(b, X)
    assert type(expected) is type(got)
    assert_identical(got, expected, why=Exact.COPY)


def _estimators(model):
    """The estimators of this package in ``model`` (a pipeline's steps, a frozen one's)."""
    if isinstance(model, Pipeline):
        return [e for _, step in model.steps for e in _estimators(step)]
    if isinstance(model, FrozenEstimator):
        return _estimators(model.estimator)
    return [model]


def _plain(value):
    """Whether ``value`` is numpy arrays and plain Python values only."""
    if isinstance(value, dict):
        return all(isinstance(k, (str, int)) and _plain(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return all(_plain(v) for v in value)
    if isinstance(value, np.ndarray):
        return value.dtype.kind in "biufU"
    return value is None or type(value) in (bool, int, float, str)


def _classes_named(data):
    """The ``module.name`` of every class and function that loading the pickle ``data`` imports."""
    named = []

    class Recording(pickle.Unpickler):
        def find_class(self, module, name):
            named.append(f"{module}.{name}")
            return super().find_class(module, name)

    Recording(io.BytesIO(data)).load()
    return named


# ---------------------------------------------------------------- the state
@pytest.mark.parametrize("name", MODELS)
def test_pickled_state_is_numpy_and_plain_values(name, fitted):
    model, X = fitted[name]
    for estimator in _estimators(model):
        state = estimator.__getstate__()
        fitted_state = state.pop(STATE_KEY)
        assert state.pop(VERSION_KEY) == sklearn_lama.__version__
        assert _plain(fitted_state), type(estimator).__name__
        # The rest is the parameters (a meta-embedding's are its unfitted sources).
        assert set(state) == set(estimator.get_params(deep=False))
    # Nothing of torch or skorch is named in the pickle, so none of it is loaded.
    named = _classes_named(pickle.dumps(model))
    assert named and not [n for n in named if n.startswith(("torch", "skorch"))]


@pytest.mark.parametrize("name", MODELS)
def test_pickle_round_trip_restores_every_attribute(name, fitted):
    model, X = fitted[name]
    copy = pickle.loads(pickle.dumps(model))
    _assert_same_output(model, copy, X)
    for original, loaded in zip(_estimators(model), _estimators(copy)):
        assert set(vars(loaded)) == set(vars(original))
        if hasattr(original, "net_"):
            assert loaded.net_.history.to_list() == original.net_.history.to_list()
            assert str(loaded.net_.device) == "cpu"


def test_unpickling_leaves_the_random_numbers_alone(fitted):
    data = pickle.dumps(fitted["lama"][0])
    torch.manual_seed(0)
    expected = torch.rand(3)
    torch.manual_seed(0)
    pickle.loads(data)
    assert_identical(torch.rand(3), expected, why=Exact.SAME_CALL)


def test_warm_start_continues_after_a_pickle(fitted):
    clf, X = fitted["fcsr"]
    copy = pickle.loads(pickle.dumps(clf))
    steps = int(clf.net_.optimizer_.state_dict()["state"][0]["step"])
    assert int(copy.net_.optimizer_.state_dict()["state"][0]["step"]) == steps
    copy.set_params(warm_start=True, max_epochs=1).fit(IDS, IDS_Y)
    assert len(copy.net_.history) == len(clf.net_.history) + 1
    added = copy.net_.history[-1, "batches"]
    assert int(copy.net_.optimizer_.state_dict()["state"][0]["step"]) == steps + len(added)
    # The same as continuing the original.
    original = pickle.loads(pickle.dumps(clf)).set_params(warm_start=True, max_epochs=1)
    assert_identical(
        original.fit(IDS, IDS_Y).predict_proba(IDS), copy.predict_proba(IDS), why=Exact.SAME_CALL
    )


def test_plain_state_refuses_objects_naming_their_place():
    with pytest.raises(TypeError, match=r"state\['a'\]\[1\] holds a object"):
        plain_state({"a": [1, object()]}, "state")
    state = plain_state({"w": torch.ones(2), "n": np.float32(2.5)}, "state")
    assert type(state["w"]) is np.ndarray and type(state["n"]) is float


def test_state_of_a_net_on_another_device_is_numpy_on_the_cpu(fitted, monkeypatch):
    # As saved after training on a GPU: the exported tensors are read through
    # a device-mapped copy (map_location), whatever the device, into numpy.
    clf, X = fitted["lama"]
    moved = []
    original = torch.Tensor.cpu

    def mapped_cpu(tensor, *args, **kwargs):
        moved.append(tensor.shape)
        return original(tensor, *args, **kwargs)

    monkeypatch.setattr(torch.Tensor, "cpu", mapped_cpu)
    state = clf.__getstate__()[STATE_KEY]
    assert len(moved) >= len(state["network"])
    assert all(type(v) is np.ndarray for v in state["network"].values())


@pytest.mark.skipif(torch.cuda.is_available(), reason="tests loading where CUDA is missing")
def test_saved_with_device_cuda_unpickles_on_the_cpu(fitted, tmp_path):
    clf, X = fitted["fcsr"]
    gpu_trained = pickle.loads(pickle.dumps(clf))
    # As trained on a GPU: the estimator's device says so; its state is numpy.
    gpu_trained.device = "cuda"
    path = tmp_path / "model.joblib"
    joblib.dump(gpu_trained, path)
    assert path.read_bytes().count(b"cuda") == 1  # the device parameter, nothing else
    script = (
        "import sys, warnings, joblib, numpy as np\n"
        "from tests.test_persistence import IDS\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        f"    model = joblib.load({str(path)!r})\n"
        "print([str(w.message) for w in caught], file=sys.stderr)\n"
        "print(str(model.net_.device), file=sys.stderr)\n"
        f"np.save({str(tmp_path / 'proba.npy')!r}, model.predict_proba(IDS))\n"
    )
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    result = subprocess.run(
        [sys.executable, "-c", script],
        cwd=root,
        env={**os.environ, "CUDA_VISIBLE_DEVICES": ""},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert "device='cuda', which is not available here" in result.stderr
    assert result.stderr.strip().endswith("cpu")
    # The same weights in another process, whose torch threads may be others.
    bound = probability_bound("fcsr", clf, IDS)
    assert_within(np.load(tmp_path / "proba.npy"), clf.predict_proba(IDS), bound)


# ---------------------------------------------------------------------- skops
@pytest.mark.parametrize("name", MODELS)
def test_skops_round_trip(name, fitted):
    model, X = fitted[name]
    data = skops_io.dumps(model)
    untrusted = skops_io.get_untrusted_types(data=data)
    # Only this package's estimator types are left to trust.
    assert untrusted and set(untrusted) <= set(skops_trusted_types())
    with pytest.raises(Exception, match="[Uu]ntrusted"):
        skops_io.loads(data)
    loaded = skops_io.loads(data, trusted=skops_trusted_types())
    _assert_same_output(model, loaded, X)


def test_skops_lists_the_types_of_callbacks_as_untrusted():
    # Callbacks are code: skops stores them as objects whose types the user trusts.
    data = skops_io.dumps(LAMAClassifier(callbacks=[GradientNormClipping(1.0)]))
    untrusted = skops_io.get_untrusted_types(data=data)
    assert set(untrusted) - set(skops_trusted_types()) == {
        "skorch.callbacks.regularization.GradientNormClipping"
    }
    loaded = skops_io.loads(data, trusted=untrusted)
    assert type(loaded.callbacks[0]) is GradientNormClipping


def test_skops_trusted_types_are_the_public_estimators():
    names = skops_trusted_types()
    classes = [
        LAMAClassifier,
        FCSRClassifier,
        DuoClassifier,
        Word2VecVectorizer,
        MetaEmbeddingTransformer,
        DuoTranslator,
    ]
    assert names == sorted(f"{c.__module__}.{c.__name__}" for c in classes)


# --------------------------------------------------------------------- MLflow
@pytest.fixture
def mlflow(monkeypatch, tmp_path):
    """MLflow with a tracking store in ``tmp_path``, offline, that may load what it saved."""
    mlflow = pytest.importorskip("mlflow")
    # No telemetry sent; loading allowed (MLflow asks for it before any load).
    allowed = ["MLFLOW_DISABLE_TELEMETRY", "DO_NOT_TRACK", "MLFLOW_ALLOW_PICKLE_DESERIALIZATION"]
    # A tracking store of plain files: no server, no database.
    for name in [*allowed, "MLFLOW_ALLOW_FILE_STORE"]:
        monkeypatch.setenv(name, "true")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", (tmp_path / "mlruns").as_uri())
    return mlflow


def test_mlflow_default_serialization(fitted, mlflow, tmp_path, toy_corpus):
    pipe, texts = fitted["readme_lama"]
    texts = list(texts[:20])
    expected = pipe.predict(texts)
    path = str(tmp_path / "model")
    # MLflow's default format, skops; the requirements given, not inferred
    # by importing the model in a subprocess.
    mlflow.sklearn.save_model(
        pipe, path, skops_trusted_types=skops_trusted_types(), pip_requirements=["sklearn-lama"]
    )
    flavor = mlflow.models.Model.load(path).flavors["sklearn"]
    assert flavor["serialization_format"] == "skops"
    assert_identical(mlflow.sklearn.load_model(path).predict(texts), expected, why=Exact.COPY)
    assert_identical(mlflow.pyfunc.load_model(path).predict(texts), expected, why=Exact.COPY)

    with mlflow.start_run():
        info = mlflow.sklearn.log_model(
            pipe,
            name="model",
            skops_trusted_types=skops_trusted_types(),
            pip_requirements=["sklearn-lama"],
        )
    assert_identical(
        mlflow.pyfunc.load_model(info.model_uri).predict(texts), expected, why=Exact.COPY
    )
    proba = mlflow.sklearn.load_model(info.model_uri).predict_proba(texts)
    assert_identical(proba, pipe.predict_proba(texts), why=Exact.COPY)
