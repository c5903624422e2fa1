"""ONNX export (sklearn_lama.export): the graph, its settings file and the numpy-only runtime."""

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from sklearn.compose import ColumnTransformer
from sklearn.exceptions import NotFittedError
from sklearn.impute import SimpleImputer
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import (
    FunctionTransformer,
    OneHotEncoder,
    OrdinalEncoder,
    StandardScaler,
)

from sklearn_lama import MetaEmbeddingTransformer, Word2VecVectorizer
from sklearn_lama.export import OnnxTextClassifier, TextEncoder, to_onnx
from sklearn_lama.export._onnx import _text_settings
from tests._tolerances import Exact, assert_identical, assert_same_predictions, gamma
from tests._tolerances import probability_bound as softmax_bound

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
    proba = pipe.predict_proba(documents)
    np.testing.assert_allclose(model.predict_proba(documents), proba, rtol=0, atol=bound)
    # The labels of two computations: equal wherever those probabilities decide them.
    assert_same_predictions(
        model.predict(documents), pipe.predict(documents), proba, bound, pipe.classes_
    )
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
    proba = clf.predict_proba(X)
    np.testing.assert_allclose(model.predict_proba(list(X)), proba, atol=bound)
    assert_same_predictions(model.predict(X), clf.predict(X), proba, bound, clf.classes_)


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
        assert_identical(ids, sequences.document(i), why=Exact.DISCRETE)
        assert ids.dtype == np.int64


# The runtime's file run alone, in a Python where the training stack cannot be imported.
ALONE = """
import importlib.util, json, sys
for name in ("torch", "sklearn", "skl2onnx", "scipy", "gensim", "skorch", "sklearn_lama"):
    sys.modules[name] = None  # importing any of them now fails
spec = importlib.util.spec_from_file_location("runtime", sys.argv[1])
runtime = importlib.util.module_from_spec(spec)
spec.loader.exec_module(runtime)
model = runtime.OnnxTextClassifier(sys.argv[2])
documents = json.load(open(sys.argv[3]))
print(json.dumps(model.predict_proba(documents).tolist()))
"""


def serve_alone(onnx_path, documents):
    """``predict_proba`` of ``documents`` (JSON: texts, or a dict of columns) by :data:`ALONE`."""
    data = onnx_path.with_name("documents.json")
    data.write_text(json.dumps(documents))
    runtime = sys.modules[OnnxTextClassifier.__module__].__file__
    out = subprocess.run(
        [sys.executable, "-c", ALONE, runtime, str(onnx_path), str(data)],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    return np.array(json.loads(out.stdout))


def test_runtime_needs_neither_torch_nor_scikit_learn(exported, toy_corpus, tmp_path):
    texts, _ = toy_corpus
    pipe, model = exported["fcsr"]
    onnx_path, _ = to_onnx(pipe, tmp_path / "model.onnx")
    bound = probability_bound("fcsr", pipe, texts)
    np.testing.assert_allclose(
        serve_alone(onnx_path, texts), pipe.predict_proba(texts), atol=bound
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
    assert settings["format_version"] == 2 and settings["columns"] is None
    # Version 1 (0.9.0 and 0.10.0) without side columns: the same settings.
    settings_path.write_text(json.dumps({**settings, "format_version": 1}))
    assert OnnxTextClassifier(onnx_path).settings["format_version"] == 1
    settings_path.write_text(json.dumps({**settings, "format_version": 3}))
    with pytest.raises(ValueError, match="version 3 of the settings format"):
        OnnxTextClassifier(onnx_path)
    settings_path.unlink()
    with pytest.raises(ValueError, match="No settings file"):
        OnnxTextClassifier(onnx_path)


# ------------------------------------------------------------------ side columns
def side_frame(n=80, seed=0):
    """Tickets urgent when ``age`` is high or the product a tablet; ``age`` has gaps."""
    rng = np.random.RandomState(seed)
    words = ["the", "parcel", "arrived", "late", "on", "time", "box", "was", "fine"]
    body = [" ".join(rng.choice(words, rng.randint(3, 9))) for _ in range(n)]
    age = 40 + 15 * rng.normal(size=n)
    product = rng.choice(["phone", "laptop", "tablet"], n)
    y = np.where((age > 45) | (product == "tablet"), "urgent", "normal")
    age[[3, 17]] = np.nan
    rating = rng.randint(1, 6, n).astype(float)
    return pd.DataFrame({"body": body, "age": age, "product": product, "rating": rating}), y


# The side columns' encoders of each exported pipeline: the three that 0.10.0
# wrote as settings (OneHotEncoder at its defaults, sparse), and OrdinalEncoder
# with the remainder passed through, which it refused.
# "inputs" are the columns the graph reads, in the frame's order.
SIDE = {
    "one_hot": dict(transformers=[("cat", OneHotEncoder(), ["product"])], inputs=["product"]),
    "scaler": dict(
        transformers=[("num", StandardScaler(), ["rating", "age"])], inputs=["age", "rating"]
    ),
    "imputer": dict(
        transformers=[
            ("num", SimpleImputer(), ["age"]),
            (
                "scaled",
                Pipeline([("fill", SimpleImputer(strategy="median")), ("z", StandardScaler())]),
                [1],  # "age" by position
            ),
        ],
        inputs=["age"],
    ),
    "ordinal": dict(
        transformers=[("ord", OrdinalEncoder(), ["product"])],
        remainder="passthrough",  # "rating"
        inputs=["product", "rating"],
    ),
}


def make_side_pipeline(case):
    transformers = SIDE[case]["transformers"]
    text = Word2VecVectorizer(pretrained=None, vector_size=8, min_count=1, random_state=0)
    columns = ColumnTransformer(
        [("text", text, "body"), *transformers],
        remainder=SIDE[case].get("remainder", "drop"),
    )
    return Pipeline([("columns", columns), ("clf", make_classifier("fcsr", max_epochs=2))])


def side_bound(pipe, frame):
    """Bound on the served probabilities moved by the side features the graph computes.

    skl2onnx writes a StandardScaler as ONNX's ``Scaler`` on float32 operands,
    ``(x - mean) * (1 / scale)``: ``x``, ``mean``, ``1 / scale``, the
    difference and the product each round to float32, where scikit-learn
    computes ``(x - mean) / scale`` in float64 and rounds the result once.
    The graph's feature is within ``gamma(5) (|x| + |mean|) / scale`` of the
    exact value, scikit-learn's within ``gamma(3)`` times its magnitude (at
    most that sum), so the two within ``gamma(8)`` of each other. The other
    encoders' features are exact in both (categories' 0/1 and codes, imputed
    values and passed-through numbers, each rounded once to float32). The
    side term is linear, ``W_s @ side``, so the logits move by at most
    ``|W_s| @ errors`` beside the network's own rounding.
    """
    columns = pipe["columns"]
    errors = np.zeros(
        (len(frame), sum(s.stop - s.start for s in columns.output_indices_.values()))
    )
    for name, transformer, selected in columns.transformers_:
        steps = transformer.steps if isinstance(transformer, Pipeline) else [(name, transformer)]
        if isinstance(steps[-1][1], StandardScaler):
            x = frame[selected] if isinstance(selected[0], str) else frame.iloc[:, selected]
            for _, step in steps[:-1]:
                x = step.transform(x)
            scaler = steps[-1][1]
            terms = (np.abs(np.asarray(x, np.float64)) + np.abs(scaler.mean_)) / scaler.scale_
            errors[:, columns.output_indices_[name]] = gamma(8) * terms
    errors = np.delete(errors, columns.output_indices_["text"], axis=1)
    weights = np.abs(pipe["clf"].net_.module_.side.weight.detach().double().numpy())
    return softmax_bound((errors @ weights.T).max())


@pytest.fixture(scope="module")
def side_models(tmp_path_factory):
    """Each side pipeline, fitted, and its exported model."""
    frame, y = side_frame()
    folder = tmp_path_factory.mktemp("side")
    models = {}
    for case in SIDE:
        data = frame.drop(columns="age") if case == "ordinal" else frame
        data = data.fillna({"age": 40.0}) if case == "scaler" else data
        pipe = make_side_pipeline(case).fit(data, y)
        to_onnx(pipe, folder / f"{case}.onnx")
        models[case] = pipe, OnnxTextClassifier(folder / f"{case}.onnx"), data
    return models


@pytest.mark.parametrize("case", sorted(SIDE))
def test_side_columns_match_the_pipeline(case, side_models):
    # The side columns' encoders run in the graph, converted by skl2onnx.
    pipe, model, frame = side_models[case]
    rows = pd.concat([frame, frame.iloc[::-7]], ignore_index=True)
    bound = probability_bound("fcsr", pipe, rows) + side_bound(pipe, rows)
    proba = pipe.predict_proba(rows)
    np.testing.assert_allclose(model.predict_proba(rows), proba, rtol=0, atol=bound)
    # The labels of two computations: equal wherever those probabilities decide them.
    assert_same_predictions(
        model.predict(rows.to_dict("list")), pipe.predict(rows), proba, bound, pipe.classes_
    )
    assert model.columns["inputs"] == {c: f"columns/{c}" for c in SIDE[case]["inputs"]}
    assert model.columns["features"] == [
        f for f in pipe["columns"].get_feature_names_out() if f != "text__body"
    ]


def test_side_columns_are_checked_when_served(side_models):
    pipe, model, frame = side_models["one_hot"]
    # OneHotEncoder(handle_unknown="error"), its default: the pipeline and the server refuse.
    unknown = frame.iloc[:3].assign(product="watch")
    with pytest.raises(ValueError, match="unknown categor"):
        pipe.predict(unknown)
    with pytest.raises(ValueError, match="handle_unknown='error'"):
        model.predict(unknown)
    with pytest.raises(ValueError, match="no column 'product'"):
        model.predict(frame.drop(columns="product"))
    with pytest.raises(ValueError, match="column 'product' holds 2 rows, the text 3"):
        model.predict({**frame.iloc[:3].to_dict("list"), "product": ["phone", "tablet"]})
    pipe, model, frame = side_models["scaler"]
    gaps = frame.iloc[:4].assign(rating=[1.0, np.nan, 2.0, np.nan])
    with pytest.raises(ValueError, match=r"Side feature 'num__rating' .* \(document 1 first\)"):
        model.predict(gaps)
    with pytest.raises(ValueError, match="column 'age' holds values that are not numbers"):
        model.predict(frame.iloc[:2].assign(age="old"))


def test_side_columns_served_without_scikit_learn(side_models, tmp_path):
    pipe, _, frame = side_models["ordinal"]
    onnx_path, _ = to_onnx(pipe, tmp_path / "model.onnx")
    bound = probability_bound("fcsr", pipe, frame) + side_bound(pipe, frame)
    served = serve_alone(onnx_path, frame.to_dict("list"))
    np.testing.assert_allclose(served, pipe.predict_proba(frame), rtol=0, atol=bound)


def test_side_columns_that_skl2onnx_cannot_convert_are_refused(tmp_path, monkeypatch):
    frame, y = side_frame()
    pipe = make_side_pipeline("scaler").fit(frame.fillna({"age": 40.0}), y)
    with monkeypatch.context() as patch:
        patch.setitem(sys.modules, "skl2onnx", None)
        with pytest.raises(ImportError, match=r"skl2onnx package: .*sklearn-lama\[onnx\]"):
            to_onnx(pipe, tmp_path / "model.onnx")
    # In place of the fitted scaler, a transformer that skl2onnx has no converter for.
    log = FunctionTransformer(np.log1p).fit(frame[["rating", "age"]])
    pipe["columns"].transformers_[1] = ("num", log, ["rating", "age"])
    with pytest.raises(TypeError, match="skl2onnx: FunctionTransformer is not supported"):
        to_onnx(pipe, tmp_path / "model.onnx")
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_side_columns_of_0_10_0_are_refused(side_models, tmp_path):
    # 0.10.0 wrote the side columns' encoders into the settings file (format
    # version 1), for its server to apply; this one refuses them by name.
    pipe, _, _ = side_models["imputer"]
    onnx_path, settings_path = to_onnx(pipe, tmp_path / "model.onnx")
    settings = json.loads(settings_path.read_text())
    old = {"text": "body", "parts": [{"columns": ["age"], "steps": [{"kind": "impute"}]}]}
    settings.update(format_version=1, library_version="0.10.0", columns=old)
    settings_path.write_text(json.dumps(settings))
    refused = r"sklearn_lama 0\.10\.0 with side columns.* export the fitted pipeline again"
    with pytest.raises(ValueError, match=refused):
        OnnxTextClassifier(onnx_path)
