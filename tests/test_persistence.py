"""Weights-only save/load, warm_start, partial_fit and checkpoints."""

import hashlib
import io
import json
import os
import pickle
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import joblib
import numpy as np
import pytest
import safetensors
import safetensors.torch
import torch
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler
from skorch.callbacks import Callback

from sklearn_lama import (
    DuoClassifier,
    DuoTranslator,
    LAMAClassifier,
    MetaEmbeddingTransformer,
    Word2VecVectorizer,
    __version__,
    load_weights,
    save_weights,
)
from sklearn_lama.training._config import NOT_IDENTIFYING
from sklearn_lama.utils import _persistence
from tests._tolerances import Exact, assert_identical, assert_within

from .conftest import (
    CLASSIFIERS,
    InterruptAt,
    make_classifier,
    make_pipeline,
    probability_bound,
)

IDS = np.random.RandomState(0).randint(1, 12, size=(40, 6))
IDS_Y = (IDS[:, 0] > 6).astype(int)


@pytest.fixture(scope="module")
def fitted(toy_corpus):
    texts, labels = toy_corpus
    return {kind: make_pipeline(kind, max_epochs=3).fit(texts, labels) for kind in CLASSIFIERS}


@pytest.fixture(scope="module")
def sequences(toy_corpus):
    texts, labels = toy_corpus
    # Five word2vec passes (gensim's default) keep these tests about training state.
    vectorizer = Word2VecVectorizer(
        pretrained=None, vector_size=16, min_count=1, epochs=5, random_state=0
    )
    return vectorizer.fit_transform(texts), labels


def _round_trip(estimator, path):
    save_weights(estimator, path)
    return load_weights(path)


def _payload(path):
    """A weights file's metadata less the digest, its ``estimator`` entry decoded."""
    with safetensors.safe_open(path, framework="pt") as file:
        metadata = file.metadata()
        tensors = {name: file.get_tensor(name) for name in file.keys()}
    del metadata["sha256"]
    metadata["estimator"] = _persistence._from_json(json.loads(metadata["estimator"]), tensors)
    return metadata


def _file_bytes(payload, digest=None):
    """A weights file holding ``payload``, with a correct digest unless one is given."""
    tensors = {}
    metadata = {
        **payload,
        "estimator": json.dumps(_persistence._to_json(payload["estimator"], "estimator", tensors)),
    }
    if digest is None:
        return _persistence._signed(tensors, metadata)
    return safetensors.torch.save(tensors, {**metadata, "sha256": digest})


def _tensor_bytes_start(data):
    """Where a safetensors file's tensor bytes start (after its header)."""
    return 8 + int.from_bytes(data[:8], "little")


def _same_params(a, b):
    assert type(a) is type(b)
    assert repr(a.get_params(deep=False)) == repr(b.get_params(deep=False))


# ------------------------------------------------------------- save / load
def test_pipeline_round_trip_is_bitwise(kind, fitted, toy_corpus, tmp_path):
    texts, _ = toy_corpus
    pipe = fitted[kind]
    loaded = _round_trip(pipe, tmp_path / "model.pt")
    assert isinstance(loaded, Pipeline) and [n for n, _ in loaded.steps] == ["emb", "clf"]
    for (_, original), (_, restored) in zip(pipe.steps, loaded.steps):
        _same_params(original, restored)
    assert_identical(loaded.predict_proba(texts), pipe.predict_proba(texts), why=Exact.COPY)
    assert loaded.classes_.dtype == pipe.classes_.dtype
    assert loaded["clf"].n_epochs_ == pipe["clf"].n_epochs_ == len(loaded["clf"].net_.history)
    assert loaded["emb"].vocabulary_ == pipe["emb"].vocabulary_


def test_nested_meta_embedding_pipeline_round_trip(toy_corpus, tmp_path):
    texts, labels = toy_corpus
    pipe = Pipeline(
        [
            (
                "emb",
                MetaEmbeddingTransformer(
                    [
                        (
                            "cbow",
                            Word2VecVectorizer(
                                pretrained=None, vector_size=8, sg=0, random_state=0
                            ),
                        ),
                        (
                            "skipgram",
                            Word2VecVectorizer(
                                pretrained=None, vector_size=12, sg=1, random_state=0
                            ),
                        ),
                    ],
                    min_count=2,
                    max_len=10,
                ),
            ),
            (
                "clf",
                DuoClassifier(
                    d_ff=16, max_epochs=2, random_state=0, checkpoint=tmp_path / "checkpoint.pt"
                ),
            ),
        ]
    ).fit(texts, labels)
    loaded = _round_trip(pipe, tmp_path / "model.pt")
    _same_params(loaded["emb"], pipe["emb"])
    for (name, source), (name2, source2) in zip(pipe["emb"].sources, loaded["emb"].sources):
        assert name == name2
        _same_params(source, source2)
    assert isinstance(loaded["clf"].checkpoint, Path)
    assert loaded["emb"].coverage_ == pipe["emb"].coverage_
    original, restored = pipe["emb"].transform(texts), loaded["emb"].transform(texts)
    assert_identical(restored.ids, original.ids, why=Exact.DISCRETE)
    for a, b in zip(restored.tables, original.tables):
        assert_identical(a, b, why=Exact.COPY)
        assert a.dtype == np.float32
    assert restored.vocabulary_id == original.vocabulary_id
    assert_identical(loaded.predict_proba(texts), pipe.predict_proba(texts), why=Exact.COPY)


def test_fitted_vectorizer_round_trip(toy_corpus, tmp_path):
    texts, _ = toy_corpus
    vectorizer = Word2VecVectorizer(
        pretrained=None, vector_size=8, min_count=2, oov="token", random_state=0
    ).fit(texts)
    loaded = _round_trip(vectorizer, tmp_path / "vec.pt")
    _same_params(loaded, vectorizer)
    assert_identical(loaded.embedding_, vectorizer.embedding_, why=Exact.COPY)
    assert loaded.vocabulary_ == vectorizer.vocabulary_
    docs = texts[:5] + ["unknown words here"]
    assert loaded.inverse_transform(loaded.transform(docs)) == vectorizer.inverse_transform(
        vectorizer.transform(docs)
    )


def _probabilities_in_a_new_process(model, texts, tmp_path, **env):
    """``load_weights(model).predict_proba(texts)`` in a fresh Python, and its stderr."""
    (tmp_path / "texts.json").write_text(json.dumps(texts))
    code = (
        "import json, sys, numpy as np; from sklearn_lama import load_weights;"
        "texts = json.load(open(sys.argv[2]));"
        "np.save(sys.argv[3], load_weights(sys.argv[1]).predict_proba(texts))"
    )
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            code,
            str(model),
            str(tmp_path / "texts.json"),
            str(tmp_path / "proba.npy"),
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "OMP_NUM_THREADS": "1", **env},
    )
    assert out.returncode == 0, out.stderr
    return np.load(tmp_path / "proba.npy"), out.stderr


def test_loads_in_a_fresh_process(fitted, toy_corpus, tmp_path):
    texts, _ = toy_corpus
    save_weights(fitted["lama"], tmp_path / "model.pt")
    proba, _ = _probabilities_in_a_new_process(tmp_path / "model.pt", texts, tmp_path)
    # The same weights, in a process of one torch thread (this one may run others).
    bound = probability_bound("lama", fitted["lama"], texts)
    assert_within(proba, fitted["lama"].predict_proba(texts), bound)


@pytest.mark.parametrize(
    "labels",
    [
        np.array(["neg", "pos"]),
        np.array(["neg", "pos"], dtype=object),
        np.array([3, 7]),
        np.array([3, 7], dtype=np.uint8),
        np.array([-1.0, 2.0], dtype=np.float32),
        np.array([False, True]),
    ],
    ids=lambda labels: labels.dtype.str,
)
def test_classes_keep_their_dtype(labels, tmp_path):
    y = labels[IDS_Y]
    clf = make_classifier("duo", max_epochs=1).fit(IDS, y)
    loaded = _round_trip(clf, tmp_path / "model.pt")
    assert loaded.classes_.dtype == clf.classes_.dtype == labels.dtype
    assert_identical(loaded.classes_, clf.classes_, why=Exact.COPY)
    assert_identical(loaded.predict(IDS), clf.predict(IDS), why=Exact.COPY)


def test_plain_array_inputs_round_trip(tmp_path):
    rng = np.random.RandomState(0)
    for X in (IDS, rng.randn(40, 6), rng.randn(40, 6, 3).astype(np.float32)):
        clf = make_classifier("fcsr", max_epochs=1).fit(X, IDS_Y)
        loaded = _round_trip(clf, tmp_path / "model.pt")
        assert loaded.n_features_in_ == 6
        assert_identical(loaded.predict_proba(X), clf.predict_proba(X), why=Exact.COPY)
        with pytest.raises(ValueError, match="6 features"):
            loaded.predict(X[:, :4])
    with pytest.raises(ValueError, match="token id 30"):
        _round_trip(
            make_classifier("fcsr", max_epochs=1).fit(IDS, IDS_Y), tmp_path / "ids.pt"
        ).predict(np.full((2, 6), 30))


def test_file_is_safetensors_with_json_metadata(fitted, toy_corpus, tmp_path):
    # Any safetensors reader opens the file: tensors by name, metadata as strings.
    texts, _ = toy_corpus
    save_weights(fitted["duo"], tmp_path / "model.safetensors")
    with safetensors.safe_open(tmp_path / "model.safetensors", framework="np") as file:
        metadata = file.metadata()
        names = set(file.keys())
        network = "estimator/steps/1/1/state/network/"
        weights = {n[len(network) :]: file.get_tensor(n) for n in names if n.startswith(network)}
    assert set(metadata) == {"format", "format_version", "library_version", "estimator", "sha256"}
    assert metadata["format"] == "sklearn_lama.weights" and metadata["format_version"] == "3"
    assert metadata["library_version"] == __version__
    assert re.fullmatch("[0-9a-f]{64}", metadata["sha256"])
    # The network's weights read without this package are the fitted ones.
    state = fitted["duo"]["clf"].net_.module_.state_dict()
    assert weights.keys() == state.keys()
    for key, value in state.items():
        assert_identical(weights[key], value.numpy(), why=Exact.COPY)
    # The rest is JSON; each tensor is referenced once, by its own name.
    references = []

    def walk(value):
        if isinstance(value, dict):
            if "$tensor" in value:
                references.append(value["$tensor"])
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)
        else:
            assert type(value) in (str, int, float, bool, type(None))

    tree = json.loads(metadata["estimator"])
    walk(tree)
    assert sorted(references) == sorted(names)
    assert tree["class"] == "Pipeline" and tree["steps"][0][1]["state"]["words"] == list(
        fitted["duo"]["emb"].vocabulary_
    )
    assert tree["steps"][1][1]["state"]["target"]["classes"]["values"] == ["neg", "pos"]


def test_json_tags_keep_what_json_lacks():
    tree = {
        "tuple": (1, (2.5, "x")),
        "int keys": {0: {"step": torch.tensor(3.0)}, 1: None},
        "dollar": {"$tensor": "not a tensor", "a/b~c": np.arange(3, dtype=np.uint8)},
        "list": [torch.ones(2, 3).t(), np.float32(0.5), np.str_("word")],
        "nan": float("nan"),
    }
    tensors = {}
    encoded = json.loads(json.dumps(_persistence._to_json(tree, "root", tensors)))
    assert set(tensors) == {
        "root/int keys/$dict/0/1/step",
        "root/dollar/$dict/1/1",
        "root/list/0",
    }
    assert all(t.is_contiguous() for t in tensors.values())
    decoded = _persistence._from_json(encoded, tensors)
    assert decoded["tuple"] == (1, (2.5, "x"))
    assert list(decoded["int keys"]) == [0, 1] and decoded["int keys"][0]["step"].item() == 3.0
    assert decoded["dollar"]["$tensor"] == "not a tensor"
    assert decoded["dollar"]["a/b~c"].tolist() == [0, 1, 2]
    assert decoded["list"][0].tolist() == [[1.0, 1.0]] * 3
    assert decoded["list"][1:] == [0.5, "word"] and type(decoded["list"][1]) is float
    assert np.isnan(decoded["nan"])
    with pytest.raises(TypeError, match=r"root/x holds a set"):
        _persistence._to_json({"x": {1}}, "root", {})


def test_values_that_need_code_are_refused(fitted, toy_corpus, tmp_path):
    texts, labels = toy_corpus
    path = tmp_path / "model.pt"
    vectorizer = Word2VecVectorizer(
        pretrained=None, vector_size=8, min_count=1, tokenizer=str.split
    ).fit(texts)
    with pytest.raises(TypeError, match=r"Word2VecVectorizer\.tokenizer="):
        save_weights(vectorizer, path)
    seeded = make_classifier("duo", max_epochs=1, random_state=np.random.RandomState(0))
    with pytest.raises(TypeError, match=r"DuoClassifier\.random_state="):
        save_weights(seeded.fit(IDS, IDS_Y), path)
    scaled = Pipeline([("scale", StandardScaler()), ("clf", make_classifier("duo", max_epochs=1))])
    with pytest.raises(TypeError, match="step 'scale', a StandardScaler"):
        save_weights(scaled.fit(IDS.astype(float), IDS_Y), path)
    with pytest.raises(TypeError, match="a dict"):
        save_weights({"clf": fitted["duo"]}, path)
    with pytest.raises(NotFittedError):
        save_weights(make_pipeline("duo"), path)
    assert os.listdir(tmp_path) == []


def _damaged_files(good):
    """Name → bytes of files that load_weights must refuse, made from the good file."""
    data = good.read_bytes()
    start = _tensor_bytes_start(data)  # the tensors' bytes: data[start:]

    def edited(edit):
        payload = _payload(good)
        edit(payload)
        return _file_bytes(payload)

    def torch_archive(format_version, library_version):
        # The file of an earlier version: torch.save of the tree, after a header line from 0.2.0.
        buffer = io.BytesIO()
        tree = {"format": "sklearn_lama.weights", "format_version": format_version}
        torch.save({**tree, "library_version": library_version, "estimator": {}}, buffer)
        body = buffer.getvalue()
        if format_version == 1:
            return body
        return (
            b"sklearn_lama weights 2 sha256="
            + hashlib.sha256(body).hexdigest().encode()
            + (b"\n" + body)
        )

    def flipped(position):
        damaged = bytearray(data)
        damaged[position] ^= 0x01
        return bytes(damaged)

    def step(payload, i):
        return payload["estimator"]["steps"][i][1]

    def rename_a_weight(payload):
        network = step(payload, 1)["state"]["network"]
        network["renamed"] = network.popitem()[1]

    def retagged(old, new):
        # The JSON edited as text, and signed again: what a forger could write.
        with safetensors.safe_open(good, framework="pt") as file:
            metadata = file.metadata()
            tensors = {name: file.get_tensor(name) for name in file.keys()}
        estimator = metadata.pop("estimator").replace(old, new, 1)
        del metadata["sha256"]
        return _persistence._signed(tensors, {**metadata, "estimator": estimator})

    pickled = io.BytesIO()
    joblib.dump({"anything": np.arange(3)}, pickled)
    return {
        "empty": b"",
        "garbage": b"not a model at all" * 10,
        "truncated": data[: start + (len(data) - start) // 2],
        "truncated-header": data[: start // 2],
        "joblib": pickled.getvalue(),
        "foreign": safetensors.torch.save({"weights": torch.ones(2)}, {"format": "pt"}),
        "newer": edited(lambda p: p.update(format_version="4")),
        "unversioned": edited(lambda p: p.pop("library_version")),
        "format-1": torch_archive(1, "0.1.0"),
        "format-2": torch_archive(2, "0.8.0"),
        "other-version": edited(
            lambda p: (step(p, 1)["state"].pop("input"), p.update(library_version="0.7.0"))
        ),
        "flipped-json": flipped(data.index(b"Pipeline")),
        "flipped-early": flipped(start + (len(data) - start) // 3),
        "flipped-late": flipped(len(data) - 100),
        "broken-header": flipped(data.index(b'"__metadata__"')),
        "overwritten": data[:start] + bytes(len(data) - start),
        "undigested": _file_bytes(_payload(good), digest="0" * 64),
        "appended": data + b"\n",
        "unregistered": edited(lambda p: step(p, 1).update({"class": "os.system"})),
        "table": edited(lambda p: step(p, 0)["state"].update(embedding=torch.zeros(3, 16))),
        "layout": edited(rename_a_weight),
        "parameter": edited(lambda p: step(p, 1)["params"].update(max_epochs=-1)),
        "steps": edited(lambda p: p["estimator"].update(steps=7)),
        "unknown-tag": retagged('"$tensor"', '"$call"'),
        "missing-tensor": retagged('{"$tensor": "', '{"$tensor": "elsewhere/'),
        "not-json": retagged('{"class"', "{class"),
    }


def test_bad_files_are_a_value_error_naming_the_path(fitted, tmp_path):
    good = tmp_path / "good.safetensors"
    save_weights(fitted["duo"], good)
    cases = {"missing": None, **_damaged_files(good)}
    for name, data in cases.items():
        path = tmp_path / f"{name}.safetensors"
        if data is not None:
            path.write_bytes(data)
        with pytest.raises(ValueError, match=re.escape(str(path))) as info:
            load_weights(path)
        error = info.value  # no library traceback chained to it:
        assert error.__context__ is None or error.__suppress_context__, name
    errors = {name: _load_error(tmp_path / f"{name}.safetensors") for name in cases}
    assert "version '4'" in errors["newer"]
    assert "no library version" in errors["unversioned"]
    assert "'os.system'" in errors["unregistered"]
    assert "not a safetensors file" in errors["joblib"]
    assert "does not name the format 'sklearn_lama.weights'" in errors["foreign"]
    assert "saved by sklearn_lama 0.7.0" in errors["other-version"]
    for name in ("truncated-header", "broken-header", "garbage", "empty"):
        assert "not a readable sklearn_lama weights file" in errors[name], name
    # Files of the earlier formats: the message names the versions that read them.
    assert "sklearn_lama 0.1.0 (weights format 1)" in errors["format-1"]
    assert "sklearn_lama 0.2.0 to 0.8.0 (weights format 2)" in errors["format-2"]
    for name in ("format-1", "format-2"):
        assert f"refit the estimator with sklearn_lama {__version__}" in errors[name]
    assert "unknown JSON tag '$call'" in errors["unknown-tag"]
    assert "is not in the file" in errors["missing-tensor"]
    assert "JSONDecodeError" in errors["not-json"]
    for name in (
        "truncated",
        "flipped-json",
        "flipped-early",
        "flipped-late",
        "overwritten",
        "undigested",
        "appended",
    ):
        assert "altered after it was written" in errors[name], name


class _OpensAFile:
    """Unpickling this opens (creates) a file: code that a pickle runs when loaded."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (open, (str(self.path), "w"))


def test_pickle_bearing_files_are_refused_without_running_them(tmp_path):
    marker = tmp_path / "code-ran"
    bait = {"format": "sklearn_lama.weights", "estimator": _OpensAFile(marker)}
    pickled, archived = io.BytesIO(), io.BytesIO()
    pickle.dump(bait, pickled)
    torch.save(bait, archived)
    files = {
        "pickle": pickled.getvalue(),
        "torch-archive": archived.getvalue(),
        "format-2": b"sklearn_lama weights 2 sha256="
        + hashlib.sha256(archived.getvalue()).hexdigest().encode()
        + b"\n"
        + archived.getvalue(),
    }
    # The same pickle in the metadata of a signed file: metadata is only ever parsed as JSON.
    files["in-metadata"] = _persistence._signed(
        {},
        {
            "format": "sklearn_lama.weights",
            "format_version": "3",
            "library_version": __version__,
            "estimator": pickled.getvalue().decode("latin-1"),
        },
    )
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
        with pytest.raises(ValueError, match=re.escape(str(tmp_path / name))):
            load_weights(tmp_path / name)
    assert not marker.exists()
    pickle.loads(pickled.getvalue())  # the bait works: unpickling it runs the code
    assert marker.exists()


def test_any_single_flipped_byte_is_detected(fitted, tmp_path):
    path = tmp_path / "model.pt"
    save_weights(fitted["lama"], path)
    data = path.read_bytes()
    start = _tensor_bytes_start(data)
    positions = np.random.RandomState(0).choice(len(data), 50, replace=False)
    # Bytes of the header (its JSON, its metadata) and of the tensors.
    assert (positions < start).sum() >= 5 and (positions >= start).sum() >= 5
    for position in positions:
        damaged = bytearray(data)
        damaged[position] ^= 0xFF
        path.write_bytes(bytes(damaged))
        with pytest.raises(
            ValueError, match="altered after it was written|not a readable sklearn_lama"
        ):
            load_weights(path)


def test_save_refuses_unwritable_paths_before_any_work(fitted, tmp_path, monkeypatch):
    (tmp_path / "file").write_text("not a directory")
    monkeypatch.setattr(
        safetensors.torch, "save", lambda *args, **kwargs: pytest.fail("save_weights did work")
    )
    cases = {
        tmp_path: "path=.* is a directory",
        tmp_path / "missing" / "m.pt": "is not an existing directory",
        tmp_path / "file" / "m.pt": "is not an existing directory",
        _unwritable_directory(tmp_path) / "m.pt": "cannot be written: Permission denied",
    }
    for path, message in cases.items():
        with pytest.raises(ValueError, match=message):
            save_weights(fitted["duo"], path)


def _load_error(path):
    with pytest.raises(ValueError) as info:
        load_weights(path)
    return str(info.value)


@pytest.mark.parametrize("failure", [OSError("disk full"), KeyboardInterrupt()])
def test_failed_save_leaves_the_previous_file_intact(
    failure, fitted, toy_corpus, tmp_path, monkeypatch
):
    texts, _ = toy_corpus
    path = tmp_path / "model.pt"
    save_weights(fitted["duo"], path)
    before = path.read_bytes()

    def crash(descriptor):
        # Called with the new file's bytes written, before it replaces the old one.
        assert len(list(tmp_path.glob(".model.pt.*.tmp"))) == 1
        raise failure

    monkeypatch.setattr(os, "fsync", crash)
    with pytest.raises(type(failure)):
        save_weights(fitted["fcsr"], path)
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["model.pt"]  # no temporary file left behind
    assert_identical(
        load_weights(path).predict_proba(texts), fitted["duo"].predict_proba(texts), why=Exact.COPY
    )


@pytest.mark.skipif(torch.cuda.is_available(), reason="tests the fallback without CUDA")
def test_saved_with_device_cuda_loads_on_the_cpu(tmp_path):
    clf = make_classifier("fcsr", max_epochs=1).fit(IDS, IDS_Y)
    path = tmp_path / "model.pt"
    save_weights(clf, path)
    payload = _payload(path)
    payload["estimator"]["params"]["device"] = "cuda"  # as saved after training on a GPU
    path.write_bytes(_file_bytes(payload))
    with pytest.warns(UserWarning, match="device='cuda', which is not available here"):
        loaded = load_weights(path)
    assert loaded.device == "cuda" and str(loaded.net_.device) == "cpu"
    assert_identical(loaded.predict_proba(IDS), clf.predict_proba(IDS), why=Exact.COPY)


class _TensorSpy(pickle.Pickler):
    """A pickler that records the tensors it pickles as plain objects."""

    def __init__(self, file):
        super().__init__(file)
        self.tensors = []

    def reducer_override(self, obj):
        if isinstance(obj, torch.Tensor):
            self.tensors.append(obj)
        return NotImplemented


@pytest.mark.parametrize("kind", list(CLASSIFIERS))
def test_pickle_maps_every_tensor_to_the_loading_device(kind, fitted):
    # skorch pickles the tensors of its device-dependent attributes apart and
    # maps them to a device that exists where they are loaded; a CUDA tensor
    # pickled anywhere else cannot be unpickled without CUDA (what a joblib
    # file of a model fitted on a GPU met on a CPU machine).
    spy = _TensorSpy(io.BytesIO())
    spy.dump(fitted[kind])
    assert spy.tensors == []


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_model_trained_on_cuda_is_saved_on_the_cpu(toy_corpus, tmp_path):
    texts, labels = toy_corpus
    pipe = make_pipeline("lama", max_epochs=2, device="cuda").fit(texts, labels)
    path = tmp_path / "model.pt"
    save_weights(pipe, path)
    state = _payload(path)["estimator"]["steps"][1][1]["state"]
    assert {t.device.type for t in state["network"].values()} == {"cpu"}
    proba, stderr = _probabilities_in_a_new_process(path, texts, tmp_path, CUDA_VISIBLE_DEVICES="")
    assert "it is loaded on the CPU" in stderr
    # cuDNN's recurrent layers compute in TF32 on Ampere and newer GPUs unless told not to
    # (torch.backends.cudnn.allow_tf32, on by default); the CPU computes in float32.
    with torch.backends.cudnn.flags(enabled=True, allow_tf32=False):
        on_the_gpu = pipe.predict_proba(texts)
    np.testing.assert_allclose(proba, on_the_gpu, atol=1e-5)


# -------------------------------------------------------------- warm start
class _WeightsAtStart(Callback):
    """Records the network's weights when training starts."""

    def on_train_begin(self, net, **kwargs):
        self.weights = {k: v.clone() for k, v in net.module_.state_dict().items()}


def _weights(clf):
    return {k: v.clone() for k, v in clf.net_.module_.state_dict().items()}


def _assert_same_weights(a, b):
    assert a.keys() == b.keys()
    for name in a:
        assert_identical(a[name], b[name], why=Exact.COPY)


def _adam_steps(clf):
    return int(clf.net_.optimizer_.state_dict()["state"][0]["step"])


def test_warm_start_continues_from_the_fitted_weights(kind, sequences):
    X, y = sequences
    clf = make_classifier(kind, max_epochs=2, early_stopping=False).fit(X, y)
    stopped, steps = _weights(clf), _adam_steps(clf)
    start = _WeightsAtStart()
    clf._extra_callbacks = lambda: [start]
    clf.set_params(warm_start=True, max_epochs=1).fit(X, y)
    _assert_same_weights(start.weights, stopped)
    assert clf.n_epochs_ == len(clf.net_.history) == 3
    assert _adam_steps(clf) == steps * 3 // 2  # the optimizer state carried over


def test_warm_started_epoch_beats_a_fresh_epoch(sequences):
    X, y = sequences
    clf = make_classifier("lama", max_epochs=4, early_stopping=False).fit(X, y)
    clf.set_params(warm_start=True, max_epochs=1).fit(X, y)
    fresh = make_classifier("lama", max_epochs=1, early_stopping=False).fit(X, y)
    assert clf.net_.history[-1, "train_loss"] < 0.75 * fresh.net_.history[-1, "train_loss"]


def test_warm_start_without_a_fitted_model_is_a_plain_fit(sequences):
    X, y = sequences
    expected = make_classifier("fcsr", max_epochs=2).fit(X, y).predict_proba(X)
    clf = make_classifier("fcsr", max_epochs=2, warm_start=True).fit(X, y)
    assert_identical(clf.predict_proba(X), expected, why=Exact.SAME_CALL)
    clf.set_params(warm_start=False).fit(X, y)  # starts over
    assert clf.n_epochs_ == 2
    assert_identical(clf.predict_proba(X), expected, why=Exact.SAME_CALL)


def test_warm_start_refuses_what_the_model_cannot_continue_on(sequences, toy_corpus):
    X, y = sequences
    texts, _ = toy_corpus
    clf = make_classifier("duo", max_epochs=1).fit(X, y).set_params(warm_start=True)
    other = Word2VecVectorizer(
        pretrained=None, vector_size=16, min_count=1, lowercase=False, random_state=0
    ).fit_transform([t.upper() for t in texts])
    with pytest.raises(ValueError, match="fitted on TokenSequences, but X is a 2-D integer"):
        clf.fit(IDS, IDS_Y)
    with pytest.raises(ValueError, match="different vocabulary"):
        clf.fit(other, y)
    with pytest.raises(ValueError, match=r"labels \['maybe'\] that are not in classes_"):
        clf.fit(X, np.where(y == "pos", "maybe", y))
    with pytest.raises(ValueError, match="architecture parameters changed"):
        clf.set_params(d_ff=8).fit(X, y)
    assert clf.n_epochs_ == 1  # the refused calls trained nothing
    ids = make_classifier("duo", max_epochs=1).fit(IDS, IDS_Y).set_params(warm_start=True)
    with pytest.raises(ValueError, match="token id 40"):
        ids.fit(np.full((4, 6), 40), [0, 1, 0, 1])
    with pytest.raises(ValueError, match="6 features"):
        ids.fit(IDS[:, :4], IDS_Y)


@pytest.mark.parametrize("early_stopping", [True, False])
def test_interrupted_fit_continues_with_warm_start(sequences, early_stopping):
    X, y = sequences
    clf = make_classifier("lama", max_epochs=10, early_stopping=early_stopping)
    clf._extra_callbacks = lambda: [InterruptAt(3)]
    with pytest.warns(UserWarning, match="during epoch 3.*warm_start=True continues"):
        clf.fit(X, y)
    stopped = _weights(clf)
    start = _WeightsAtStart()
    clf._extra_callbacks = lambda: [start]
    clf.set_params(warm_start=True, max_epochs=2).fit(X, y)
    _assert_same_weights(start.weights, stopped)
    assert clf.n_epochs_ == 5


# ------------------------------------------------------------- partial_fit
def test_partial_fit_trains_one_epoch_per_call(kind):
    clf = make_classifier(kind)
    with pytest.raises(ValueError, match="classes must be passed on the first call"):
        clf.partial_fit(IDS, IDS_Y)
    assert not hasattr(clf, "classes_")
    clf.partial_fit(IDS[:20], IDS_Y[:20], classes=[0, 1, 2])
    assert clf.classes_.tolist() == [0, 1, 2] and clf.n_epochs_ == 1
    clf.partial_fit(IDS[20:], IDS_Y[20:])
    clf.partial_fit(IDS[IDS_Y == 1], IDS_Y[IDS_Y == 1])  # one class in a call is fine
    assert clf.n_epochs_ == 3 and _adam_steps(clf) == 3  # one batch of <= 32 per call
    assert "valid_loss" not in clf.net_.history[-1]  # every document trains
    assert clf.predict_proba(IDS).shape == (40, 3)
    with pytest.raises(ValueError, match="differs from the classes of the first fit"):
        clf.partial_fit(IDS, IDS_Y, classes=[0, 1])
    with pytest.raises(ValueError, match=r"labels \[5\]"):
        clf.partial_fit(IDS, np.full(40, 5))
    with pytest.raises(ValueError, match="6 features"):
        clf.partial_fit(IDS[:, :4], IDS_Y)
    with pytest.raises(ValueError, match=r"labels \[1\]"):
        make_classifier(kind).partial_fit(IDS, IDS_Y, classes=[0, 2])


def test_partial_fit_is_reproducible_and_continues_fit(sequences):
    X, y = sequences

    def three_calls():
        clf = make_classifier("fcsr")
        for _ in range(3):
            clf.partial_fit(X, y, classes=["neg", "pos"])
        return clf

    a, b = three_calls(), three_calls()
    assert_identical(a.predict_proba(X), b.predict_proba(X), why=Exact.SAME_CALL)
    fitted = make_classifier("fcsr", max_epochs=2).fit(X, y)
    assert fitted.partial_fit(X, y).n_epochs_ == 3


# -------------------------------------------------------------- checkpoint
def _count_writes(monkeypatch):
    import sklearn_lama.base._trained as base

    writes = []
    save = base.save_state
    monkeypatch.setattr(
        base,
        "save_state",
        lambda estimator, state, path: writes.append(path) or save(estimator, state, path),
    )
    return writes


def test_checkpoint_holds_the_best_epoch(toy_corpus, tmp_path, monkeypatch):
    texts, labels = toy_corpus
    writes = _count_writes(monkeypatch)
    path = tmp_path / "checkpoint.pt"
    pipe = make_pipeline("lama", max_epochs=40, patience=2, lr=0.05, checkpoint=str(path)).fit(
        texts, labels
    )
    clf = pipe["clf"]
    improved = clf.net_.history[:, "valid_loss_best"]
    assert len(writes) == sum(improved)
    assert re.fullmatch(r"checkpoint-[0-9a-f]{12}\.pt", Path(clf.checkpoint_path_).name)
    saved = load_weights(clf.checkpoint_path_)
    assert isinstance(saved, LAMAClassifier) and saved.checkpoint == str(path)
    # The epoch of the lowest loss; with tol > 0 the last epochs may still lower it a little,
    # so it can be the last one (as it is with some releases' kernels and vectors).
    best_epoch = max(i for i, best in enumerate(improved) if best) + 1
    assert saved.n_epochs_ == best_epoch <= clf.n_epochs_
    seqs = pipe["emb"].transform(texts)
    assert_identical(saved.predict_proba(seqs), clf.predict_proba(seqs), why=Exact.COPY)
    assert os.listdir(tmp_path) == [Path(clf.checkpoint_path_).name]
    # The same fit again finds the same file; other data, another one.
    again = make_pipeline("lama", max_epochs=40, patience=2, lr=0.05, checkpoint=str(path))
    assert again.fit(texts, labels)["clf"].checkpoint_path_ == clf.checkpoint_path_
    other = make_pipeline("lama", max_epochs=1, checkpoint=str(path)).fit(texts, labels)
    assert other["clf"].checkpoint_path_ != clf.checkpoint_path_


def test_checkpoint_name_leaves_out_where_a_fit_runs_or_reports(tmp_path):
    settings = dict(max_epochs=1, early_stopping=False, checkpoint=tmp_path / "checkpoint.pt")
    name = make_classifier("fcsr", **settings).fit(IDS, IDS_Y).checkpoint_path_
    elsewhere = make_classifier("fcsr", **settings, verbose=1, torch_threads=2, callbacks=[])
    assert elsewhere.fit(IDS, IDS_Y).checkpoint_path_ == name
    assert make_classifier("fcsr", **settings, lr=0.02).fit(IDS, IDS_Y).checkpoint_path_ != name
    # The parameters left out of a fit's identity are parameters of every estimator.
    for cls in [*(cls for cls, _, _ in CLASSIFIERS.values()), DuoTranslator]:
        assert NOT_IDENTIFYING <= set(cls._parameter_constraints)


def test_checkpoint_every_epoch_without_validation_then_resume(tmp_path, monkeypatch):
    writes = _count_writes(monkeypatch)
    path = tmp_path / "checkpoint.pt"
    clf = make_classifier("fcsr", max_epochs=3, early_stopping=False, checkpoint=path)
    clf.fit(IDS, IDS_Y)
    assert len(writes) == 3
    saved = load_weights(clf.checkpoint_path_)
    assert_identical(saved.predict_proba(IDS), clf.predict_proba(IDS), why=Exact.COPY)
    saved.set_params(warm_start=True, max_epochs=2).fit(IDS, IDS_Y)
    assert saved.n_epochs_ == 5 and load_weights(saved.checkpoint_path_).n_epochs_ == 5


def test_checkpoint_template_fields(tmp_path):
    clf = make_classifier(
        "fcsr",
        max_epochs=2,
        early_stopping=False,
        checkpoint=tmp_path / "run-{fit}-epoch{last_epoch[epoch]}.pt",
    )
    clf.fit(IDS, IDS_Y)
    names = sorted(os.listdir(tmp_path))
    assert len(names) == 2 and all(
        re.fullmatch(r"run-[0-9a-f]{12}-epoch[12]\.pt", n) for n in names
    )
    assert load_weights(tmp_path / names[1]).n_epochs_ == 2


def _unwritable_directory(tmp_path):
    folder = tmp_path / "read-only"
    folder.mkdir()
    folder.chmod(0o500)
    if not _can_create_files_in(folder):
        return folder
    # root ignores permissions, but sysfs refuses new files even to root.
    if os.path.isdir("/sys") and not _can_create_files_in(Path("/sys")):
        return Path("/sys")
    pytest.skip("no directory here refuses writes")


def _can_create_files_in(folder):
    try:
        (folder / "probe").touch(exist_ok=False)
    except OSError:
        return False
    (folder / "probe").unlink()
    return True


def test_bad_checkpoint_paths_are_refused_before_training(tmp_path):
    (tmp_path / "file").write_text("not a directory")
    cases = {
        tmp_path: "is a directory",
        tmp_path / "missing" / "c.pt": "is not an existing directory",
        tmp_path / "file" / "c.pt": "is not an existing directory",
        _unwritable_directory(tmp_path) / "c.pt": "cannot be written: Permission denied",
    }
    for path, message in cases.items():
        clf = make_classifier("duo", checkpoint=path)
        with pytest.raises(ValueError, match=message):
            clf.fit(IDS, IDS_Y)
        assert not hasattr(clf, "classes_")


def test_checkpoint_survives_sigkill(tmp_path):
    path = tmp_path / "checkpoint.pt"
    script = (
        "import numpy as np; from sklearn_lama import LAMAClassifier;"
        "X = np.random.RandomState(0).randint(1, 12, size=(400, 6));"
        f"LAMAClassifier(n_heads=2, hidden_size=8, mlp_hidden=16, max_epochs=100000,"
        f" early_stopping=False, checkpoint={str(path)!r}, random_state=0)"
        ".fit(X, (X[:, 0] > 6).astype(int))"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", script],
        stderr=subprocess.PIPE,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    try:
        deadline = time.monotonic() + 120
        # The file's name holds the fit's key: "checkpoint-<12 hex digits>.pt".
        while not list(tmp_path.glob("checkpoint-*.pt")):
            assert proc.poll() is None, proc.stderr.read().decode()
            assert time.monotonic() < deadline
            time.sleep(0.01)
        (path,) = tmp_path.glob("checkpoint-*.pt")
        first = os.stat(path)
        while (os.stat(path).st_ino, os.stat(path).st_mtime_ns) == (
            first.st_ino,
            first.st_mtime_ns,
        ):
            time.sleep(0.002)  # wait for a second write: training is well under way
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == -signal.SIGKILL
    clf = load_weights(path)
    assert clf.n_epochs_ >= 2 and clf.predict(IDS).shape == (40,)
    n_epochs = clf.n_epochs_
    clf.set_params(warm_start=True, max_epochs=1, checkpoint=None).fit(IDS, IDS_Y)
    assert clf.n_epochs_ == n_epochs + 1


def test_estimator_with_a_checkpoint_still_pickles(tmp_path):
    clf = make_classifier("duo", max_epochs=1, checkpoint=tmp_path / "c.pt").fit(IDS, IDS_Y)
    restored = pickle.loads(pickle.dumps(clf))
    assert_identical(restored.predict_proba(IDS), clf.predict_proba(IDS), why=Exact.COPY)


def test_each_fit_of_a_grid_search_writes_its_own_checkpoint(tmp_path):
    path = tmp_path / "checkpoint.pt"
    search = GridSearchCV(
        make_classifier("duo", max_epochs=2, checkpoint=path), {"d_ff": [8, 16]}, cv=2
    ).fit(IDS, IDS_Y)
    # 2 candidates x 2 folds + the refit, each in its own file.
    assert len(list(tmp_path.glob("checkpoint-*.pt"))) == 5
    saved = load_weights(search.best_estimator_.checkpoint_path_)
    assert saved.d_ff == search.best_params_["d_ff"]
    assert_identical(
        saved.predict_proba(IDS), search.best_estimator_.predict_proba(IDS), why=Exact.COPY
    )
