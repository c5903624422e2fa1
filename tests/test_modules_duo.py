"""The Duo torch layers (sklearn_lama/modules/_duo.py): paper Eq. 1-6, masking, parameter count."""

import math

import pytest
import torch
from torch import nn

from sklearn_lama.modules._duo import (
    DuoEncoderLayer,
    DuoLayerNorm,
    DuoModule,
    DuoMultiHeadAttention,
)
from sklearn_lama.modules._masking import masked_softmax
from tests._tolerances import (
    assert_within,
    attention_score_abs_sum,
    chained_bound,
    output_abs_sum,
    probability_bound,
)

D1, D2, C = 6, 10, 3


def _batch(lengths, d1=D1, d2=D2, seed=0, garbage=True):
    """Random S, P and a mask for documents of the given lengths.

    Padding is filled with garbage (not zeros), so that any leak from padded
    positions changes the result.
    """
    g = torch.Generator().manual_seed(seed)
    t = max(max(lengths), 1)
    s = torch.randn(len(lengths), t, d1, generator=g)
    p = torch.randn(len(lengths), t, d2, generator=g)
    mask = torch.arange(t)[None, :] < torch.tensor(lengths)[:, None]
    if not garbage:
        s, p = s * mask[..., None], p * mask[..., None]
    else:
        s = torch.where(mask[..., None], s, 100.0 + 50.0 * torch.randn(s.shape, generator=g))
        p = torch.where(mask[..., None], p, -100.0 + 50.0 * torch.randn(p.shape, generator=g))
    return s, p, mask


def _module(seed=0, **kw):
    torch.manual_seed(seed)
    return DuoModule((D1, D2), C, d_ff=12, **{"n_heads": 2, **kw}).eval()


def _depth(n_layers):
    """Chained reductions of a ``_module``: per layer the attention's products,
    its softmax-weighted sum, LayerNorm, two feed-forward products, LayerNorm;
    then the head's scores and weighted sums, the fusion and the output layer."""
    return 6 * n_layers + 4


N = max(D1, D2, 12)  # the longest product; documents are shorter


def test_masked_softmax_sums_to_one_and_empty_row_is_zero():
    scores = torch.tensor([[1.0, 2.0, 3.0, 4.0], [5.0, -1.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]])
    mask = torch.tensor([[True, True, True, False], [True, False, False, False], [False] * 4])
    w = masked_softmax(scores, mask)
    torch.testing.assert_close(w[0, :3], torch.softmax(scores[0, :3], 0))
    assert w[0, 3] == 0
    assert w[1].tolist() == [1.0, 0.0, 0.0, 0.0]
    assert w[2].tolist() == [0.0] * 4


@pytest.mark.parametrize("n_layers", [0, 2])
def test_head_weights_sum_to_one_on_real_tokens_zero_on_padding(n_layers):
    m = _module(n_layers=n_layers)
    s, p, mask = _batch([5, 3, 1, 0])
    with torch.no_grad():
        weights = m.token_attention((s, p), mask)
    for alpha in (weights[:, 0], weights[:, 1]):
        assert (alpha[~mask] == 0).all()
        assert (alpha[mask] > 0).all()
        torch.testing.assert_close(alpha.sum(1), torch.tensor([1.0, 1.0, 1.0, 0.0]))


@pytest.mark.parametrize("attention_softmax", [True, False])
def test_token_attention_rows_follow_equations_1_and_2(attention_softmax):
    # Row 0 weights a^P and is scored from S (Eq. 1); row 1 weights a^S, scored from P (Eq. 2).
    # Without the softmax the head weights tokens by raw scores, shown as shares of their sum.
    m = _module(attention_softmax=attention_softmax, positions=None)
    s, p, mask = _batch([5, 3])
    with torch.no_grad():
        weights = m.token_attention((s, p), mask)
    for row, scores in enumerate((s @ m.w_s, p @ m.w_p)):
        if attention_softmax:
            expected = masked_softmax(scores, mask)
        else:
            magnitude = scores.abs() * mask
            expected = magnitude / magnitude.sum(1, keepdim=True)
        torch.testing.assert_close(weights[:, row], expected)


@pytest.mark.parametrize("attention_softmax", [True, False])
@pytest.mark.parametrize("positions", [None, "add", "concat"])
def test_head_matches_equations_1_to_3(attention_softmax, positions):
    m = _module(attention_softmax=attention_softmax, bias=True, positions=positions)
    s, p, mask = _batch([4], garbage=False)
    s, p = s[0], p[0]
    inputs = (s[None], p[None])

    def sinusoids(width):  # the Transformer's: sin at even, cos at odd features
        angles = torch.arange(4.0)[:, None] * 10000.0 ** (-torch.arange(0, width, 2) / width)
        return torch.stack([torch.sin(angles), torch.cos(angles)], -1).flatten(1)

    if positions == "add":
        s, p = s + sinusoids(D1), p + sinusoids(D2)
    elif positions == "concat":
        s, p = torch.cat([s, sinusoids(4)], 1), torch.cat([p, sinusoids(4)], 1)
    score_s, score_p = s @ m.w_s, p @ m.w_p  # w^S S^T, w^P P^T
    if attention_softmax:
        score_s, score_p = torch.softmax(score_s, 0), torch.softmax(score_p, 0)
    a_p = score_s @ p  # Eq. 1: weights from S, values from P
    a_s = score_p @ s  # Eq. 2: weights from P, values from S
    e = torch.cat([a_p, a_s]) @ m.fusion.weight.T + m.fusion.bias  # Eq. 3
    expected = e @ m.output.weight.T + m.output.bias
    with torch.no_grad():
        torch.testing.assert_close(m(inputs, mask)[0], expected)


def test_multihead_attention_matches_equations_4_5_with_shared_key_value():
    torch.manual_seed(0)
    attn = DuoMultiHeadAttention(D1, D2, n_heads=2, dropout=0.0)
    s, p, mask = _batch([5, 2])
    with torch.no_grad():
        a_s, a_p, w_p, w_s = attn(s, p, mask, need_weights=True)

        def reference(q_in, k_lin, q_lin, v_lin, out_lin, kv_in, v_in):
            h, hd = attn.n_heads, attn.head_dim
            q = q_lin(q_in).view(*q_in.shape[:2], h, hd).transpose(1, 2)
            k = k_lin(kv_in).view(*kv_in.shape[:2], h, hd).transpose(1, 2)
            v = v_lin(v_in).view(*v_in.shape[:2], h, hd).transpose(1, 2)
            sc = (q @ k.transpose(-2, -1) / math.sqrt(hd)).masked_fill(
                ~mask[:, None, None, :], -math.inf
            )
            return out_lin(
                (torch.softmax(sc, -1) @ v).transpose(1, 2).reshape(*q_in.shape[:2], -1)
            )

        # Eq. 4: A^S = MultiHead(Q^P, K^P, V^S); Eq. 5: A^P = MultiHead(Q^S, K^S, V^P);
        # K^X and V^X share weights.
        torch.testing.assert_close(
            a_s, reference(p, attn.kv_p, attn.q_p, attn.kv_s, attn.out_s, p, s)
        )
        torch.testing.assert_close(
            a_p, reference(s, attn.kv_s, attn.q_s, attn.kv_p, attn.out_p, s, p)
        )
    for w in (w_p, w_s):
        key_pad = ~mask[:, None, None, :].expand_as(w)
        assert (w[key_pad] == 0).all()
        torch.testing.assert_close(w.sum(-1), torch.ones(w.shape[:-1]))
    # Four input projections instead of vanilla's three (Q, K, V): "1/3 more
    # projection parameters" (§3.2.1).
    assert {n.split(".")[0] for n, _ in attn.named_parameters()} == {
        "q_s",
        "q_p",
        "kv_s",
        "kv_p",
        "out_s",
        "out_p",
    }


def test_duo_layer_norm_is_equation_6_and_zeroes_padding():
    norm = DuoLayerNorm(D1, D2)
    s, p, mask = _batch([3, 1], garbage=False)
    sub_s, sub_p = torch.randn_like(s), torch.randn_like(p)
    out_s, out_p = norm(s, p, sub_s, sub_p, mask)
    torch.testing.assert_close(out_s[mask], nn.functional.layer_norm(s + sub_s, (D1,))[mask])
    torch.testing.assert_close(out_p[mask], nn.functional.layer_norm(p + sub_p, (D2,))[mask])
    assert (out_s[~mask] == 0).all() and (out_p[~mask] == 0).all()


@pytest.mark.parametrize("attention_softmax", [True, False])
@pytest.mark.parametrize("n_layers", [0, 2])
def test_padding_invariance(n_layers, attention_softmax):
    m = _module(n_layers=n_layers, attention_softmax=attention_softmax)
    lengths = [7, 2, 5, 1]
    s, p, mask = _batch(lengths)
    with torch.no_grad(), output_abs_sum(m.output) as abs_sum:
        batched = m((s, p), mask)
        alone, padded = [], []
        for i, n in enumerate(lengths):
            alone.append(m((s[i : i + 1, :n], p[i : i + 1, :n]), mask[i : i + 1, :n]))
            # Extra padding beyond the batch's longest document changes nothing either.
            s_pad = torch.cat([s[i : i + 1], torch.full((1, 3, D1), 7.0)], 1)
            p_pad = torch.cat([p[i : i + 1], torch.full((1, 3, D2), -7.0)], 1)
            m_pad = torch.cat([mask[i : i + 1], torch.zeros(1, 3, dtype=torch.bool)], 1)
            padded.append(m((s_pad, p_pad), m_pad))
    bound = chained_bound(abs_sum[0], N, _depth(n_layers))
    for i in range(len(lengths)):
        assert_within(batched[i : i + 1], alone[i], bound)
        assert_within(padded[i], alone[i], bound)


@pytest.mark.parametrize("n_layers", [0, 1])
def test_one_input_plays_both_roles(n_layers):
    torch.manual_seed(0)
    single = DuoModule((D2,), C, d_ff=12, n_layers=n_layers, n_heads=2).eval()
    torch.manual_seed(1)
    double = DuoModule((D2, D2), C, d_ff=12, n_layers=n_layers, n_heads=2).eval()
    double.load_state_dict(single.state_dict())  # same layout as a (d, d) module
    _, x, mask = _batch([4, 2])
    with torch.no_grad():
        out = single((x,), mask)
        torch.testing.assert_close(single(x, mask), out)
        torch.testing.assert_close(single((x, x), mask), out)
        torch.testing.assert_close(double((x, x), mask), out)
        # Sanity: the second role really is read (a different P changes the output).
        assert not torch.allclose(double((x, torch.randn_like(x)), mask), out)


@pytest.mark.parametrize("attention_softmax", [True, False])
@pytest.mark.parametrize("n_layers", [0, 2])
def test_zero_length_document_gives_no_nan(n_layers, attention_softmax):
    m = _module(n_layers=n_layers, attention_softmax=attention_softmax, bias=True).train()
    s, p, mask = _batch([0, 3, 0])
    s.requires_grad_(True)
    out = m((s, p), mask)
    assert torch.isfinite(out).all()
    nn.functional.cross_entropy(out, torch.tensor([0, 1, 2])).backward()
    assert all(torch.isfinite(q.grad).all() for q in m.parameters() if q.grad is not None)
    assert torch.isfinite(s.grad).all()
    m.eval()
    with torch.no_grad():
        # An empty document pools to [a^P, a^S] = 0.
        width = m.fusion.in_features
        torch.testing.assert_close(m((s, p), mask)[0], m.output(m.fusion(torch.zeros(width))))
        # A batch of only empty documents, padded to T = 1 or trimmed to T = 0.
        for t in (1, 0):
            out = m((s[:2, :t], p[:2, :t]), torch.zeros(2, t, dtype=torch.bool))
            torch.testing.assert_close(out, m.output(m.fusion(torch.zeros(2, width))))


def test_parameter_count_matches_paper_section_3_1_4():
    d1 = d2 = 300
    d_ff, n_labels = 600, 20
    # §3.1.4: d1 + d2 (attention) + (d1 + d2) d_ff (fusion W^O) + d_ff * labels (softmax layer).
    paper = (d1 + d2) + (d1 + d2) * d_ff + d_ff * n_labels
    assert paper == 372_600  # the paper: "< 0.4 M"

    def count(m):
        return sum(q.numel() for q in m.parameters())

    # bias=False is exactly the paper's model; the default adds the d_ff + labels
    # biases of W^O and the output.
    paper_head = {"d_ff": d_ff, "n_layers": 0, "bias": False, "positions": None}
    assert count(DuoModule((d1, d2), n_labels, **paper_head)) == paper
    assert count(DuoModule((d1,), n_labels, **paper_head)) == paper
    assert count(DuoModule((d1, d2), n_labels, **{**paper_head, "positions": "add"})) == paper
    with_bias = count(DuoModule((d1, d2), n_labels, d_ff=d_ff, positions=None))
    assert with_bias == paper + d_ff + n_labels == 373_220
    # Concatenated positions widen both streams by position_dim: w^S, w^P and W^O grow.
    concat = count(DuoModule((d1, d2), n_labels, **{**paper_head, "positions": "concat"}))
    assert concat == paper + 2 * 4 * (1 + d_ff)
    # Encoder layers add parameters beyond the paper's classifier.
    layer = DuoEncoderLayer(d1, d2, n_heads=6, d_ff=d_ff)
    with_layer = DuoModule((d1, d2), n_labels, n_heads=6, **{**paper_head, "n_layers": 1})
    assert count(with_layer) == paper + count(layer)


@pytest.mark.parametrize("attention_softmax", [True, False])
@pytest.mark.parametrize("n_layers", [0, 1])
def test_gradient_reaches_w_s_and_w_p(n_layers, attention_softmax):
    m = _module(n_layers=n_layers, attention_softmax=attention_softmax).train()
    s, p, mask = _batch([5, 3, 4])
    nn.functional.cross_entropy(m((s, p), mask), torch.tensor([0, 1, 2])).backward()
    for w in (m.w_s, m.w_p):
        assert w.grad is not None and torch.isfinite(w.grad).all() and w.grad.abs().sum() > 0
    if n_layers:
        assert m.layers[0].attention.kv_s.weight.grad.abs().sum() > 0


def test_invalid_inputs_raise_value_error():
    with pytest.raises(ValueError):
        DuoModule((3, 4, 5), C)
    with pytest.raises(ValueError):
        DuoModule((0,), C)
    m = _module()
    s, p, mask = _batch([2])
    with pytest.raises(ValueError):
        m((p, s), mask)  # widths swapped
    with pytest.raises(ValueError):
        m((s,), mask)  # one input for a (d1, d2) module with d1 != d2
    with pytest.raises(ValueError):
        m((s, p), mask[:, :1])


@pytest.mark.parametrize(
    "positions, order_matters", [(None, False), ("add", True), ("concat", True)]
)
@pytest.mark.parametrize("n_layers", [0, 1])
def test_positions_give_the_head_word_order(positions, order_matters, n_layers):
    m = _module(positions=positions, n_layers=n_layers)
    s, p, mask = _batch([5], garbage=False)
    reverse = torch.arange(4, -1, -1)
    with torch.no_grad(), output_abs_sum(m.output) as abs_sum:
        forward, backward = m((s, p), mask), m((s[:, reverse], p[:, reverse]), mask)
    # Without positions the reversed document sums the same terms in another order.
    bound = chained_bound(abs_sum[0], N, _depth(n_layers))
    assert bool(((forward - backward).abs() > bound).any()) == order_matters


@pytest.mark.parametrize("attention_softmax", [True, False])
@pytest.mark.parametrize("n_layers", [0, 1])
def test_token_attention_rows_are_distributions_over_real_tokens(attention_softmax, n_layers):
    m = _module(attention_softmax=attention_softmax, n_layers=n_layers)
    s, p, mask = _batch([5, 3, 1, 0])
    with torch.no_grad():
        weights = m.token_attention((s, p), mask)
        alone = m.token_attention((s[1:2, :3], p[1:2, :3]), mask[1:2, :3])
        with attention_score_abs_sum(m, inputs=(s[mask], p[mask])) as scores:
            m.token_attention((s, p), mask)
    assert weights.shape == (4, 2, 5)
    assert (weights.transpose(1, 2)[~mask] == 0).all()
    assert (weights >= 0).all()
    torch.testing.assert_close(weights.sum(-1), torch.tensor([[1.0, 1.0]] * 3 + [[0.0, 0.0]]))
    if attention_softmax:
        bound = probability_bound(chained_bound(scores[0], N, _depth(n_layers) - 2))
        assert_within(weights[1:2, :, :3], alone, bound)
    else:
        # |scores| over their sum: its rounding depends on the sum, which the
        # module does not expose; a relative tolerance of 1e-5 is 2**7 u.
        torch.testing.assert_close(weights[1:2, :, :3], alone, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    "kwargs", [{"positions": True}, {"positions": "sum"}, {"position_dim": 0}]
)
def test_invalid_positions_raise_value_error(kwargs):
    with pytest.raises(ValueError, match="position"):
        DuoModule((D1, D2), C, **kwargs)
