"""Every call that a user's input sizes ends in bounded time, on generated extreme inputs.

Each path of the fitted pipelines (``transform``, ``predict``,
``predict_proba``, ``decision_function``, ``attention_weights``, the
explanations of :mod:`sklearn_lama.inspection` and the ONNX export and
runtime) runs under a time limit on documents a user may send: a document of
100,000 tokens beside short ones, one token of a million characters, empty
and whitespace-only documents, emoji, combining marks, right-to-left text,
zero-width and control characters, NUL, lone surrogates, tens of thousands
of documents. A path either answers within the limit, finite, or refuses
with a ``ValueError`` that names the parameter to change, before its work.

The limit is far above what the paths take (seconds on a shared 2-core CPU):
it tells work that grows with the square of the input, or a hang, from a
slow machine. ``SIGALRM`` interrupts the Python code between two torch
operations; a hang inside one operation ends the run through faulthandler.
"""

import time
import warnings

import matplotlib
import numpy as np
import pytest

from sklearn_lama.inspection import (
    IntegratedGradients,
    Occlusion,
    deletion_curve,
    explain,
    plot_attention,
    token_attributions,
    top_attended_words,
)
from tests._time_limit import time_limit

from .conftest import make_pipeline

matplotlib.use("Agg")
from matplotlib import pyplot as plt  # noqa: E402

# Seconds a call may take: each takes a few at most on a shared 2-core CPU.
LIMIT_S = 60.0

ODD = [
    "",
    " \t\n\r\x0b\x0c ",
    "😀🎬👍 good 👎🏽 film",
    "e\u0301\u0301\u0301 cafe\u0301 n\u0303 \u0301",
    "مرحبا بالعالم שלום עולם good",
    "zero\u200bwidth\u200c\u200d\ufeff bad",
    "ctrl\x01\x02\x1b[31m\x7f plot",
    "nul\x00byte the",
    "lone \ud800 surrogate \udfff",
    "\u202eoverride\u202c \u2066isolate\u2069",
    "\U0010ffff\U000e0001 \ufffd",
    "a" * 1_000_000,
    "!" * 20_000,
]


def bounded(call, *args, **kwargs):
    """``call(*args, **kwargs)`` within the time limit."""
    with time_limit(LIMIT_S):
        return call(*args, **kwargs)


VOCABULARY = np.array("the film was good and the plot is bad but happy not sad".split())


def words(n, seed=0):
    """A document of ``n`` tokens of the toy corpus's vocabulary."""
    return " ".join(np.random.RandomState(seed).choice(VOCABULARY, n))


def corpus(n, longest=30, seed=0):
    """``n`` documents of 0 to ``longest - 1`` tokens."""
    rng = np.random.RandomState(seed)
    tokens = rng.choice(VOCABULARY, (n, longest - 1))
    return [" ".join(row[:k]) for row, k in zip(tokens, rng.randint(0, longest, n))]


@pytest.fixture(scope="module", params=["lama", "fcsr", "duo"])
def fitted(request, toy_corpus):
    return request.param, make_pipeline(request.param, max_epochs=2).fit(*toy_corpus)


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _check_proba(proba, n):
    assert proba.shape[0] == n
    assert np.isfinite(proba).all()
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-5)


def test_odd_documents_get_finite_scores(fitted):
    _, pipe = fitted
    sequences = bounded(pipe[:-1].transform, ODD)
    assert len(sequences) == len(ODD)
    _check_proba(bounded(pipe.predict_proba, ODD), len(ODD))
    assert np.isfinite(bounded(pipe.decision_function, ODD)).all()
    assert len(bounded(pipe.predict, ODD)) == len(ODD)
    attention = bounded(pipe[-1].attention_weights, sequences)
    assert [a.shape[1] for a in attention] == sequences.lengths.tolist()
    assert all(np.isfinite(a).all() for a in attention)


@pytest.mark.parametrize("method", ["attention", "integrated_gradients", "occlusion"])
def test_odd_documents_are_explained(fitted, method):
    # The 20,000 punctuation marks are tokens: too many for occlusion (tested below).
    _, pipe = fitted
    documents = ODD[:-1]
    values = bounded(token_attributions, pipe, documents, method)
    lengths = pipe[:-1].transform(documents).lengths
    assert [v.shape[1] for v in values] == lengths.tolist()
    assert all(np.isfinite(v).all() for v in values)
    html = bounded(explain, pipe, documents, method).to_html()
    assert html.startswith('<div class="sklearn-lama-explanation">')


def test_a_long_document_costs_its_length(fitted):
    # 100,000 tokens beside 300 short documents: each batch keeps to the token
    # budget, and every model is linear in the length.
    _, pipe = fitted
    documents = [words(100_000), *corpus(300)]
    sequences = bounded(pipe[:-1].transform, documents)
    assert sequences.lengths[0] == 100_000
    _check_proba(bounded(pipe.predict_proba, documents), len(documents))
    assert np.isfinite(bounded(pipe.decision_function, documents)).all()
    attention = bounded(pipe[-1].attention_weights, sequences)
    assert attention[0].shape[1] == 100_000
    # Attention is one forward pass: it explains a document of any length.
    values = bounded(token_attributions, pipe, documents[:1], "attention")
    assert values[0].shape[1] == 100_000


def test_many_documents_cost_their_tokens(fitted):
    _, pipe = fitted
    documents = corpus(10_000)
    _check_proba(bounded(pipe.predict_proba, documents), len(documents))
    attention = bounded(pipe[-1].attention_weights, pipe[:-1].transform(documents))
    assert len(attention) == len(documents)


@pytest.mark.parametrize(
    "explanation",
    [
        lambda pipe, docs: explain(pipe, docs),
        lambda pipe, docs: token_attributions(pipe, docs, "occlusion"),
        lambda pipe, docs: top_attended_words(pipe, docs, min_count=1),
        lambda pipe, docs: deletion_curve(pipe, docs),
        lambda pipe, docs: plot_attention(pipe, docs[-1], method="occlusion"),
    ],
    ids=["explain", "occlusion", "top_attended_words", "deletion_curve", "plot_attention"],
)
def test_explanations_refuse_documents_too_long_for_them_before_any_work(fitted, explanation):
    # Integrated gradients (the default) would cost minutes at 100,000 tokens,
    # occlusion days: the document is named, with the parameter that allows it.
    _, pipe = fitted
    documents = ["a good film", words(100_000)]
    start = time.perf_counter()
    with pytest.raises(ValueError, match=r"document \d has 100,000 tokens.*max_tokens"):
        bounded(explanation, pipe, documents)
    # Refused before any prediction: reading the documents is all it costs.
    assert time.perf_counter() - start < LIMIT_S / 4


def test_the_limits_are_parameters(fitted):
    _, pipe = fitted
    name = type(pipe[-1]).__name__
    documents = [words(1_200)]
    auto = rf"Occlusion\(max_tokens='auto'\) explains for {name} \(1,000\)"
    with pytest.raises(ValueError, match=auto):
        token_attributions(pipe, documents, "occlusion")
    with pytest.raises(ValueError, match=r"IntegratedGradients\(max_tokens=100\) explains:"):
        token_attributions(pipe, documents, IntegratedGradients(max_tokens=100))
    for bad in (0, -1, 2.5, True, "many"):
        with pytest.raises(ValueError, match="Occlusion's max_tokens must be"):
            token_attributions(pipe, documents, Occlusion(max_tokens=bad))
        with pytest.raises(ValueError, match="IntegratedGradients's max_tokens must be"):
            token_attributions(pipe, documents, IntegratedGradients(max_tokens=bad))
    values = bounded(token_attributions, pipe, [words(300)], Occlusion(max_tokens=None))
    assert values[0].shape == (1, 300)


def test_self_attention_lowers_the_automatic_limits(toy_corpus):
    # Duo's encoder layers score every pair of tokens: integrated gradients
    # grow with the square of the length there, occlusion with its cube.
    pipe = make_pipeline("duo", max_epochs=1, n_layers=1).fit(*toy_corpus)
    with pytest.raises(ValueError, match=r"for DuoClassifier \(250\)"):
        token_attributions(pipe, [words(251)], "occlusion")
    with pytest.raises(ValueError, match=r"for DuoClassifier \(1,000\)"):
        explain(pipe, [words(1_001)])
    occluded = bounded(token_attributions, pipe, [words(100)], "occlusion")
    integrated = bounded(token_attributions, pipe, [words(300)], "integrated_gradients")
    assert [occluded[0].shape, integrated[0].shape] == [(1, 100), (1, 300)]


def test_explanations_within_their_limits_finish(fitted):
    # Occlusion runs a document's shorter copies as the rows of batches, and
    # integrated gradients its quadrature points: a document of hundreds
    # (occlusion) or thousands (integrated gradients) of tokens takes seconds.
    _, pipe = fitted
    occluded = bounded(token_attributions, pipe, [words(200), "good"], "occlusion")
    assert [v.shape for v in occluded] == [(1, 200), (1, 1)]
    assert all(np.isfinite(v).all() for v in occluded)
    integrated = bounded(token_attributions, pipe, [words(2_000), "bad"], "integrated_gradients")
    assert [v.shape for v in integrated] == [(1, 2_000), (1, 1)]
    assert all(np.isfinite(v).all() for v in integrated)


def test_deletion_curve_stops_classifying_documents_left_empty(fitted):
    # Past a document's length nothing more is deleted: a max_k far beyond the
    # documents costs as much as their length.
    _, pipe = fitted
    documents = ["a good film", "bad", "", words(12)]
    drops = bounded(deletion_curve, pipe, documents, "attention", max_k=100_000)
    assert drops.shape == (4, 100_000)
    assert np.isfinite(drops).all()
    short = bounded(deletion_curve, pipe, documents, "attention", max_k=13)
    np.testing.assert_allclose(drops[:, :13], short, atol=1e-6)
    for i, n in enumerate([3, 1, 0, 12]):
        # Every token deleted: the drop stays that of the empty document.
        np.testing.assert_allclose(drops[i, max(n, 1) :], drops[i, max(n, 1) - 1], atol=1e-12)


def test_plot_attention_draws_the_first_tokens_of_a_long_document(fitted):
    _, pipe = fitted
    document = words(5_000)
    with pytest.warns(UserWarning, match="first 100"):
        ax = bounded(plot_attention, pipe, document, method="attention")
    ax.figure.canvas.draw()
    assert len(ax.get_xticks()) == 100
    assert ax.get_xlabel() == "first 100 of 5,000 tokens"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ax = bounded(plot_attention, pipe, document, method="attention", max_tokens=20)
    assert len(ax.get_xticks()) == 20
    with pytest.raises(ValueError, match="max_tokens must be a positive int, None or 'auto'"):
        plot_attention(pipe, document, max_tokens="all")


def test_onnx_serves_extreme_documents(fitted, tmp_path):
    pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    from sklearn_lama.export import OnnxTextClassifier, to_onnx

    _, pipe = fitted
    bounded(to_onnx, pipe, tmp_path / "model.onnx")
    model = OnnxTextClassifier(tmp_path / "model.onnx")
    documents = [*ODD, words(100_000)]
    proba = bounded(model.predict_proba, documents)
    _check_proba(proba, len(documents))
    np.testing.assert_allclose(proba, pipe.predict_proba(documents), atol=1e-4)


@pytest.mark.slow
def test_a_hundred_thousand_documents(fitted):
    _, pipe = fitted
    documents = corpus(100_000)
    with time_limit(4 * LIMIT_S):
        _check_proba(pipe.predict_proba(documents), len(documents))
        table = top_attended_words(pipe, documents[:20_000], min_count=1, method="attention")
    assert len(table) == 10


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["lama", "fcsr", "duo", "duo-layers"])
def test_explanations_at_their_limits(kind, toy_corpus):
    # At the automatic limits, each method takes well under a minute.
    layers = {"n_layers": 1} if kind == "duo-layers" else {}
    pipe = make_pipeline(kind.removesuffix("-layers"), max_epochs=1, **layers).fit(*toy_corpus)
    occlusion, integrated = (250, 1_000) if layers else (1_000, 10_000)
    with time_limit(LIMIT_S):
        occluded = token_attributions(pipe, [words(occlusion)], "occlusion")
    with time_limit(LIMIT_S):
        gradients = token_attributions(pipe, [words(integrated)], "integrated_gradients")
    assert [occluded[0].shape, gradients[0].shape] == [(1, occlusion), (1, integrated)]
