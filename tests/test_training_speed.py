"""The cheaper training steps: the embedding dropout's draw."""

import pytest
import torch

from sklearn_lama.modules._network import UniformDropout


@pytest.mark.parametrize("p", [0.1, 0.5, 0.8])
def test_uniform_dropout_keeps_a_share_of_one_minus_p_scaled_up(p):
    torch.manual_seed(0)
    dropout = UniformDropout(p).train()
    out = dropout(torch.ones(200, 50, 20))
    kept = out != 0
    # 200,000 draws: the share's standard deviation is at most 1.2e-3, so 0.01
    # is 8 of them (torch's CPU generator, seeded, is the same on any CPU).
    assert abs(kept.float().mean().item() - (1 - p)) < 0.01
    assert torch.allclose(out[kept], torch.tensor(1 / (1 - p)))
    # Elements are dropped independently: each row's share varies as a binomial's.
    rows = kept.reshape(-1, 20).float().mean(1)
    # A variance of 10,000 rows has a relative standard error near sqrt(2 / 10,000)
    # = 1.4 %: 20 % is over 10 of them.
    assert abs(rows.var().item() - p * (1 - p) / 20) < 0.2 * p * (1 - p) / 20


def test_uniform_dropout_passes_gradients_through_the_kept_elements():
    torch.manual_seed(0)
    x = torch.randn(4, 6, 8, requires_grad=True)
    out = UniformDropout(0.5).train()(x)
    out.sum().backward()
    assert torch.equal(x.grad, (out != 0).float() * 2)


@pytest.mark.parametrize("p", [0.0, 0.5])
def test_uniform_dropout_is_the_identity_in_evaluation_and_at_zero(p):
    x = torch.randn(3, 4, 5)
    dropout = UniformDropout(p)
    assert dropout.eval()(x) is x
    if p == 0:
        assert dropout.train()(x) is x


def test_uniform_dropout_of_one_drops_everything():
    assert torch.equal(UniformDropout(1.0).train()(torch.ones(2, 3)), torch.zeros(2, 3))
