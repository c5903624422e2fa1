"""ONNX export (sklearn_lama.export): the graph, its settings file and the numpy-only runtime."""

import json
import subprocess
import sys

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError
from sklearn.pipeline import Pipeline

from sklearn_lama import MetaEmbeddingTransformer, Word2VecVectorizer
from sklearn_lama.export import OnnxTextClassifier, TextEncoder, to_onnx
from sklearn_lama.export._onnx import _text_settings

from .conftest import make_classifier, make_pipeline, probability_bound

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")


@pytest.fixture(scope="module")
def exported(toy_corpus, tmp_path_factory):
    """Each default pipeline, fitted, and its exported model."""
    texts, labels = toy_corpus
    folder = tmp_path_factory.mktemp("onnx")
    models = {}
    for kind in ("lama", "fcsr", "duo"):
        pipe = make_pipeline(kind, max_epochs=3).fit(texts, labels)
        to_onnx(pipe, folder / f"{kind}.onnx")
        models[kind] = pipe, OnnxTextClassifier(folder / f"{kind}.onnx")
    return models


def _long_document(texts, n_tokens, seed=0):
    words = " ".join(texts).split()
    return " ".join(np.random.RandomState(seed).choice(words, n_tokens))


def test_onnx_matches_the_pipeline(kind, exported, toy_corpus):
    # ONNX Runtime's kernels associate the sums their own way: the float32 bound of the network.
    texts, _ = toy_corpus
    pipe, model = exported[kind]
    documents = texts + ["", "words never seen", "good " * 40]
    bound = probability_bound(kind, pipe, documents)
    np.testing.assert_allclose(
        model.predict_proba(documents), pipe.predict_proba(documents), rtol=0, atol=bound
    )
    np.testing.assert_array_equal(model.predict(documents), pipe.predict(documents))
    assert model.classes_.tolist() == ["neg", "pos"]


@pytest.mark.parametrize(
    "kind, params",
    [
        ("lama", dict(nb_unigram_weight=0.0, nb_bigram_weight=0.0)),
        ("lama", dict(nb_bigram_weight=2.0, nb_folds=3)),
        ("fcsr", dict(nb_unigram_weight=1.0, nb_bigram_weight=0.0)),
        ("fcsr", dict(nb_folds=0)),
        ("duo", dict(nb_unigram_weight=0.0, nb_folds=5)),
        ("duo", dict(nb_bigram_weight=3.0)),
    ],
)
def test_naive_bayes_settings(kind, params, toy_corpus, tmp_path):
    texts, labels = toy_corpus
    pipe = make_pipeline(kind, max_epochs=2, **params).fit(texts, labels)
    to_onnx(pipe, tmp_path / "model.onnx")
    model = OnnxTextClassifier(tmp_path / "model.onnx")
    bound = probability_bound(kind, pipe, texts)
    np.testing.assert_allclose(model.predict_proba(texts), pipe.predict_proba(texts), atol=bound)


def test_dynamic_batch_and_length(kind, exported, toy_corpus):
    texts, _ = toy_corpus
    pipe, model = exported[kind]
    # LAMA reads a document past its chunk_length (1024) in chunks; FCSR's scan recurses deeper.
    documents = texts[:63] + [_long_document(texts, 2000)]
    assert len(pipe["emb"].transform(documents[-1:]).document(0)) == 2000
    expected = pipe.predict_proba(documents)
    # Over 2,000 steps the worst-case bound passes 1; but the recurrences
    # contract (FOFE's alpha < 1, the GRU's update gates), so an early step's
    # rounding fades and conftest's 64-token bound holds.
    bound = probability_bound(kind, pipe, documents)
    lengths = np.array([len(ids) for ids in model.encode(documents)])
    # Batches of 1 and of all 64 documents (2,000 tokens wide), then within a small budget.
    for batch_size, max_tokens, largest in ((1, 32768, 1), (64, 10**6, 64), (64, 100, None)):
        model.batch_size, model.max_tokens = batch_size, max_tokens
        batches = list(model._batches(lengths))
        assert max(len(rows) for rows in batches) == (largest or len(batches[0]))
        assert largest or 1 < len(batches[0]) < 64
        # Within the token budget, except the 2,000-token document, alone.
        assert all(len(r) * lengths[r].max() <= max_tokens or len(r) == 1 for r in batches)
        np.testing.assert_allclose(model.predict_proba(documents), expected, atol=bound)
    model.batch_size, model.max_tokens = 256, 32768


def test_calibrated_classifier(toy_corpus, tmp_path):
    texts, labels = toy_corpus
    pipe = make_pipeline("lama", max_epochs=2, calibration="temperature").fit(texts, labels)
    assert pipe["clf"].temperature_[0] != 1.0
    to_onnx(pipe, tmp_path / "model.onnx")
    model = OnnxTextClassifier(tmp_path / "model.onnx")
    bound = probability_bound("lama", pipe, texts)
    np.testing.assert_allclose(model.predict_proba(texts), pipe.predict_proba(texts), atol=bound)


def test_classifier_on_token_ids(tmp_path):
    rng = np.random.RandomState(0)
    X = rng.randint(1, 30, size=(60, 12))
    y = (X[:, 0] > 15).astype(int)
    clf = make_classifier("duo", max_epochs=2).fit(X, y)
    onnx_path, settings_path = to_onnx(clf, tmp_path / "ids.onnx")
    assert json.loads(settings_path.read_text())["text"] is None
    model = OnnxTextClassifier(onnx_path)
    bound = probability_bound("duo", clf, X)
    np.testing.assert_allclose(model.predict_proba(list(X)), clf.predict_proba(X), atol=bound)
    np.testing.assert_array_equal(model.predict(X), clf.predict(X))


def test_meta_embedding_pipeline(toy_corpus, tmp_path):
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
                            "sg",
                            Word2VecVectorizer(pretrained=None, vector_size=12, random_state=0),
                        ),
                    ],
                    min_count=2,
                    oov="discard",
                ),
            ),
            ("clf", make_classifier("duo", max_epochs=2)),
        ]
    ).fit(texts, labels)
    to_onnx(pipe, tmp_path / "meta.onnx")
    model = OnnxTextClassifier(tmp_path / "meta.onnx")
    bound = probability_bound("duo", pipe, texts)
    np.testing.assert_allclose(model.predict_proba(texts), pipe.predict_proba(texts), atol=bound)


@pytest.mark.parametrize(
    "params",
    [
        dict(strip_accents="unicode", stop_words="english", max_len=5),
        dict(strip_accents="ascii", lowercase=False, oov="discard"),
        dict(token_pattern=r"(?u)\b\w\w+\b", stop_words=["the", "a"]),
    ],
)
def test_text_side_gives_the_vectorizer_ids(params):
    texts = [
        "Café crème, naïve Über-film!",
        "The plot: a résumé of déjà vu?",
        "ÉCOLE été Ñandú — the end",
        "",
        "tab\tseparated\nlines and the numbers 42",
    ]
    vectorizer = Word2VecVectorizer(
        pretrained=None, vector_size=4, min_count=1, random_state=0, **params
    )
    vectorizer.fit(texts)
    encoder = TextEncoder(_text_settings(vectorizer))
    sequences = vectorizer.transform(texts + ["unseen words, crème"])
    for i, document in enumerate(texts + ["unseen words, crème"]):
        ids = encoder.encode(document)
        np.testing.assert_array_equal(ids, sequences.document(i))
        assert ids.dtype == np.int64


def test_runtime_needs_neither_torch_nor_scikit_learn(exported, toy_corpus, tmp_path):
    texts, _ = toy_corpus
    pipe, model = exported["fcsr"]
    to_onnx(pipe, tmp_path / "model.onnx")
    (tmp_path / "texts.json").write_text(json.dumps(texts))
    runtime = sys.modules[OnnxTextClassifier.__module__].__file__
    code = (
        "import importlib.util, json, sys\n"
        "for name in ('torch', 'sklearn', 'scipy', 'gensim', 'skorch', 'sklearn_lama'):\n"
        "    sys.modules[name] = None  # importing any of them now fails\n"
        "spec = importlib.util.spec_from_file_location('runtime', sys.argv[1])\n"
        "runtime = importlib.util.module_from_spec(spec)\n"
        "spec.loader.exec_module(runtime)\n"
        "model = runtime.OnnxTextClassifier(sys.argv[2])\n"
        "texts = json.load(open(sys.argv[3]))\n"
        "print(json.dumps(model.predict_proba(texts).tolist()))\n"
    )
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            code,
            runtime,
            str(tmp_path / "model.onnx"),
            str(tmp_path / "texts.json"),
        ],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    bound = probability_bound("fcsr", pipe, texts)
    np.testing.assert_allclose(
        np.array(json.loads(out.stdout)), pipe.predict_proba(texts), atol=bound
    )


def test_what_cannot_be_exported_is_refused(toy_corpus, tmp_path):
    texts, labels = toy_corpus
    path = tmp_path / "model.onnx"
    with pytest.raises(TypeError, match="got a Word2VecVectorizer"):
        to_onnx(Word2VecVectorizer(min_count=1).fit(texts), path)
    with pytest.raises(NotFittedError):
        to_onnx(make_pipeline("duo"), path)
    windowed = make_pipeline("fcsr", max_epochs=1, context_window=3).fit(texts, labels)
    with pytest.raises(ValueError, match="context_window"):
        to_onnx(windowed, path)
    dense = make_classifier("duo", max_epochs=1).fit(
        np.random.RandomState(0).randn(20, 5, 3).astype(np.float32), [0, 1] * 10
    )
    with pytest.raises(ValueError, match="read token ids; .* 3-D float array"):
        to_onnx(dense, path)
    both = np.stack([labels == "pos", labels == "neg"], axis=1).astype(int)
    multilabel = make_pipeline("duo", max_epochs=1).fit(texts, both)
    with pytest.raises(ValueError, match=r"single-label classifiers.*\(MultiLabel\)"):
        to_onnx(multilabel, path)
    pipe = make_pipeline("duo", max_epochs=1).fit(texts, labels)
    pipe["emb"].set_params(tokenizer=str.split)
    with pytest.raises(TypeError, match=r"Word2VecVectorizer\.tokenizer"):
        to_onnx(pipe, path)
    pipe["emb"].set_params(tokenizer=None)
    with pytest.raises(ValueError, match="is a directory"):
        to_onnx(pipe, tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_missing_packages_are_named(exported, tmp_path, monkeypatch):
    pipe, _ = exported["duo"]
    monkeypatch.setitem(sys.modules, "onnx", None)
    with pytest.raises(ImportError, match=r"sklearn-lama\[onnx\]"):
        to_onnx(pipe, tmp_path / "model.onnx")
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    with pytest.raises(ImportError, match=r"sklearn-lama\[onnx\]"):
        OnnxTextClassifier(tmp_path / "model.onnx")


def test_settings_file_is_checked(exported, tmp_path):
    pipe, _ = exported["duo"]
    onnx_path, settings_path = to_onnx(pipe, tmp_path / "model.onnx")
    settings = json.loads(settings_path.read_text())
    assert settings["format"] == "sklearn_lama.onnx" and settings["classifier"] == "DuoClassifier"
    assert (
        settings["text"]["vocabulary"][:3]
        == sorted(pipe["emb"].vocabulary_, key=pipe["emb"].vocabulary_.get)[:3]
    )
    settings_path.write_text(json.dumps({**settings, "format_version": 2}))
    with pytest.raises(ValueError, match="version 2 of the settings format"):
        OnnxTextClassifier(onnx_path)
    settings_path.unlink()
    with pytest.raises(ValueError, match="No settings file"):
        OnnxTextClassifier(onnx_path)
