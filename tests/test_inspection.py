"""sklearn_lama.inspection: attention tables, plots and HTML on tiny fitted pipelines."""

import sys
import xml.etree.ElementTree as ET

import matplotlib
import numpy as np
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.pipeline import make_pipeline

from sklearn_lama import (
    DuoClassifier,
    FCSRClassifier,
    LAMAClassifier,
    MetaEmbeddingTransformer,
    Word2VecVectorizer,
)
from sklearn_lama.inspection import (
    explain,
    plot_attention,
    plot_training_curves,
    top_attended_words,
)

matplotlib.use("Agg")
from matplotlib import pyplot as plt

from tests._tolerances import Exact, assert_identical

DOCS = [
    "a good great film , truly nice",
    "bad awful film , a poor sad plot",
    "great nice acting and good music",
    "poor awful acting and bad music",
] * 10
LABELS = ["pos", "neg"] * 20
N_ROWS = {"lama": 3, "fcsr": 1, "duo": 2}
# The names each classifier gives its attention rows.
ROW_LABELS = {
    "lama": ["head 1", "head 2", "head 3"],
    "fcsr": ["attention"],
    "duo": ["a^P (scores on S)", "a^S (scores on P)"],
}
# A quarter held out: 5 documents per class, enough for early stopping's
# validation split, so that the training curves have a validation line.


def _pipeline(kind):
    if kind == "duo":
        return make_pipeline(
            MetaEmbeddingTransformer(
                [
                    (
                        "cbow",
                        Word2VecVectorizer(pretrained=None, vector_size=8, sg=0, random_state=0),
                    ),
                    (
                        "sg",
                        Word2VecVectorizer(pretrained=None, vector_size=12, sg=1, random_state=0),
                    ),
                ],
                min_count=1,
            ),
            DuoClassifier(d_ff=16, max_epochs=4, validation_fraction=0.25, random_state=0),
        )
    vectorizer = Word2VecVectorizer(pretrained=None, vector_size=8, min_count=1, random_state=0)
    if kind == "lama":
        classifier = LAMAClassifier(
            n_heads=3,
            hidden_size=4,
            mlp_hidden=8,
            max_epochs=4,
            validation_fraction=0.25,
            random_state=0,
        )
    else:
        classifier = FCSRClassifier(max_epochs=4, validation_fraction=0.25, random_state=0)
    return make_pipeline(vectorizer, classifier)


@pytest.fixture(scope="module", params=sorted(N_ROWS))
def fitted(request):
    return request.param, _pipeline(request.param).fit(DOCS, LABELS)


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


# ------------------------------------------------------------ the attention contract
def test_attention_weights_contract(fitted):
    kind, pipe = fitted
    docs = ["a good film", "bad", "great nice acting and good music , truly", ""]
    sequences = pipe[:-1].transform(docs)
    weights = pipe[-1].attention_weights(sequences)
    assert len(weights) == len(docs)
    for w, n in zip(weights, sequences.lengths):
        assert w.shape == (N_ROWS[kind], n)  # padding cut off
        if n:
            np.testing.assert_allclose(w.sum(axis=1), 1.0, rtol=1e-5)
            assert (w >= 0).all()
    # A document's weights do not depend on the documents batched with it.
    for i, doc in enumerate(docs):
        alone = pipe[-1].attention_weights(pipe[:-1].transform([doc]))[0]
        np.testing.assert_allclose(alone, weights[i], rtol=1e-5, atol=1e-7)


# ------------------------------------------------------------ top_attended_words
class _StubClassifier(ClassifierMixin, BaseEstimator):
    """Attention fixed by hand: 'key' gets 4x the weight of any other token."""

    def __init__(self, vectorizer):
        self.vectorizer = vectorizer

    def attention_weights(self, sequences):
        key = self.vectorizer.vocabulary_["key"]
        out = []
        for i in range(len(sequences)):
            raw = np.where(sequences.document(i) == key, 4.0, 1.0)[None, :]
            out.append(np.vstack([raw, raw]) / raw.sum())
        return out

    def predict_proba(self, sequences):
        pos = np.array(
            [
                self.vectorizer.vocabulary_["up"] in sequences.document(i)
                for i in range(len(sequences))
            ],
            dtype=float,
        )
        return np.column_stack([1 - pos, pos])

    def fit(self, X=None, y=None):
        self.classes_ = np.array(["neg", "pos"])
        return self


def test_top_attended_words_ranks_by_relative_weight():
    docs = ["key up one", "key up one two", "down one two"] * 5
    vectorizer = Word2VecVectorizer(
        pretrained=None, vector_size=4, min_count=1, random_state=0
    ).fit(docs)
    pipe = make_pipeline(vectorizer, _StubClassifier(vectorizer).fit())
    # Predicted labels: documents with "up" are pos. 'key' takes 4/6 of "key up
    # one" (2.0 times the uniform 1/3) and 4/7 of "key up one two" (2.29); 'one'
    # and 'up' score (0.5 + 0.57) / 2 there, 'two' 0.57; ties go alphabetically.
    table = top_attended_words(pipe, docs, n_words=3)
    assert list(table.columns) == ["neg", "pos"]
    assert table["pos"].tolist() == ["key", "two", "one"]
    assert table["neg"].tolist() == ["down", "one", "two"]
    # True labels regroup the documents; min_count drops rare words.
    y = ["neg", "pos", "pos"] * 5
    table = top_attended_words(pipe, docs, y, n_words=2, min_count=6)
    assert table["neg"].tolist() == [None, None]
    assert table["pos"].tolist()[0] == "one"


def test_top_attended_words_without_pandas_is_a_dict(fitted, monkeypatch):
    _, pipe = fitted
    monkeypatch.setitem(sys.modules, "pandas", None)
    table = top_attended_words(pipe, DOCS, LABELS, n_words=4)
    assert isinstance(table, dict)
    assert list(table) == ["neg", "pos"]
    vocabulary = set(pipe[0].vocabulary_)
    for words in table.values():
        assert 0 < len(words) <= 4
        assert set(words) <= vocabulary


def test_top_attended_words_checks_its_input(fitted):
    _, pipe = fitted
    with pytest.raises(ValueError, match="y has 1 labels but there are 40 documents"):
        top_attended_words(pipe, DOCS, ["pos"])
    with pytest.raises(ValueError, match="n_words"):
        top_attended_words(pipe, DOCS, n_words=0)
    with pytest.raises(TypeError, match="must be a fitted sklearn Pipeline"):
        top_attended_words(pipe[-1], DOCS)
    with pytest.raises(TypeError, match="'X' parameter"):
        top_attended_words(pipe, "a good film")


# ------------------------------------------------------------ plots
def test_plot_attention_one_row_per_head(fitted):
    kind, pipe = fitted
    ax = plot_attention(pipe, "a good great film , truly nice", method="attention")
    image = ax.images[0].get_array()
    assert image.shape == (N_ROWS[kind], 7)
    np.testing.assert_allclose(image.sum(axis=1), 1.0, rtol=1e-5)
    assert [t.get_text() for t in ax.get_xticklabels()] == DOCS[0].split()
    assert [t.get_text() for t in ax.get_yticklabels()] == ROW_LABELS[kind]
    assert ax.get_title(loc="left").startswith("predicted ")


def test_plot_attention_defaults_to_the_classifier_s_explanation(fitted):
    _, pipe = fitted
    default = type(pipe[-1])._default_explanation
    ax = plot_attention(pipe, DOCS[0])
    chosen = plot_attention(pipe, DOCS[0], method=default)
    assert_identical(ax.images[0].get_array(), chosen.images[0].get_array(), why=Exact.SAME_CALL)
    assert ax.images[0].colorbar.ax.get_ylabel() == chosen.images[0].colorbar.ax.get_ylabel()


def test_a_foreign_classifier_is_explained_by_attention_only():
    docs = ["key up one", "down one two"] * 5
    vectorizer = Word2VecVectorizer(
        pretrained=None, vector_size=4, min_count=1, random_state=0
    ).fit(docs)
    pipe = make_pipeline(vectorizer, _StubClassifier(vectorizer).fit())
    # Its default is attention; attributions need the package's per-token hook.
    assert explain(pipe, docs[:1]).weights[0].shape == (2, 3)
    with pytest.raises(TypeError, match="use method='attention'"):
        explain(pipe, docs[:1], method="integrated_gradients")


def test_plot_attention_names_the_rows_of_a_foreign_classifier():
    docs = ["key up one", "down one two"] * 5
    vectorizer = Word2VecVectorizer(
        pretrained=None, vector_size=4, min_count=1, random_state=0
    ).fit(docs)
    pipe = make_pipeline(vectorizer, _StubClassifier(vectorizer).fit())
    ax = plot_attention(pipe, "key up one")
    assert [t.get_text() for t in ax.get_yticklabels()] == ["row 1", "row 2"]


def test_plot_attention_draws_on_given_axes_and_cuts_tokens(fitted):
    _, pipe = fitted
    _, ax = plt.subplots()
    assert plot_attention(pipe, DOCS[0], ax=ax, max_tokens=3) is ax
    assert len(ax.get_xticklabels()) == 3
    with pytest.raises(ValueError, match="max_tokens"):
        plot_attention(pipe, DOCS[0], max_tokens=0)
    with pytest.raises(TypeError, match="document must be one str"):
        plot_attention(pipe, DOCS[:2])
    with pytest.raises(ValueError, match="no token left"):
        plot_attention(pipe, "")


def test_plot_training_curves(fitted):
    _, pipe = fitted
    loss_ax, acc_ax = plot_training_curves(pipe)
    epochs = pipe[-1].n_epochs_
    labels = [line.get_label() for line in loss_ax.get_lines()]
    assert labels[:2] == ["train", "validation"]
    assert len(loss_ax.get_lines()[0].get_xdata()) == epochs
    assert [line.get_label() for line in acc_ax.get_lines()][:2] == ["train", "validation"]
    assert plot_training_curves(pipe[-1])[0].get_ylabel() == "loss"


def test_plot_training_curves_rejects_unfitted():
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        plot_training_curves(LAMAClassifier())


def test_plots_without_matplotlib_name_the_extra(fitted, monkeypatch):
    _, pipe = fitted
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(ImportError, match=r"sklearn-lama\[plot\]"):
        plot_attention(pipe, DOCS[0])
    with pytest.raises(ImportError, match=r"sklearn-lama\[plot\]"):
        plot_training_curves(pipe)
    # The table and the HTML need no matplotlib.
    assert len(explain(pipe, DOCS[:2])) == 2


# ------------------------------------------------------------ explain
def test_explain_is_valid_html_with_prediction(fitted):
    _, pipe = fitted
    explanation = explain(pipe, DOCS[:3] + [""])
    page = explanation._repr_html_()
    assert page == explanation.to_html()
    root = ET.fromstring(page)  # well-formed: every tag closed, every entity escaped
    documents = list(root)
    assert len(documents) == 4
    predicted = pipe.predict(DOCS[:3] + [""])
    proba = pipe.predict_proba(DOCS[:3] + [""]).max(axis=1)
    for node, label, p, tokens in zip(documents, predicted, proba, explanation.tokens):
        header, body = list(node)
        assert header.find("b").text == label
        assert f"(p = {p:.3f})" in "".join(header.itertext())
        assert [span.text for span in body.findall("span")] == tokens
    shades = [span.get("style") for span in documents[0][1].findall("span")]
    assert any("0.000)" not in s for s in shades) and any("1.000)" in s for s in shades)


def test_explain_escapes_documents_and_labels():
    docs = ["<script>alert(1)</script> good & fine", "bad <b>awful</b>"] * 10
    labels = ['<img src=x onerror="x">', "neg"] * 10
    pipe = make_pipeline(
        Word2VecVectorizer(
            pretrained=None, vector_size=4, min_count=1, token_pattern=r"\S+", random_state=0
        ),
        LAMAClassifier(n_heads=2, hidden_size=4, mlp_hidden=4, max_epochs=2, random_state=0),
    ).fit(docs, labels)
    page = explain(pipe, docs[:2]).to_html()
    assert "<script>" not in page and "<b>awful" not in page and "<img" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    root = ET.fromstring(page)
    texts = ["".join(node.itertext()) for node in root]
    assert "<script>alert(1)</script> good & fine" in texts[0]
    assert texts[0].startswith(pipe.predict(docs[:1])[0])


def test_explain_rejects_a_single_string(fitted):
    _, pipe = fitted
    with pytest.raises(TypeError, match="wrap one document in a list"):
        explain(pipe, "a good film")
