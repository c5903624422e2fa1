"""Attributions beside attention: integrated gradients and occlusion on tiny fitted pipelines."""

import xml.etree.ElementTree as ET

import matplotlib
import numpy as np
import pytest
from sklearn.pipeline import Pipeline

from sklearn_lama import MetaEmbeddingTransformer, TokenSequences, Word2VecVectorizer
from sklearn_lama.inspection import (
    Attention,
    IntegratedGradients,
    Occlusion,
    TokenExplainer,
    deletion_curve,
    explain,
    plot_attention,
    token_attributions,
    top_attended_words,
)

from .conftest import make_classifier, make_pipeline, probability_bound

matplotlib.use("Agg")
from matplotlib import pyplot as plt

from tests._tolerances import Exact, assert_identical

POSITIVE = {"good", "great", "excellent", "fine", "nice", "happy", "love"}
NEGATIVE = {"bad", "awful", "poor", "terrible", "sad", "hate", "worst"}
# Unseen mixes of the toy corpus's words: a short one, a one-token one, an empty
# one (the batches carry it as one padding token) and long ones, so that batches pad.
QUERIES = [
    "a good film",
    "bad",
    "",
    "the plot was great and the movie is happy but sad and poor and the film was bad",
    "love the film and hate the plot",
]


@pytest.fixture(scope="module", params=["lama", "fcsr", "duo"])
def fitted(request, toy_corpus):
    # Every classifier at its Naive Bayes defaults: the ratio columns and pair
    # features are part of the vectors that the attributions explain.
    kind = request.param
    if kind == "duo":
        # Two embeddings, two streams into the core: both are attributed.
        embeddings = MetaEmbeddingTransformer(
            [
                ("cbow", Word2VecVectorizer(pretrained=None, vector_size=8, sg=0, random_state=0)),
                ("sg", Word2VecVectorizer(pretrained=None, vector_size=12, sg=1, random_state=0)),
            ],
            min_count=1,
        )
        pipe = Pipeline([("emb", embeddings), ("clf", make_classifier(kind, lr=0.01))])
    else:
        pipe = make_pipeline(kind)
    return kind, pipe.fit(*toy_corpus)


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _centred_logits(pipe, sequences):
    """``z_c - mean_k z_k`` of every class, from the probabilities (log p_c = z_c - constant)."""
    log_proba = np.log(pipe[-1].predict_proba(sequences))
    return log_proba - log_proba.mean(axis=1, keepdims=True)


def _padding_documents(sequences):
    """The documents with every token replaced by padding: the baseline, by the public API."""
    return TokenSequences(
        np.zeros_like(sequences.ids), sequences.offsets, sequences.tables, sequences.vocabulary_id
    )


# ------------------------------------------------------------ integrated gradients
@pytest.mark.parametrize("target", [None, "neg", "pos"])
def test_integrated_gradients_are_complete(fitted, target):
    kind, pipe = fitted
    sequences = pipe[:-1].transform(QUERIES)
    scores = _centred_logits(pipe, sequences)
    baseline = _centred_logits(pipe, _padding_documents(sequences))
    if target is None:
        explained = scores.argmax(axis=1)
    else:
        explained = np.full(len(QUERIES), list(pipe[-1].classes_).index(target))
    rows = np.arange(len(QUERIES))
    difference = scores[rows, explained] - baseline[rows, explained]
    # The test means something only if the documents move the score.
    assert np.abs(difference).max() > 1.0
    attributions = token_attributions(
        pipe, QUERIES, IntegratedGradients(n_steps=128), target=target
    )
    totals = np.array([a.sum() for a in attributions])
    # Completeness: the attributions add up to F(x) - F(baseline), within 1 %.
    np.testing.assert_allclose(totals, difference, rtol=0.01, atol=1e-4)


def test_integrated_gradients_of_the_two_classes_are_opposite(fitted):
    _, pipe = fitted
    # With two classes, each centred logit is half the log-odds, with its sign.
    to_neg = token_attributions(pipe, QUERIES, "integrated_gradients", target="neg")
    to_pos = token_attributions(pipe, QUERIES, "integrated_gradients", target="pos")
    # The two backward passes differ by the sign of their seed only, and
    # rounding to nearest is symmetric under negation: exactly opposite.
    for a, b in zip(to_neg, to_pos):
        assert_identical(a, -b, why=Exact.NEGATED)


# ------------------------------------------------------------ occlusion
def test_occlusion_is_the_drop_when_the_token_is_removed(fitted):
    kind, pipe = fitted
    sequences = pipe[:-1].transform(QUERIES)
    explained = pipe[-1].predict_proba(sequences).argmax(axis=1)
    attributions = token_attributions(pipe, QUERIES, "occlusion")
    for i, row in enumerate(attributions):
        ids = sequences.document(i)
        if not len(ids):
            assert row.shape == (1, 0)
            continue
        # Every one-token-shorter copy of the document, through predict_proba.
        shorter = [np.delete(ids, t) for t in range(len(ids))]
        offsets = np.concatenate([[0], np.cumsum([len(s) for s in shorter])])
        removed = TokenSequences(
            np.concatenate(shorter), offsets, sequences.tables, sequences.vocabulary_id
        )
        full = _centred_logits(pipe, sequences[[i]])[0, explained[i]]
        expected = full - _centred_logits(pipe, removed)[:, explained[i]]
        # Both sides batch the documents their own way: two logits each, each
        # within twice the probability bound, centring doubling it again.
        bound = 8 * probability_bound(kind, pipe, [QUERIES[i]])
        np.testing.assert_allclose(row[0], expected, rtol=0, atol=bound)


# ------------------------------------------------------------ shapes and padding
@pytest.mark.parametrize("method", ["integrated_gradients", "occlusion"])
def test_attributions_follow_the_attention_convention(fitted, method):
    _, pipe = fitted
    sequences = pipe[:-1].transform(QUERIES)
    attributions = token_attributions(pipe, QUERIES, method)
    attention = token_attributions(pipe, QUERIES, "attention")
    assert len(attributions) == len(QUERIES)
    for a, w, n in zip(attributions, attention, sequences.lengths):
        # One row over the document's tokens, padding cut off, like attention_weights.
        assert a.shape == (1, n)
        assert w.shape[1] == n
        assert np.isfinite(a).all()
    # A document's attributions do not depend on the documents padded with it.
    for i, doc in enumerate(QUERIES):
        alone = token_attributions(pipe, [doc], method)[0]
        np.testing.assert_allclose(alone, attributions[i], rtol=1e-4, atol=1e-6)


def test_attention_method_is_attention_weights(fitted):
    _, pipe = fitted
    sequences = pipe[:-1].transform(QUERIES)
    for a, w in zip(
        token_attributions(pipe, QUERIES, Attention()), pipe[-1].attention_weights(sequences)
    ):
        assert_identical(a, w, why=Exact.SAME_CALL)


def test_target_broadcasts_and_is_checked(fitted):
    _, pipe = fitted
    per_document = token_attributions(pipe, QUERIES[:2], "occlusion", target=["pos", "pos"])
    one_label = token_attributions(pipe, QUERIES[:2], "occlusion", target="pos")
    for a, b in zip(per_document, one_label):
        assert_identical(a, b, why=Exact.SAME_CALL)
    with pytest.raises(ValueError, match=r"target holds labels \['maybe'\]"):
        token_attributions(pipe, QUERIES[:2], "occlusion", target="maybe")
    with pytest.raises(ValueError, match="target has 1 labels but there are 2 documents"):
        token_attributions(pipe, QUERIES[:2], "occlusion", target=["pos"])


def test_methods_are_checked(fitted):
    _, pipe = fitted
    with pytest.raises(ValueError, match="method must be one of"):
        token_attributions(pipe, QUERIES, "gradients")
    with pytest.raises(ValueError, match="n_steps must be a positive int"):
        token_attributions(pipe, QUERIES, IntegratedGradients(n_steps=0))
    with pytest.raises(TypeError, match="wrap one document in a list"):
        token_attributions(pipe, "a good film", Occlusion())


# ------------------------------------------------------------ what the views show
@pytest.mark.parametrize("method", ["integrated_gradients", "occlusion"])
def test_top_words_per_class_are_the_words_that_raise_it(fitted, method, toy_corpus):
    _, pipe = fitted
    table = top_attended_words(pipe, *toy_corpus, n_words=5, method=method)
    # The words of each class, not the filler words that every class shares.
    assert set(table["pos"]) <= POSITIVE
    assert set(table["neg"]) <= NEGATIVE


def test_explain_shades_attributions_by_sign(fitted):
    _, pipe = fitted
    explanation = explain(pipe, QUERIES, method="occlusion")
    root = ET.fromstring(explanation.to_html())
    spans = [span for node in root for span in node[1].findall("span")]
    assert [span.text for span in spans] == [t for tokens in explanation.tokens for t in tokens]
    for span, value in zip(spans, np.concatenate([w[0] for w in explanation.weights])):
        colour = span.get("style")
        # Printed with 4 decimals: within half the last one.
        assert float(span.get("title")) == pytest.approx(value, abs=1e-4)
        if value > 0:
            assert "rgba(220, 40, 30" in colour
        elif value < 0:
            assert "rgba(30, 90, 220" in colour
    # A document's largest attribution in size gets the full shade.
    assert sum("1.000)" in span.get("style") for span in spans) == len(QUERIES) - 1


def test_plot_attention_shows_one_row_of_attributions(fitted):
    _, pipe = fitted
    ax = plot_attention(pipe, QUERIES[3], method="integrated_gradients")
    image = ax.images[0]
    expected = token_attributions(pipe, QUERIES[3:4], "integrated_gradients")[0]
    np.testing.assert_allclose(image.get_array(), expected)
    assert [t.get_text() for t in ax.get_yticklabels()] == ["integrated gradients"]
    # A scale symmetric about 0, whose ends are the largest attribution in size.
    assert image.norm.vcenter == 0.0
    assert image.norm.vmax == pytest.approx(np.abs(expected).max())
    assert image.norm.vmin == pytest.approx(-np.abs(expected).max())


# ------------------------------------------------------------ the deletion test
class _WordOrder(TokenExplainer):
    """Ranks the tokens by a fixed list of words, the first word scoring highest."""

    name = "word_order"

    def __init__(self, words, vocabulary):
        self.words = words
        self.vocabulary = vocabulary

    def attribute(self, classifier, X, targets, task=None):
        score = {self.vocabulary[w]: len(self.words) - i for i, w in enumerate(self.words)}
        return [np.array([[score.get(int(t), 0.0) for t in X.document(i)]]) for i in range(len(X))]


def test_deletion_curve_deletes_the_top_ranked_tokens(fitted):
    kind, pipe = fitted
    docs = ["good film and bad plot", "the plot was sad", ""]
    order = _WordOrder(["bad", "good", "plot", "sad"], pipe[0].vocabulary_)
    drops = deletion_curve(pipe, docs, order, max_k=3)
    assert drops.shape == (3, 3)
    deleted = [
        ["good film and plot", "film and plot", "film and"],
        ["the was sad", "the was", "was"],
        ["", "", ""],
    ]
    proba = pipe.predict_proba(docs)
    explained = proba.argmax(axis=1)
    for i, texts in enumerate(deleted):
        after = pipe.predict_proba(texts)[:, explained[i]]
        # Two probabilities, each batched otherwise by deletion_curve.
        bound = 2 * probability_bound(kind, pipe, [docs[i], *texts])
        np.testing.assert_allclose(drops[i], proba[i, explained[i]] - after, atol=bound)


def test_deletion_curve_ranks_faithful_methods_above_random(fitted, toy_corpus):
    _, pipe = fitted
    docs = list(toy_corpus[0][:40])
    area = {m: deletion_curve(pipe, docs, m).mean() for m in ("integrated_gradients", "occlusion")}
    random = deletion_curve(pipe, docs, "random", random_state=0)
    # Seeded: the same orders again.
    assert_identical(
        random, deletion_curve(pipe, docs, "random", random_state=0), why=Exact.SAME_CALL
    )
    assert min(area.values()) > random.mean()
    with pytest.raises(ValueError, match="max_k must be a positive int"):
        deletion_curve(pipe, docs, max_k=0)


# ------------------------------------------------------------ 2-D targets
# Label (and task) 0 is the toy corpus's class; label 1 is whether the
# document holds "film", a word of both classes.
def _two_columns(texts, labels):
    film = np.array(["film" in t.split() for t in texts])
    return np.asarray(labels) == "pos", film


# Few epochs; Duo learns the toy labels in them at a larger step, LAMA without
# embedding dropout (with it, its toy training stalls under some random streams).
_FAST = {
    "lama": {"max_epochs": 15, "embedding_dropout": 0.0},
    "fcsr": {"max_epochs": 15},
    "duo": {"max_epochs": 15, "lr": 0.01},
}


@pytest.fixture(scope="module", params=["lama", "fcsr", "duo"])
def multilabel(request, toy_corpus):
    texts, labels = toy_corpus
    Y = np.stack(_two_columns(texts, labels), axis=1).astype(int)
    return _shipped_vectors_pipeline(request.param).fit(texts, Y)


def _shipped_vectors_pipeline(kind):
    # The shipped GloVe table, the same on every install: word2vec trained by gensim gives
    # other vectors on other gensim releases, and these small models' margins with them.
    return Pipeline(
        [
            ("emb", Word2VecVectorizer(random_state=0)),
            ("clf", make_classifier(kind, **_FAST[kind])),
        ]
    )


@pytest.fixture(scope="module", params=["lama", "fcsr", "duo"])
def multioutput(request, toy_corpus):
    texts, labels = toy_corpus
    positive, film = _two_columns(texts, labels)
    Y = np.stack([labels, np.where(film, "film", "none")], axis=1).astype(object)
    Y[::5, 1] = None  # missing labels of the second task
    return _shipped_vectors_pipeline(request.param).fit(texts, Y)


def _log_odds(proba):
    return np.log(proba) - np.log1p(-proba)


@pytest.mark.parametrize("target", [None, 0, 1])
def test_multilabel_attributions_explain_one_label(multilabel, target):
    pipe = multilabel
    sequences = pipe[:-1].transform(QUERIES)
    # A label's score is its log-odds, whatever the other labels' logits.
    scores = _log_odds(pipe[-1].predict_proba(sequences))
    baseline = _log_odds(pipe[-1].predict_proba(_padding_documents(sequences)))
    rows = np.arange(len(QUERIES))
    explained = scores.argmax(axis=1) if target is None else np.full(len(QUERIES), target)
    difference = scores[rows, explained] - baseline[rows, explained]
    assert np.abs(difference).max() > 1.0
    attributions = token_attributions(
        pipe, QUERIES, IntegratedGradients(n_steps=128), target=target
    )
    totals = np.array([a.sum() for a in attributions])
    np.testing.assert_allclose(totals, difference, rtol=0.01, atol=1e-4)
    occlusion = token_attributions(pipe, QUERIES[:2], "occlusion", target=target)
    assert [a.shape for a in occlusion] == [(1, n) for n in sequences.lengths[:2]]


@pytest.mark.parametrize("task", [0, 1])
def test_multioutput_attributions_explain_one_task(multioutput, task):
    pipe = multioutput
    sequences = pipe[:-1].transform(QUERIES)

    def centred(X):
        log_proba = np.log(pipe[-1].predict_proba(X)[task])
        return log_proba - log_proba.mean(axis=1, keepdims=True)

    scores, baseline = centred(sequences), centred(_padding_documents(sequences))
    rows = np.arange(len(QUERIES))
    explained = scores.argmax(axis=1)
    difference = scores[rows, explained] - baseline[rows, explained]
    # The second task, of missing labels and a word of both classes, is learned less surely.
    assert np.abs(difference).max() > 0.25
    attributions = token_attributions(pipe, QUERIES, IntegratedGradients(n_steps=1024), task=task)
    totals = np.array([a.sum() for a in attributions])
    np.testing.assert_allclose(totals, difference, rtol=0.01, atol=1e-4)
    label = pipe[-1].classes_[task][0]
    to_label = token_attributions(pipe, QUERIES, "occlusion", target=label, task=task)
    assert [a.shape for a in to_label] == [(1, n) for n in sequences.lengths]


def test_multilabel_views_explain_the_most_probable_label(multilabel, toy_corpus):
    pipe = multilabel
    texts, labels = toy_corpus
    proba = pipe.predict_proba(QUERIES)
    explanation = explain(pipe, QUERIES, method="occlusion")
    assert_identical(explanation.predicted, proba.argmax(axis=1), why=Exact.SAME_CALL)
    np.testing.assert_allclose(explanation.probability, proba.max(axis=1))
    ax = plot_attention(pipe, QUERIES[0], method="occlusion")
    assert ax.get_title(loc="left").startswith(f"predicted {proba[0].argmax()} ")
    # Label 0's group: the positive documents, explained as label 0.
    Y = np.stack(_two_columns(texts, labels), axis=1).astype(int)
    table = top_attended_words(pipe, texts, Y, n_words=5, method="occlusion")
    assert list(table.columns) == [0, 1]
    # "film", which decides label 1, can raise label 0 too through the shared encoder.
    assert len(set(table[0]) & POSITIVE) >= 3
    assert table[1][1] == "film"
    predicted = top_attended_words(pipe, texts, n_words=5, method="occlusion")
    assert len(set(predicted[0]) & POSITIVE) >= 3
    with pytest.raises(ValueError, match=r"y must be an indicator matrix of shape \(120, 2\)"):
        top_attended_words(pipe, texts, labels)
    # The deletion test follows the most probable label's own probability.
    drops = deletion_curve(pipe, QUERIES, "occlusion", max_k=2)
    sequences = pipe[:-1].transform(QUERIES[-1:])
    ids = sequences.document(0)
    top = np.argmax(token_attributions(pipe, QUERIES[-1:], "occlusion")[0][0])
    shorter = TokenSequences(
        np.delete(ids, top), np.array([0, len(ids) - 1]), sequences.tables, sequences.vocabulary_id
    )
    best = proba[-1].argmax()
    after = pipe[-1].predict_proba(shorter)[0, best]
    # Two probabilities, each batched otherwise by deletion_curve.
    kind = type(pipe[-1]).__name__.removesuffix("Classifier").lower()
    bound = 2 * probability_bound(kind, pipe, QUERIES)
    assert drops[-1, 0] == pytest.approx(proba[-1, best] - after, abs=bound)


def test_multioutput_views_work_per_task(multioutput, toy_corpus):
    pipe = multioutput
    texts, labels = toy_corpus
    proba = pipe.predict_proba(QUERIES)[1]
    explanation = explain(pipe, QUERIES, method="integrated_gradients", task=1)
    assert_identical(
        explanation.predicted, pipe[-1].classes_[1][proba.argmax(axis=1)], why=Exact.SAME_CALL
    )
    ax = plot_attention(pipe, QUERIES[0], method="attention", task=1)
    assert ax.images[0].get_array().shape[1] == len(pipe[:-1].transform(QUERIES[:1]).document(0))
    Y = np.stack([labels, labels], axis=1).astype(object)
    Y[::4, 0] = None
    table = top_attended_words(pipe, texts, Y, n_words=5, method="occlusion", task=0)
    assert list(table.columns) == ["neg", "pos"]
    # "film", which decides task 1, can count for task 0 too through the shared encoder.
    assert len(set(table["pos"]) & POSITIVE) >= 3
    assert len(set(table["neg"]) & NEGATIVE) >= 3
    task_labels = top_attended_words(pipe, texts, labels, n_words=5, method="occlusion", task=0)
    assert len(set(task_labels["pos"]) & POSITIVE) >= 3
    drops = deletion_curve(pipe, QUERIES, "random", max_k=3, random_state=0, task=1)
    assert drops.shape == (len(QUERIES), 3)


def test_multioutput_views_need_a_valid_task(multioutput, toy_corpus):
    pipe = multioutput
    texts, labels = toy_corpus
    calls = [
        lambda **kw: token_attributions(pipe, QUERIES, "attention", **kw),
        lambda **kw: token_attributions(pipe, QUERIES, "integrated_gradients", **kw),
        lambda **kw: explain(pipe, QUERIES, **kw),
        lambda **kw: plot_attention(pipe, QUERIES[0], **kw),
        lambda **kw: top_attended_words(pipe, texts, **kw),
        lambda **kw: deletion_curve(pipe, QUERIES, "occlusion", **kw),
    ]
    for call in calls:
        with pytest.raises(ValueError, match=r"multi-output y \(2 tasks.*pass task=k"):
            call()
        with pytest.raises(ValueError, match=r"task must be in \[0, 2\)"):
            call(task=2)
        with pytest.raises(ValueError, match="task must be an int"):
            call(task=True)
    with pytest.raises(ValueError, match=r"target holds labels \['pos'\]"):
        token_attributions(pipe, QUERIES, "occlusion", target="pos", task=1)
    with pytest.raises(ValueError, match=r"y must have shape \(120, 2\)"):
        top_attended_words(pipe, texts, np.stack([labels] * 3, axis=1), task=0)


def test_task_is_refused_without_a_multi_output_y(fitted, multilabel):
    for pipe in (fitted[1], multilabel):
        with pytest.raises(ValueError, match="task=0 applies to a classifier fitted on a multi"):
            token_attributions(pipe, QUERIES, "occlusion", task=0)
        with pytest.raises(ValueError, match="task=0 applies"):
            top_attended_words(pipe, QUERIES, task=0)
