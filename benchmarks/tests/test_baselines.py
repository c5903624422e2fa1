"""The Transformer-encoder baseline of the benchmarks (benchmarks._baselines)."""

import pytest
import torch

from benchmarks._baselines import TransformerEncoderClassifier


def _model(**kwargs):
    torch.manual_seed(0)
    return TransformerEncoderClassifier(10, 3, d_model=16, n_heads=4, **kwargs).eval()


def test_logits_do_not_depend_on_batch_padding():
    model = _model()
    x = torch.randn(2, 7, 10)
    mask = torch.tensor([[True] * 7, [True] * 4 + [False] * 3])
    together = model(x, mask)
    alone = model(x[1:, :4], mask[1:, :4])
    torch.testing.assert_close(together[1], alone[0], rtol=1e-5, atol=1e-5)


def test_empty_document_gives_finite_logits_and_gradients():
    model = _model().train()
    mask = torch.tensor([[True, True, False], [False, False, False]])
    out = model(torch.randn(2, 3, 10), mask)
    out.sum().backward()
    assert torch.isfinite(out).all()
    assert all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)


def test_learned_positions_count_and_limit():
    model = _model(max_length=5)
    assert model.positions.weight.shape == (5, 16)
    with pytest.raises(ValueError, match="max_length=5"):
        model(torch.randn(1, 6, 10), torch.ones(1, 6, dtype=torch.bool))


def test_parameters_do_not_depend_on_heads():
    counts = {
        sum(p.numel() for p in TransformerEncoderClassifier(64, 2, n_heads=h).parameters())
        for h in (1, 2, 8)
    }
    assert len(counts) == 1


def test_heads_must_divide_width():
    with pytest.raises(ValueError, match="must divide"):
        TransformerEncoderClassifier(10, 2, n_heads=3)


TEXTS = ["good fun film", "good acting", "not good", "bad plot", "bad and dull", "dull film"]
LABELS = ["pos", "pos", "neg", "neg", "neg", "pos"]


def test_nbsvm_ratios_are_the_naive_bayes_log_count_ratios():
    import numpy as np

    from benchmarks._baselines import NBSVM

    model = NBSVM(ngram_range=(1, 1), alpha=1.0).fit(TEXTS, LABELS)
    words = model.vectorizer_.get_feature_names_out().tolist()
    pos = np.array(LABELS) == "pos"  # the second class, against the first
    held = np.array([[w in t.split() for w in words] for t in TEXTS], dtype=float)
    p, q = 1 + held[pos].sum(0), 1 + held[~pos].sum(0)
    expected = np.log(p / p.sum()) - np.log(q / q.sum())
    np.testing.assert_allclose(model.ratios_[0], expected, rtol=1e-12)
    assert model.ratios_[0][words.index("good")] > 0 > model.ratios_[0][words.index("bad")]


def test_nbsvm_interpolates_the_svm_weights_towards_their_mean_magnitude():
    import numpy as np

    from benchmarks._baselines import NBSVM

    svm = NBSVM(beta=1.0).fit(TEXTS, LABELS).coef_
    interpolated = NBSVM(beta=0.25).fit(TEXTS, LABELS).coef_
    np.testing.assert_allclose(interpolated, 0.75 * np.abs(svm).mean() + 0.25 * svm, rtol=1e-6)


def test_nbsvm_separates_two_and_three_classes():
    from benchmarks._baselines import NBSVM

    two = NBSVM().fit(TEXTS, LABELS)
    assert list(two.predict(TEXTS)) == LABELS and two.decision_function(TEXTS).shape == (6,)
    three = ["pos", "pos", "neg", "neg", "neg", "meh"]
    model = NBSVM(beta=1.0).fit(TEXTS, three)
    assert list(model.predict(TEXTS)) == three
    assert model.decision_function(TEXTS).shape == (6, 3)


def test_nbsvm_tokens_keep_marks_and_one_letter_words_on_request():
    from benchmarks._baselines import NBSVM, WORDS_AND_MARKS

    texts = ["a great film !", "a dull film :("]
    words = NBSVM(ngram_range=(1, 1)).fit(texts, ["pos", "neg"]).vectorizer_
    marks = NBSVM(ngram_range=(1, 1), token_pattern=WORDS_AND_MARKS).fit(texts, ["pos", "neg"])
    assert set(words.get_feature_names_out()) == {"great", "dull", "film"}
    assert set(marks.vectorizer_.get_feature_names_out()) == {
        "a", "great", "dull", "film", "!", ":", "(",
    }  # fmt: skip


def test_the_cross_validated_nbsvm_chooses_among_its_grid_on_the_training_data():
    from benchmarks._baselines import NBSVM_GRID
    from benchmarks._models import make

    texts = [f"{w} film number {i}" for i in range(12) for w in ("good", "bad")]
    labels = ["pos", "neg"] * 12
    search = make("nbsvm_cv", seed=0).fit(texts, labels)
    assert len(search.cv_results_["params"]) == 8 and search.n_splits_ == 3
    assert all(search.best_params_[k] in v for k, v in NBSVM_GRID.items())
    assert list(search.predict(["good film", "bad film"])) == ["pos", "neg"]
