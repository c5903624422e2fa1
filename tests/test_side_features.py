"""Text beside tabular columns: a ColumnTransformer's text and side features, classified."""

import pickle

import numpy as np
import pandas as pd
import pytest
import torch
from sklearn.compose import ColumnTransformer
from sklearn.impute import SimpleImputer
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import (
    KBinsDiscretizer,
    OneHotEncoder,
    OrdinalEncoder,
    StandardScaler,
    TargetEncoder,
)

from sklearn_lama import (
    MetaEmbeddingTransformer,
    TokenSequences,
    Word2VecVectorizer,
    load_weights,
    save_weights,
)
from sklearn_lama.classification._inputs import restore_adapter
from sklearn_lama.inspection import (
    deletion_curve,
    explain,
    side_contributions,
    token_attributions,
)
from sklearn_lama.modules import FoldedNetwork, SequenceNetwork
from sklearn_lama.text._sequences import pad_ragged
from tests._tolerances import Exact, assert_differ, assert_identical, assert_same_predictions

from .conftest import make_classifier, probability_bound

WORDS = ["the", "parcel", "arrived", "late", "on", "time", "again", "box", "was", "fine"]
PRODUCTS = ["phone", "laptop", "tablet"]


def tickets(n=160, seed=0):
    """Tickets urgent when ``age`` is positive or the product a tablet: the text is noise.

    The text alone predicts the label no better than chance, so a model that
    fits it well reads the side features.
    """
    rng = np.random.RandomState(seed)
    body = [" ".join(rng.choice(WORDS, rng.randint(3, 9))) for _ in range(n)]
    age = rng.normal(size=n)
    product = rng.choice(PRODUCTS, n)
    y = np.where((age > 0) | (product == "tablet"), "urgent", "normal")
    return pd.DataFrame({"body": body, "age": age, "product": product}), y


def text_step(kind):
    vectorizer = Word2VecVectorizer(
        pretrained=None, vector_size=8, min_count=1, epochs=2, random_state=0
    )
    if kind != "duo":
        return vectorizer
    other = Word2VecVectorizer(
        pretrained=None, vector_size=6, min_count=1, epochs=2, random_state=1
    )
    return MetaEmbeddingTransformer([("a", vectorizer), ("b", other)])


def columns(kind="fcsr", **params):
    return ColumnTransformer(
        [
            ("text", text_step(kind), "body"),
            ("num", StandardScaler(), ["age"]),
            ("cat", OneHotEncoder(), ["product"]),
        ],
        **params,
    )


# Adam moves each weight by about ``lr`` a step: Duo's default 0.002 leaves the
# four side weights near 0.1 after the 125 steps of these small fits.
FAST = {"lama": {}, "fcsr": {}, "duo": {"lr": 0.02}}


def side_pipeline(kind, **params):
    classifier = make_classifier(kind, **{**FAST[kind], **params})
    return Pipeline([("columns", columns(kind)), ("clf", classifier)])


# ----------------------------------------------------------------- the container
TABLE = np.arange(12, dtype=np.float32).reshape(6, 2)


def small_sequences():
    return TokenSequences([2, 3, 4, 5, 2, 3], [0, 2, 3, 6], (TABLE,), "toy")


def test_hstack_appends_side_features_sharing_ids_and_tables():
    seqs = small_sequences()
    joined = np.hstack([seqs, np.ones((3, 1)), np.arange(6).reshape(3, 2)])
    assert isinstance(joined, TokenSequences) and joined.shape == (3, 4)
    assert joined.side.dtype == np.float32 and joined.side.tolist() == [
        [1, 0, 1],
        [1, 2, 3],
        [1, 4, 5],
    ]
    assert np.shares_memory(joined.ids, seqs.ids) and joined.tables[0] is TABLE
    assert seqs.side is None and seqs.shape == (3, 1)
    # Indexing takes the side features' rows with the documents', tables shared.
    part = joined[[2, 0]]
    assert part.side.tolist() == [[1, 4, 5], [1, 0, 1]] and part.tables[0] is TABLE
    assert part.document(0).tolist() == [5, 2, 3]
    restored = pickle.loads(pickle.dumps(joined))
    assert restored.side.tolist() == joined.side.tolist() and restored.shape == (3, 4)


def test_concatenate_joins_the_documents_of_containers_over_one_vocabulary():
    seqs = np.hstack([small_sequences(), np.arange(6).reshape(3, 2)])
    joined = np.concatenate([seqs[[2]], seqs[[0, 1]]])
    assert isinstance(joined, TokenSequences) and joined.tables[0] is TABLE
    want = seqs[[2, 0, 1]]
    assert_identical(joined.ids, want.ids, why=Exact.DISCRETE)
    assert_identical(joined.offsets, want.offsets, why=Exact.DISCRETE)
    assert_identical(joined.side, want.side, why=Exact.COPY)
    with pytest.raises(ValueError, match="different vocabularies"):
        other = TokenSequences(seqs.ids, seqs.offsets, seqs.tables, "another", side=seqs.side)
        np.concatenate([seqs, other])
    with pytest.raises(ValueError, match="different side features"):
        np.concatenate([seqs, small_sequences()])
    with pytest.raises(TypeError, match="only with other TokenSequences"):
        np.concatenate([seqs, np.ones((3, 3))])


def test_frames_name_their_side_features():
    seqs = small_sequences()
    joined = np.hstack([seqs, pd.DataFrame({"age": [1.0, 2.0, 3.0]})])
    assert joined.side_names == ("age",)


def test_the_container_is_no_numpy_array_and_says_how_to_stack_densely():
    with pytest.raises(TypeError, match="sparse_threshold=0"):
        np.asarray(small_sequences())


def test_two_text_columns_are_refused():
    with pytest.raises(ValueError, match="one text column"):
        np.hstack([small_sequences(), small_sequences()])


def test_side_features_must_be_numeric():
    with pytest.raises(TypeError, match="OneHotEncoder"):
        small_sequences().with_side(np.array([["a"], ["b"], ["c"]]))


# ------------------------------------------------------------ the text column
def test_text_step_takes_a_series_a_one_column_frame_and_a_column_array():
    frame, _ = tickets(40)
    vectorizer = Word2VecVectorizer(
        pretrained=None, vector_size=4, min_count=1, epochs=1, random_state=0
    )
    expected = vectorizer.fit(frame["body"]).transform(frame["body"]).ids
    for column in (frame[["body"]], frame[["body"]].to_numpy()):
        assert_identical(
            vectorizer.fit(column).transform(column).ids, expected, why=Exact.DISCRETE
        )


def test_text_step_refuses_several_columns_and_names_a_column_that_is_not_text():
    frame, _ = tickets(40)
    vectorizer = Word2VecVectorizer(pretrained=None, vector_size=4, min_count=1, epochs=1)
    with pytest.raises(ValueError, match="one column of documents"):
        vectorizer.fit(frame[["body", "product"]])
    with pytest.raises(TypeError, match="column 'age' is float"):
        vectorizer.fit(frame["age"])
    # pandas 3 stores the None of a text column as NaN (a float), earlier releases as None.
    frame.loc[3, "body"] = None
    with pytest.raises(TypeError, match="Document 3 of column 'body' is (float|NoneType)"):
        vectorizer.fit(frame["body"])


# -------------------------------------------------------- the models use them
def test_each_classifier_learns_a_label_only_the_side_features_carry(kind):
    frame, y = tickets()
    pipe = side_pipeline(kind).fit(frame, y)
    assert pipe[-1].input_adapter_.n_side == 4
    assert pipe.score(frame, y) >= 0.8
    # The text alone carries nothing of the label: the same classifier on it
    # stays near the majority class's 0.625.
    alone = Pipeline([("emb", text_step(kind)), ("clf", make_classifier(kind, **FAST[kind]))])
    assert alone.fit(frame["body"], y).score(frame["body"], y) < 0.7


def test_predictions_follow_the_side_features():
    frame, y = tickets()
    pipe = side_pipeline("fcsr").fit(frame, y)
    # One ticket, older and older: the probability of "urgent" rises with age
    # (a linear term of the logits), from "normal" to "urgent".
    ages = frame.iloc[[0] * 5].assign(product="phone", age=[-2.0, -1.0, 0.0, 1.0, 2.0])
    urgent = pipe.predict_proba(ages)[:, list(pipe.classes_).index("urgent")]
    assert np.all(np.diff(urgent) > 0)
    assert pipe.predict(ages[:1])[0] == "normal" and pipe.predict(ages[-1:])[0] == "urgent"


def test_without_side_features_the_network_has_no_new_parameters(kind):
    frame, y = tickets(60)
    pipe = Pipeline([("emb", text_step(kind)), ("clf", make_classifier(kind, max_epochs=1))])
    network = pipe.fit(frame["body"], y)[-1].net_.module_
    assert network.side is None
    assert not any(name.startswith("side") for name in network.state_dict())


def test_side_features_add_a_linear_term_to_the_logits():
    """The logits with side features are the text's logits plus ``side @ W.T``.

    Both sides are computed from the same float32 text logits ``a``: the
    network returns ``fl(a + b)`` and the test subtracts ``a`` again, two
    roundings of at most half an ulp of the largest value each, so the error
    is below ``2**-23 * max|a + b|`` (plus the same for ``b`` itself, a
    sum of 3 products: ``3 * 2**-24 * sum|side * w|``).
    """
    torch.manual_seed(0)

    class MeanCore(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.out = torch.nn.Linear(4, 2)

        def forward(self, inputs, mask):
            return self.out((inputs * mask.unsqueeze(-1)).sum(1))

    core = MeanCore()
    network = SequenceNetwork(
        core, vocabulary_size=7, embedding_dim=4, side_features=3, n_outputs=2
    )
    torch.nn.init.normal_(network.side.weight)
    ids = torch.tensor([[2, 3, 4], [5, 6, 0]])
    lengths = torch.tensor([3, 2])
    side = torch.randn(2, 3)
    logits = network(lengths, ids=ids, side=side)[0]
    text = network.classify(*network.embed(lengths, ids=ids))[0]
    term = side @ network.side.weight.T
    bound = 2**-23 * logits.abs().max() + 3 * 2**-24 * (side.abs() @ network.side.weight.abs().T)
    assert torch.all((logits - text - term).abs() <= bound)


def test_duo_folded_inference_adds_the_side_term():
    """Duo's folded inference (the estimator's ``inference_module_``) keeps the side term.

    Two folded runs that differ in the side features only differ by
    ``side @ W.T``, up to the roundings of adding it (see the test above).
    """
    frame, y = tickets(80)
    pipe = side_pipeline("duo", max_epochs=2).fit(frame, y)
    network, folded = pipe[-1].net_.module_, pipe[-1].inference_module_
    assert isinstance(folded, FoldedNetwork)
    seqs = pipe[0].transform(frame.iloc[:8])
    ids, lengths = pad_ragged(seqs.ids, seqs.offsets, np.arange(8))
    ids, lengths = torch.from_numpy(ids), torch.from_numpy(lengths)
    side = torch.from_numpy(seqs.side)
    with torch.no_grad():
        logits = folded(lengths, ids=ids, side=side)[0]
        base = folded(lengths, ids=ids, side=torch.zeros_like(side))[0]
    term = side @ network.side.weight.T
    bound = 2**-22 * logits.abs().max() + side.shape[1] * 2**-24 * (
        side.abs() @ network.side.weight.abs().T
    )
    assert torch.all((logits - base - term).abs() <= bound)


# ----------------------------------------------------------------- bad input
def test_missing_values_are_refused_naming_the_column_and_pointing_to_an_imputer():
    frame, y = tickets(60)
    frame.loc[5, "age"] = np.nan
    named = ColumnTransformer(
        [
            ("text", text_step("fcsr"), "body"),
            ("num", StandardScaler().set_output(transform="pandas"), ["age"]),
        ]
    )
    pipe = Pipeline([("columns", named), ("clf", make_classifier("fcsr", max_epochs=1))])
    with pytest.raises(ValueError, match="Side feature 'age' holds missing .*SimpleImputer"):
        pipe.fit(frame, y)
    # Unnamed (numpy) outputs are numbered.
    with pytest.raises(ValueError, match=r"Side feature 0 \(of 4\) holds missing values"):
        side_pipeline("fcsr", max_epochs=1).fit(frame, y)
    imputed = ColumnTransformer(
        [
            ("text", text_step("fcsr"), "body"),
            ("num", make_pipeline(SimpleImputer(), StandardScaler()), ["age"]),
        ]
    )
    Pipeline([("columns", imputed), ("clf", make_classifier("fcsr", max_epochs=1))]).fit(frame, y)


def test_unknown_categories_follow_the_encoders_handle_unknown():
    frame, y = tickets(60)
    unseen = frame.iloc[:3].assign(product="watch")
    pipe = side_pipeline("fcsr", max_epochs=1).fit(frame, y)
    with pytest.raises(ValueError, match="unknown categor"):
        pipe.predict(unseen)
    pipe.set_params(columns__cat__handle_unknown="ignore").fit(frame, y)
    assert len(pipe.predict(unseen)) == 3


def test_columns_changed_between_fit_and_predict_are_named():
    frame, y = tickets(60)
    pipe = side_pipeline("fcsr", max_epochs=1).fit(frame, y)
    with pytest.raises(ValueError, match="age"):
        pipe.predict(frame.drop(columns="age"))
    with pytest.raises(TypeError, match="column 'body'"):
        pipe.predict(frame.assign(body=np.arange(len(frame))))
    # A classifier fitted with 4 side features refuses documents with another number.
    other = ColumnTransformer([("text", pipe[0].named_transformers_["text"], "body")])
    with pytest.raises(ValueError, match="0 side features beside its text, but FCSRClassifier"):
        pipe[-1].predict(other.fit_transform(frame))


def test_a_sparse_stack_is_refused_with_the_fix():
    frame, y = tickets(60)
    frame["product"] = [f"p{i % 20}" for i in range(len(frame))]
    with pytest.raises(TypeError, match="sparse_threshold=0"):
        columns().fit_transform(frame)
    assert columns(sparse_threshold=0).fit_transform(frame).shape == (60, 22)


NEIGHBOURS = {
    # The default OneHotEncoder's output is sparse: scikit-learn 1.6 and 1.7 read the
    # size of every dense output beside it before choosing how to stack.
    "one-hot": lambda: OneHotEncoder(),
    "one-hot, dense": lambda: OneHotEncoder(sparse_output=False),
    "ordinal": lambda: OrdinalEncoder(),
    "target": lambda: TargetEncoder(random_state=0),
    "bins": lambda: make_pipeline(OrdinalEncoder(), KBinsDiscretizer(n_bins=2)),
    "imputed one-hot": lambda: make_pipeline(
        SimpleImputer(strategy="most_frequent"), OneHotEncoder(handle_unknown="ignore")
    ),
}


@pytest.mark.parametrize("neighbour", NEIGHBOURS)
def test_text_fits_and_predicts_beside_every_encoder(neighbour):
    frame, y = tickets(80)
    columns = ColumnTransformer(
        [
            ("text", text_step("fcsr"), "body"),
            ("cat", NEIGHBOURS[neighbour](), ["product"]),
            ("num", StandardScaler(), ["age"]),
        ]
    )
    pipe = Pipeline([("columns", columns), ("clf", make_classifier("fcsr", max_epochs=2))])
    predicted = pipe.fit(frame, y).predict(frame)
    assert predicted.shape == (80,) and set(predicted) <= set(y)
    assert pipe[-1].input_adapter_.n_side == columns.transform(frame).n_side >= 2


def test_a_sparse_remainder_passes_through_as_side_features():
    frame, y = tickets(40)
    columns = ColumnTransformer(
        [("text", text_step("fcsr"), "body"), ("cat", OneHotEncoder(), ["product"])],
        remainder="passthrough",
    )
    joined = columns.fit_transform(frame, y)
    assert isinstance(joined, TokenSequences) and joined.shape == (40, 1 + 3 + 1)
    np.testing.assert_allclose(joined.side[:, -1], frame["age"].to_numpy(np.float32))


# ------------------------------------------------------------ everything else
def test_grid_search_over_both_parts():
    frame, y = tickets(90)
    search = GridSearchCV(
        side_pipeline("fcsr", max_epochs=3),
        {"columns__num": [StandardScaler(), "drop"], "clf__alpha": [0.2]},
        cv=2,
    ).fit(frame, y)
    scores = search.cv_results_["mean_test_score"]
    assert search.best_params_["columns__num"] != "drop" and scores[0] > scores[1]


def test_multilabel_and_multitask_targets_with_side_features():
    frame, y = tickets(90)
    labels = np.column_stack([y == "urgent", frame["product"] == "tablet"]).astype(int)
    pipe = side_pipeline("fcsr", max_epochs=3).fit(frame, labels)
    assert pipe.predict(frame).shape == (90, 2)
    tasks = np.column_stack([y, frame["product"]]).astype(object)
    proba = side_pipeline("fcsr", max_epochs=3).fit(frame, tasks).predict_proba(frame)
    assert [p.shape for p in proba] == [(90, 2), (90, 3)]


def test_calibration_partial_fit_and_warm_start_with_side_features():
    frame, y = tickets(120)
    calibrated = side_pipeline("fcsr", calibration="temperature").fit(frame, y)
    assert calibrated[-1].temperature_ is not None
    X = columns().fit_transform(frame)
    clf = make_classifier("fcsr")
    clf.partial_fit(X, y, classes=np.unique(y)).partial_fit(X, y)
    assert clf.net_.module_.side.weight.abs().sum() > 0
    warm = make_classifier("fcsr", max_epochs=1, warm_start=True).fit(X, y)
    first = warm.net_.module_.side.weight.detach().clone()
    warm.fit(X, y)
    assert_differ(first, warm.net_.module_.side.weight)


def test_weights_file_and_pickle_keep_the_side_features(tmp_path):
    frame, y = tickets(80)
    pipe = side_pipeline("lama", max_epochs=2).fit(frame, y)
    X = pipe[0].transform(frame)
    expected = pipe[-1].predict_proba(X)
    save_weights(pipe[-1], tmp_path / "clf.safetensors")
    loaded = load_weights(tmp_path / "clf.safetensors")
    assert loaded.input_adapter_.n_side == 4
    assert_identical(loaded.predict_proba(X), expected, why=Exact.COPY)
    copy = pickle.loads(pickle.dumps(pipe))
    assert_identical(copy.predict_proba(frame), expected, why=Exact.COPY)


def test_saved_adapters_without_side_features_read_as_none():
    saved = {
        "kind": "sequences",
        "vocabulary_id": "x",
        "vocabulary_size": 5,
        "embedding_dims": [4],
        "pretrained": False,
    }
    assert restore_adapter(saved).n_side == 0


def test_explanations_read_the_text_and_split_the_side_term():
    frame, y = tickets(120)
    pipe = side_pipeline("fcsr").fit(frame, y)
    rows = frame.iloc[:4]
    explanation = explain(pipe, rows, method="occlusion")
    assert [len(t) for t in explanation.tokens] == [len(b.split()) for b in rows["body"]]
    attributions = token_attributions(pipe, rows, "integrated_gradients")
    assert [a.shape[1] for a in attributions] == [len(t) for t in explanation.tokens]
    assert deletion_curve(pipe, rows, "occlusion", max_k=2).shape == (4, 2)
    side = side_contributions(pipe, rows, targets="urgent")
    assert side.names.tolist() == [
        "num__age",
        "cat__product_laptop",
        "cat__product_phone",
        "cat__product_tablet",
    ]
    assert side.values.shape == (4, 4) and set(side.classes) == {"urgent"}
    # Urgent rises with age: age's term has the sign of the (standardised) age.
    scaled = pipe[0].transform(rows).side[:, 0]
    # The sign of a product is exact: the term's, the weight's times the age's.
    signs = [np.sign(v).astype(int) for v in (side.values[:, 0], scaled)]
    assert_identical(*signs, why=Exact.DISCRETE)


def test_onnx_server_takes_the_same_columns(tmp_path):
    pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    from sklearn_lama.export import OnnxTextClassifier, to_onnx

    frame, y = tickets(80)
    frame.loc[3, "age"] = np.nan
    imputed = ColumnTransformer(
        [
            ("text", text_step("fcsr"), "body"),
            ("num", make_pipeline(SimpleImputer(), StandardScaler()), ["age"]),
            ("cat", OneHotEncoder(handle_unknown="ignore"), ["product"]),
        ]
    )
    pipe = Pipeline([("columns", imputed), ("clf", make_classifier("fcsr", max_epochs=2))])
    pipe.fit(frame, y)
    to_onnx(pipe, tmp_path / "model.onnx")
    served = OnnxTextClassifier(tmp_path / "model.onnx")
    rows = pd.concat([frame, frame.iloc[:2].assign(product="watch")])
    # The graph's encoders (skl2onnx's) compute the side features in float32,
    # within side_bound of scikit-learn's; ONNX Runtime's kernels associate the
    # network's sums their own way: the float32 bound of the network, whose
    # 128-term reductions cover the side term's 4 products and 1 addition.
    from tests.test_export import side_bound

    bound = probability_bound("fcsr", pipe, rows) + side_bound(pipe, rows)
    proba = pipe.predict_proba(rows)
    np.testing.assert_allclose(served.predict_proba(rows), proba, rtol=0, atol=bound)
    # The labels of two computations: equal wherever those probabilities decide them.
    assert_same_predictions(
        served.predict(rows.to_dict("list")), pipe.predict(rows), proba, bound, pipe.classes_
    )
    with pytest.raises(ValueError, match="no column 'product'"):
        served.predict(rows.drop(columns="product"))
    with pytest.raises(ValueError, match="export the Pipeline of its ColumnTransformer"):
        to_onnx(pipe[-1], tmp_path / "alone.onnx")


def test_a_polars_frame_goes_the_same_way():
    pl = pytest.importorskip("polars")
    frame, y = tickets(80)
    pipe = side_pipeline("fcsr", max_epochs=2).fit(frame, y)
    polars_frame = pl.from_pandas(frame)
    assert_identical(
        pipe.predict_proba(polars_frame), pipe.predict_proba(frame), why=Exact.SAME_CALL
    )
    fitted = side_pipeline("fcsr", max_epochs=2).fit(polars_frame, y)
    assert_identical(fitted.predict_proba(frame), pipe.predict_proba(frame), why=Exact.SAME_CALL)
    vectorizer = Word2VecVectorizer(
        pretrained=None, vector_size=4, min_count=1, epochs=1, random_state=0
    )
    with pytest.raises(TypeError, match="column 'age' is float"):
        vectorizer.fit(polars_frame["age"])
    assert len(vectorizer.fit(polars_frame.select("body")).vocabulary_) > 0


def test_skops_carries_the_pipeline_with_its_column_transformer():
    skops_io = pytest.importorskip("skops.io")
    from sklearn_lama import skops_trusted_types

    frame, y = tickets(80)
    pipe = side_pipeline("fcsr", max_epochs=2).fit(frame, y)
    data = skops_io.dumps(pipe)
    untrusted = set(skops_io.get_untrusted_types(data=data))
    # Beside this package's types, skops lists scikit-learn's own that it does not know
    # (scikit-learn 1.6's ColumnTransformer holds a _RemainderColsList).
    assert {t for t in untrusted if not t.startswith("sklearn.")} <= set(skops_trusted_types())
    loaded = skops_io.loads(data, trusted=sorted(untrusted))
    assert_identical(loaded.predict_proba(frame), pipe.predict_proba(frame), why=Exact.COPY)
