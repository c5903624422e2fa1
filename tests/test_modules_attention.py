"""The token_attention contract shared by the three classifier cores."""

import pytest
import torch

from sklearn_lama.modules import (
    DuoModule,
    FCSRModule,
    LAMAModule,
    SequenceNetwork,
    TableStreams,
)
from tests._tolerances import (
    assert_within,
    attention_score_abs_sum,
    chained_bound,
    probability_bound,
)

V, D = 20, 6


def _network(core):
    torch.manual_seed(0)
    if core == "lama":
        return SequenceNetwork(
            LAMAModule(D, 3, n_heads=4, hidden_size=5), vocabulary_size=V, embedding_dim=D
        ), 4
    if core == "fcsr":
        return SequenceNetwork(FCSRModule(D, 3), vocabulary_size=V, embedding_dim=D), 1
    tables = [torch.randn(V, D), torch.randn(V, D + 2)]
    return SequenceNetwork(DuoModule((D, D + 2), 3), tables=tables, combine=TableStreams()), 2


@pytest.mark.parametrize("core", ["lama", "fcsr", "duo"])
def test_token_attention_contract(core):
    network, n_rows = _network(core)
    network.eval()
    lengths = torch.tensor([6, 2, 0])
    ids = torch.randint(1, V, (3, 6))
    ids[lengths[:, None] <= torch.arange(6)] = 0
    with torch.no_grad():
        weights = network.core.token_attention(*network.embed(lengths, ids=ids))
        alone = network.core.token_attention(*network.embed(lengths[1:2], ids=ids[1:2, :2]))
    mask = torch.arange(6) < lengths[:, None]
    assert weights.shape == (3, n_rows, 6)
    torch.testing.assert_close(
        weights.sum(-1), mask.any(1, keepdim=True).float().expand(3, n_rows)
    )
    assert (weights.transpose(1, 2)[~mask] == 0).all()
    embedded = network.embed(lengths, ids=ids)
    with torch.no_grad(), attention_score_abs_sum(network.core, inputs=embedded[0]) as scores:
        network.core.token_attention(*embedded)
    # At most 6 tokens and features; the deepest core (Duo: an encoder layer's
    # attention, LayerNorm, two feed-forward products, LayerNorm, the head)
    # chains 6 reductions before its scores; LAMA 6 GRU steps and 4 products.
    bound = probability_bound(chained_bound(scores[0], 2 * D, depth=10))
    assert_within(weights[1:2, :, :2], alone, bound)
