"""Duo Transformer translator modules: causality, the vanilla special case, Eq. 4-5, padding."""

import itertools

import pytest
import torch
from torch import nn

from sklearn_lama.modules import (
    DuoMultiHeadAttention,
    DuoTranslationModule,
    StreamAttention,
)
from tests._tolerances import Exact, assert_identical, assert_within, chained_bound, matmul_bound

FLAGS = ("meta_embeddings", "weight_sharing", "duo_norm", "fusion")
ALL_SETTINGS = [dict(zip(FLAGS, values)) for values in itertools.product([False, True], repeat=4)]

# The reductions of a make() model: per encoder layer the attention's
# projections, scores, weighted sums, output, LayerNorm, two feed-forward
# products and LayerNorm (8); a decoder layer adds the cross-attention's (5);
# then the output layer. d_ff = 24 terms is the longest product.
DEPTH, N = 2 * 8 + 2 * 13 + 1, 24


def make(seed=0, **flags):
    torch.manual_seed(seed)
    model = DuoTranslationModule(
        13, 11, d_model=16, n_heads=4, d_ff=24, n_layers=2, dropout=0.0, **flags
    )
    return model.eval()


def ids(rows, low=3, high=11):
    g = torch.Generator().manual_seed(1)
    return torch.randint(low, high, rows, generator=g)


@pytest.mark.parametrize(
    "flags", ALL_SETTINGS, ids=lambda f: "-".join(k for k, v in f.items() if v) or "vanilla"
)
def test_decoder_never_sees_future_tokens(flags):
    model = make(**flags)
    src, tgt = ids((2, 6)), ids((2, 7))
    changed = tgt.clone()
    changed[:, 4:] = (changed[:, 4:] + 3) % 8 + 3
    with torch.no_grad():
        before, after = model(src, tgt), model(src, changed)
    # The tokens changed reach the first 4 positions only through the causal mask's exact
    # zeros: the same kernels, on batches of one shape, add the same terms there.
    assert_identical(before[:, :4], after[:, :4], why=Exact.SAME_TERMS)
    assert not torch.allclose(before[:, 4:], after[:, 4:])


@pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors:UserWarning")
def test_all_flags_off_is_torch_transformer():
    """With all flags off the module computes what ``torch.nn.Transformer`` does with its weights.

    Two documented differences, neutralised here: the module includes embeddings, positions and the
    tied output layer, which ``nn.Transformer`` leaves to the caller (so the same embedded inputs
    are given to both and the same output layer applied); and ``nn.Transformer`` adds a LayerNorm
    after the last encoder and the last decoder layer, which the post-norm Transformer of Vaswani
    et al. does not have (set to identity here).
    """
    model = make(meta_embeddings=False, weight_sharing=False, duo_norm=False, fusion=False)
    ref = nn.Transformer(16, 4, 2, 2, 24, dropout=0.0, batch_first=True).eval()
    ref.encoder.norm, ref.decoder.norm = nn.Identity(), nn.Identity()

    def copy_attention(theirs, mine):
        theirs.in_proj_weight.data = torch.cat(
            [mine.q[0].weight, mine.k[0].weight, mine.v[0].weight]
        )
        theirs.in_proj_bias.data = torch.cat([mine.q[0].bias, mine.k[0].bias, mine.v[0].bias])
        theirs.out_proj.weight.data, theirs.out_proj.bias.data = (
            mine.out[0].weight,
            mine.out[0].bias,
        )

    def copy(theirs, mine):
        theirs.weight.data, theirs.bias.data = mine.weight, mine.bias

    for theirs, mine in zip(ref.encoder.layers, model.encoder):
        copy_attention(theirs.self_attn, mine.attention)
        copy(theirs.linear1, mine.ff[0]), copy(theirs.linear2, mine.ff[3])
        copy(theirs.norm1, mine.norm_attention), copy(theirs.norm2, mine.norm_ff)
    for theirs, mine in zip(ref.decoder.layers, model.decoder):
        copy_attention(theirs.self_attn, mine.self_attention)
        copy_attention(theirs.multihead_attn, mine.cross_attention)
        copy(theirs.linear1, mine.ff[0][0]), copy(theirs.linear2, mine.ff[0][3])
        for theirs_norm, mine_norm in zip((theirs.norm1, theirs.norm2, theirs.norm3), mine.norms):
            copy(theirs_norm, mine_norm)

    src = torch.tensor([[3, 4, 5, 6, 7], [8, 9, 3, 0, 0]])
    tgt = torch.tensor([[2, 5, 6, 7], [2, 9, 0, 0]])
    with torch.no_grad():
        mine = model(src, tgt)
        (src_emb,), (tgt_emb,) = (
            model._embed(model.src_embeddings, src),
            model._embed(model.tgt_embeddings, tgt),
        )
        out = ref(
            src_emb,
            tgt_emb,
            tgt_mask=torch.ones(4, 4, dtype=torch.bool).triu(1),
            src_key_padding_mask=src == 0,
            tgt_key_padding_mask=tgt == 0,
            memory_key_padding_mask=src == 0,
            tgt_is_causal=True,
        )
        theirs = out @ model.output_weights().T
    real = tgt != 0
    # torch's layers associate every sum their own way.
    abs_sum = (out.double().abs() @ model.output_weights().detach().double().abs().T).max()
    bound = chained_bound(abs_sum.item(), N, DEPTH)
    assert_within(mine[real], theirs[real], bound)
    # The test can fail: a different weight changes the result.
    model.decoder[0].ff[0][0].bias.data += 1.0
    with torch.no_grad():
        assert ((model(src, tgt)[real] - theirs[real]).abs() > bound).any()


def test_coupled_stream_attention_is_duo_attention():
    """Two coupled streams sharing K/V compute Eq. 4-5 as the classifier's Duo attention does."""
    torch.manual_seed(0)
    duo = DuoMultiHeadAttention(8, 8, n_heads=2, dropout=0.0).eval()
    mine = StreamAttention(8, 2, 2, share_kv=True, coupled=True).eval()
    pairs = [
        (mine.q[0], duo.q_s),
        (mine.q[1], duo.q_p),
        (mine.k[0], duo.kv_s),
        (mine.k[1], duo.kv_p),
        (mine.out[0], duo.out_s),
        (mine.out[1], duo.out_p),
    ]
    for a, b in pairs:
        a.load_state_dict(b.state_dict())
    s, p = torch.randn(2, 5, 8), torch.randn(2, 5, 8)
    mask = torch.tensor([[True] * 5, [True] * 3 + [False] * 2])
    expected = duo(s, p, mask)
    got = mine((s, p), (s, p), mask)
    for e, g in zip(expected, got):
        torch.testing.assert_close(e, g)
    # Uncoupled, each stream attends on its own: the result is different.
    mine.coupled = False
    assert not torch.allclose(mine((s, p), (s, p), mask)[0], expected[0])


def test_flags_change_the_model():
    counts = {}
    for name, flags in [
        ("vanilla", {}),
        ("meta", {"meta_embeddings": True}),
        ("share", {"meta_embeddings": True, "weight_sharing": True}),
        ("norm", {"meta_embeddings": True, "weight_sharing": True, "duo_norm": True}),
        ("fusion", dict.fromkeys(FLAGS, True)),
    ]:
        model = make(**{**dict.fromkeys(FLAGS, False), **flags})
        counts[name] = sum(p.numel() for p in model.parameters())
    assert counts["meta"] > counts["share"] > counts["vanilla"]
    assert counts["norm"] == counts["share"]  # Eq. 6 rewires, adds nothing
    assert counts["fusion"] == counts["norm"] + (2 * 16) ** 2
    src, tgt = ids((1, 5)), ids((1, 4))
    with torch.no_grad():
        a = make(**{**dict.fromkeys(FLAGS, True), "duo_norm": False})(src, tgt)
        b = make(**dict.fromkeys(FLAGS, True))(src, tgt)
    assert not torch.allclose(a, b)


@pytest.mark.parametrize("meta", [False, True])
def test_padding_does_not_change_a_sentence(meta):
    model = make(meta_embeddings=meta, weight_sharing=meta, duo_norm=meta, fusion=meta)
    src = torch.tensor([[3, 4, 5, 0, 0], [6, 7, 8, 9, 10]])
    tgt = torch.tensor([[2, 5, 6, 0], [2, 3, 4, 5]])
    with torch.no_grad():
        batch = model(src, tgt)
        alone = model(src[:1, :3], tgt[:1, :3])
    torch.testing.assert_close(batch[0, :3], alone[0], rtol=1e-5, atol=1e-5)


def test_pretrained_source_tables():
    tables = [torch.randn(13, 5).numpy(), torch.randn(13, 7).numpy()]
    model = DuoTranslationModule(
        13, 11, d_model=16, n_heads=4, d_ff=24, n_layers=1, src_tables=tables
    )
    assert [e.weight.shape[1] for e in model.src_embeddings] == [5, 7]
    torch.testing.assert_close(model.src_embeddings[1].weight.detach(), torch.as_tensor(tables[1]))
    assert model(ids((2, 4)), ids((2, 3))).shape == (2, 3, 11)


@pytest.mark.parametrize("fusion", [False, True])
def test_logits_are_the_tied_output_layer(fusion):
    """The output layer is ``output_weights()`` whatever order the products are taken in.

    A non-symmetric fusion matrix catches a transposed or misplaced projection; ``last_only``
    gives the last position of the full result.
    """
    model = make(fusion=fusion)
    if fusion:
        with torch.no_grad():
            model.fusion.add_(0.1 * torch.randn_like(model.fusion))
    src, tgt = ids((2, 5)), ids((2, 4))
    with torch.no_grad():
        memory, memory_mask = model.encode(src)
        streams = model._embed(model.tgt_embeddings, tgt)
        for layer in model.decoder:
            streams = layer(streams, memory, tgt != 0, memory_mask)
        expected = torch.cat(streams, dim=-1) @ model.output_weights().T
        logits = model.decode(tgt, memory, memory_mask)
        last = model.decode(tgt, memory, memory_mask, last_only=True)
    # The same decoder states, the product taken in another order (and for
    # one position, another blocking): within the product's own bound.
    bound = matmul_bound(torch.cat(streams, dim=-1), model.output_weights().T)
    assert_within(logits, expected, bound)
    assert last.shape == (2, 1, 11)
    assert_within(last, logits[:, -1:], bound[:, -1:])


def _output_terms_abs_sum(model, tgt, memory, memory_mask):
    """Float64 absolute sum of the output layer's terms for the full-prefix decode of ``tgt``.

    With ``fusion`` the logits are ``(h @ fusion.T) @ tables.T``: the terms of the second product
    are at most ``|h| @ |fusion|.T`` times ``|tables|``.
    """
    with torch.no_grad():
        streams = model._embed(model.tgt_embeddings, tgt)
        for layer in model.decoder:
            streams = layer(streams, memory, tgt != 0, memory_mask)
    hidden = torch.cat(streams, dim=-1).double().abs()
    if model.fusion is not None:
        hidden = hidden @ model.fusion.detach().double().abs().T
    tables = torch.cat([e.weight for e in model.tgt_embeddings], dim=-1).detach().double().abs()
    return (hidden @ tables.T).max().item()


@pytest.mark.parametrize(
    "flags", ALL_SETTINGS, ids=lambda f: "-".join(k for k, v in f.items() if v) or "vanilla"
)
def test_incremental_decoding_is_the_full_prefix_decode(flags):
    """Decoding a few tokens at a time, the earlier positions' keys and values kept, gives the
    log-probabilities of the decoder run on the whole prefix, through the reorderings and the
    dropped rows of beam search.

    The same layers and weights compute both; only the shapes of the products differ (the new
    positions against the whole prefix), so they agree within the rounding bound of the
    network's chained reductions. ``log_softmax`` moves by at most twice its logits' move
    (``d log p_i = dz_i - sum_j p_j dz_j``).
    """
    model = make(**flags)
    if flags["fusion"]:
        with torch.no_grad():
            model.fusion.add_(0.1 * torch.randn_like(model.fusion))
    # Two sentences of two beams each: rows 0-1 share an encoder output, rows 2-3 another.
    src = ids((2, 6)).repeat_interleave(2, dim=0)
    tgt = ids((4, 10), low=3, high=11)
    n = max(N, model.n_streams * 16)  # the output layer sums n_streams * d_model terms
    # After the step ending at each key: (rows kept, whether their encoder outputs move too).
    selections = {
        1: (torch.tensor([1, 0, 3, 3]), False),  # beams reordered within their sentence
        3: (torch.tensor([0, 0, 2, 3]), False),
        4: (torch.tensor([2, 3]), True),  # the first sentence ended
        5: (torch.tensor([1, 0]), False),
    }
    with torch.no_grad():
        memory, memory_mask = model.encode(src)
        state = model.start_decoding(memory, memory_mask)
        rows = torch.arange(4)
        for start, end in [(0, 1), (1, 3), (3, 4), (4, 5), (5, 6), (6, 7), (7, 10)]:
            logits = model.decode_next(tgt[rows, start:end], state)
            prefix, mem = tgt[rows, :end], tuple(m[rows] for m in memory)
            expected = model.decode(prefix, mem, memory_mask[rows])[:, start:end]
            bound = chained_bound(
                _output_terms_abs_sum(model, prefix, mem, memory_mask[rows]), n, DEPTH
            )
            assert_within(logits, expected, bound)
            assert_within(logits.log_softmax(-1), expected.log_softmax(-1), 2 * bound)
            if end in selections:
                kept, memory_too = selections[end]
                state.select(kept, memory=memory_too)
                rows = rows[kept]
        assert state.length == 10
        # The check can fail: the last step against a prefix with another first token.
        other = prefix.clone()
        other[:, 0] = (other[:, 0] + 1 - 3) % 8 + 3
        wrong = model.decode(other, mem, memory_mask[rows])[:, start:end]
    assert (abs(logits - wrong) > bound).any()


def test_a_decoding_step_runs_the_new_position_only():
    """Each product of a step sees the new position alone, whatever the prefix's length, and the
    encoder output's keys and values are projected once, when decoding starts."""
    model = make(**dict.fromkeys(FLAGS, True))
    src, tgt = ids((2, 6)), ids((2, 9))
    widths = []
    hooks = [
        m.register_forward_hook(lambda module, args, out: widths.append(args[0].shape[1]))
        for m in model.decoder.modules()
        if isinstance(m, nn.Linear)
    ]
    try:
        with torch.no_grad():
            memory, memory_mask = model.encode(src)
            state = model.start_decoding(memory, memory_mask)
            # The cross-attentions' key (and value) projections, two streams, two layers.
            assert widths == [6] * 4
            model.decode_next(tgt[:, :8], state)
            widths.clear()
            model.decode_next(tgt[:, 8:], state)
    finally:
        for hook in hooks:
            hook.remove()
    assert widths and set(widths) == {1}
