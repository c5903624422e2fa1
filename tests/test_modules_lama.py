"""The LAMA torch modules (sklearn_lama.modules._lama)."""

import pytest
import torch

from sklearn_lama.modules import BiGRUEncoder, LAMAModule
from tests._tolerances import (
    assert_within,
    attention_score_abs_sum,
    chained_bound,
    probability_bound,
)


def _batch():
    torch.manual_seed(0)
    x = torch.randn(3, 7, 6)
    mask = torch.arange(7) < torch.tensor([7, 4, 1])[:, None]
    return x, mask


@pytest.mark.parametrize("n_heads", [1, 2, 5])
@pytest.mark.parametrize("encoder", ["bigru", "none"])
def test_attention_parameters_receive_gradient(n_heads, encoder):
    # With one head, the l2 normalisation across heads (Eq. 13) reduced every score to its sign,
    # whose gradient is zero: P, Q and W_w never trained.
    x, mask = _batch()
    module = LAMAModule(
        6, 3, n_heads=n_heads, hidden_size=4, encoder=encoder, mlp_hidden=8, dropout=0.0
    )
    logits, _ = module(x, mask)
    torch.nn.functional.cross_entropy(logits, torch.tensor([0, 1, 2])).backward()
    attention = module.attention
    for name, param in [
        ("P", attention.P.weight),
        ("Q", attention.Q.weight),
        ("W_w", attention.word_projection.weight),
        ("b_w", attention.word_projection.bias),
    ]:
        assert param.grad.abs().max() > 1e-5, name


@pytest.mark.parametrize("n_heads", [1, 3])
def test_token_attention_is_a_distribution_over_real_tokens(n_heads):
    x, mask = _batch()
    module = LAMAModule(6, 3, n_heads=n_heads, hidden_size=4).eval()
    weights = module.token_attention(x, mask)
    assert weights.shape == (3, n_heads, 7)
    torch.testing.assert_close(weights.sum(-1), torch.ones(3, n_heads))
    assert (weights[~mask.unsqueeze(1).expand_as(weights)] == 0).all()
    alone = module.token_attention(x[1:2, :4], mask[1:2, :4])
    with attention_score_abs_sum(module) as scores:
        module.token_attention(x, mask)
    # Before the scores: 7 GRU steps (products of 6 + 4 terms), the context
    # (a mean of 7) and its projection, the word projection, P and Q.
    bound = probability_bound(chained_bound(scores[0], 10, depth=7 + 4))
    assert_within(weights[1:2, :, :4], alone, bound)


def test_encoder_computes_the_same_annotations_in_training_and_prediction():
    # One recurrence (torch.gru on the two nn.GRU modules' weights) for both modes, but not
    # necessarily one kernel: torch picks torch.gru's CPU kernel by the training flag and by
    # whether gradients are recorded, and each kernel blocks its sums its own way on each
    # CPU (an AMD EPYC's two differ by a float32 ulp). The two agree to the rounding of the
    # recurrence: T steps, each a gate sum of the fused recurrence's 2d inputs, 2h states in
    # (-1, 1) and two biases, carried on by the gates and tanh (1-Lipschitz).
    x, mask = _batch()
    encoder = BiGRUEncoder(6, 5).train()
    trained = encoder(x.clone().requires_grad_(True), mask)
    with torch.no_grad():
        predicted = encoder.eval()(x, mask)
    steps, inputs = x.shape[1], x.double().abs().reshape(-1, x.shape[2])
    abs_sum = max(
        (inputs @ gru.weight_ih_l0.double().abs().T + gru.bias_ih_l0.double().abs()).max()
        + (gru.weight_hh_l0.double().abs().sum(1) + gru.bias_hh_l0.double().abs()).max()
        for gru in (encoder.forward_gru, encoder.backward_gru)
    ).item()
    n = 2 * encoder.forward_gru.input_size + encoder.output_size + 2
    assert_within(trained, predicted, chained_bound(abs_sum, n, depth=steps))
