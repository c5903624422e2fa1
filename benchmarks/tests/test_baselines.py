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
