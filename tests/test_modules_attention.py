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
    torch.testing.assert_close(weights[1:2, :, :2], alone, rtol=1e-5, atol=1e-6)
