"""Tests of the pure-torch FCSR layer (sklearn_lama/modules/_fcsr.py)."""

import functools

import pytest
import torch

from sklearn_lama.modules._fcsr import (
    FCSRCell,
    FCSRModule,
    FeatureAttention,
    fcsr_lr_lambda,
    fofe,
)
from tests._tolerances import (
    U64,
    Exact,
    U,
    assert_identical,
    assert_within,
    attention_score_abs_sum,
    chained_bound,
    gamma,
    output_abs_sum,
    probability_bound,
    reassociation_bound,
)


@pytest.fixture(autouse=True)
def _one_thread():
    # These tensors are tiny: with several threads, OpenMP barriers dominate
    # and stall badly when the CPU is shared (gradcheck went from ~2 s to 80 s).
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def naive_fofe(x, alpha):
    """Plain recurrence of Eq. 2-3 in float64: the reference."""
    x = x.double()
    B, T, d = x.shape
    left, right = torch.zeros_like(x), torch.zeros_like(x)
    z = torch.zeros(B, d, dtype=x.dtype)
    for t in range(T):
        left[:, t] = z
        z = alpha * z + x[:, t]
    z = torch.zeros(B, d, dtype=x.dtype)
    for t in range(T - 1, -1, -1):
        right[:, t] = z
        z = alpha * z + x[:, t]
    return left, right


def fofe_bound(x, alpha, reference=None, u=U):
    """Rounding bound of ``fofe(x)`` against the exact contexts, element-wise.

    Each context sums ``alpha**k x_j`` over at most the ``T`` words; each term
    carries the roundings of its power of ``alpha`` (at most one per word it
    spans, ``alpha`` itself rounded to float32 once) and the sum's, so it is
    within ``gamma(2 T + 1)`` of its exact value relative to the terms'
    absolute sum: the same contexts of ``|x|`` in float64.
    """
    reference = naive_fofe if reference is None else reference
    magnitudes = reference(x.double().abs(), alpha=alpha)
    return [gamma(2 * x.shape[1] + 1, u) * m.numpy() for m in magnitudes]


def padded_batch(lengths, d, seed=0, garbage=1e3):
    g = torch.Generator().manual_seed(seed)
    T = max(lengths)
    x = torch.randn(len(lengths), T, d, generator=g)
    mask = torch.arange(T)[None, :] < torch.tensor(lengths)[:, None]
    x[~mask] = garbage  # anything leaking from padding would be obvious
    return x, mask


@pytest.mark.parametrize("alpha", [0.0, 0.2, 0.5, 0.9, 0.99])
@pytest.mark.parametrize("T", [1, 7, 1000])
def test_fofe_matches_plain_recurrence(alpha, T):
    x = torch.randn(3, T, 5, generator=torch.Generator().manual_seed(T)) * 3 + 1
    ref_l, ref_r = naive_fofe(x, alpha)
    left, right = fofe(x, None, alpha)
    assert left.dtype == torch.float32 and left.shape == x.shape
    if T == 1:
        # One word: no other word in either context.
        assert_identical(left, torch.zeros_like(x), why=Exact.ZERO)
        assert_identical(right, torch.zeros_like(x), why=Exact.ZERO)
    else:
        bound_l, bound_r = fofe_bound(x, alpha)
        assert_within(left, ref_l, bound_l)
        assert_within(right, ref_r, bound_r)


@pytest.mark.parametrize("chunk_size", [2, 3, 5])
def test_fofe_deep_recursion_small_chunks(chunk_size):
    # Small chunks make a 37-word document go through several carry levels.
    x = torch.randn(2, 37, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    for alpha in (0.0, 0.3, 0.95):
        ref_l, ref_r = naive_fofe(x, alpha)
        left, right = fofe(x, None, alpha, chunk_size=chunk_size)
        bound_l, bound_r = fofe_bound(x, alpha, u=U64)  # float64 throughout
        assert_within(left, ref_l, bound_l)
        assert_within(right, ref_r, bound_r)


def test_fofe_non_contiguous_input():
    x = torch.randn(32, 2, 48).permute(1, 2, 0)  # (2, 48, 32), not contiguous
    ref_l, ref_r = naive_fofe(x, 0.4)
    left, right = fofe(x, None, 0.4)
    bound_l, bound_r = fofe_bound(x, 0.4)
    assert_within(left, ref_l, bound_l)
    assert_within(right, ref_r, bound_r)


def test_fofe_excludes_target_word_eq3():
    # S = [1, 2, 3], alpha = 0.5: S_tl = FOFE(S_1, S_{t-1}), S_tr = FOFE(S_m, S_{t+1}).
    x = torch.tensor([1.0, 2.0, 3.0]).view(1, 3, 1)
    left, right = fofe(x, None, 0.5)
    assert left.flatten().tolist() == [0.0, 1.0, 2.5]
    assert right.flatten().tolist() == [3.5, 3.0, 0.0]
    left, right = fofe(x, None, 0.0)  # 0**0 == 1: nearest neighbour only
    assert left.flatten().tolist() == [0.0, 1.0, 2.0]
    assert right.flatten().tolist() == [2.0, 3.0, 0.0]


@pytest.mark.parametrize("alpha", [0.5, 0.99])
def test_fofe_10000_words_float32(alpha):
    x = torch.randn(2, 10_000, 4, generator=torch.Generator().manual_seed(2)) * 10 + 1
    ref_l, ref_r = naive_fofe(x, alpha)
    left, right = fofe(x, None, alpha)
    assert torch.isfinite(left).all() and torch.isfinite(right).all()
    bound_l, bound_r = fofe_bound(x, alpha)
    assert_within(left, ref_l, bound_l)
    assert_within(right, ref_r, bound_r)


def test_fofe_no_overflow_large_values():
    # The alpha**(-t) cumulative-sum trick overflows float32 here.
    x = torch.full((1, 10_000, 3), 1e30)
    left, right = fofe(x, None, 0.99)
    assert torch.isfinite(left).all() and torch.isfinite(right).all()
    # sum_k 0.99**k 1e30 over 9,999 words is 1e32 (1 - 0.99**9999), 1e32 to
    # 1e-43; float32(1e30) is one more rounding than fofe_bound's.
    rtol = float(gamma(2 * 10_000 + 2))
    torch.testing.assert_close(left[0, -1], torch.full((3,), 1e32), rtol=rtol, atol=0)


def test_fofe_padding_invariance():
    lengths = [5, 300, 41, 0]
    x, mask = padded_batch(lengths, 6)
    x[0, 5:] = float("inf")  # where-masking, not multiplying: 0 * inf is NaN
    left, right = fofe(x, mask, 0.7)
    for i, n in enumerate(lengths):
        alone_l, alone_r = fofe(x[i : i + 1, :n], None, 0.7)
        # Both within fofe_bound of the exact contexts, so of each other within twice it.
        bound_l, bound_r = fofe_bound(x[i : i + 1, :n], 0.7)
        assert_within(left[i : i + 1, :n], alone_l, 2 * bound_l)
        assert_within(right[i : i + 1, :n], alone_r, 2 * bound_r)
        assert_identical(left[i, n:], torch.zeros_like(left[i, n:]), why=Exact.ZERO)
        assert_identical(right[i, n:], torch.zeros_like(right[i, n:]), why=Exact.ZERO)


def test_fofe_gradcheck_x_and_alpha():
    g = torch.Generator().manual_seed(3)
    # chunk_size=3 on 21 words: three carry levels; the default chunk on 40.
    x = torch.randn(2, 21, 2, dtype=torch.float64, generator=g, requires_grad=True)
    mask = torch.arange(21)[None, :] < torch.tensor([21, 11])[:, None]
    x_long = torch.randn(1, 40, 1, dtype=torch.float64, generator=g, requires_grad=True)
    for a0 in (0.3, 0.9):
        alpha = torch.tensor(a0, dtype=torch.float64, requires_grad=True)
        assert torch.autograd.gradcheck(lambda x, a: fofe(x, mask, a, chunk_size=3), (x, alpha))
        assert torch.autograd.gradcheck(lambda x, a: fofe(x, None, a), (x_long, alpha))


def test_fofe_alpha_gradient_value():
    # d/dalpha of the left context at t=2 of [1, 2, 3] is S_1 = 1.
    x = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64).view(1, 3, 1)
    alpha = torch.tensor(0.5, dtype=torch.float64, requires_grad=True)
    left, _ = fofe(x, None, alpha)
    left[0, 2, 0].backward()
    # Exact in float64 (powers of 1/2 and small integers); approx's 1e-6 only spares the order.
    assert alpha.grad.item() == pytest.approx(1.0)


def test_module_padding_invariance_eval():
    torch.manual_seed(0)
    model = FCSRModule(5, 3, hidden_size=6, alpha=0.3).eval()
    lengths = [4, 120, 17]
    x, mask = padded_batch(lengths, 5, seed=4)
    with torch.no_grad(), output_abs_sum(model.out) as abs_sum:
        batch = model(x, mask)
        alone = [
            model(x[i : i + 1, :n], torch.ones(1, n, dtype=torch.bool))
            for i, n in enumerate(lengths)
        ]
    # Five chained reductions (projection, FOFE over 2T words, gates, feature
    # attention over T words, output layer), the longest of 2T terms.
    bound = chained_bound(abs_sum[0], 2 * max(lengths), depth=5)
    for i in range(len(lengths)):
        assert_within(batch[i : i + 1], alone[i], bound)
    assert batch.shape == (3, 3)


def test_feature_attention_masks_padding():
    torch.manual_seed(0)
    model = FCSRModule(4, 2).eval()
    x, mask = padded_batch([3, 9], 4, seed=5)
    with torch.no_grad():
        _, weights = model(x, mask, return_attention=True)
    assert weights.shape == (2, 9, 16)
    assert_identical(weights[0, 3:], torch.zeros_like(weights[0, 3:]), why=Exact.ZERO)
    assert (weights[0, :3] > 0).all()
    torch.testing.assert_close(weights.sum(1), torch.ones(2, 16))


def test_feature_attention_is_a_weighted_mean_per_feature():
    att = FeatureAttention(3, 1.0)
    R = torch.randn(2, 5, 3)
    mask = torch.tensor([[1, 1, 0, 0, 0], [1, 1, 1, 1, 1]], dtype=torch.bool)
    r, w = att(R, mask)
    torch.testing.assert_close(r, (w * R).sum(1))
    torch.testing.assert_close(r[0], (w[0, :2] * R[0, :2]).sum(0))


def test_mean_pooling_option():
    torch.manual_seed(0)
    model = FCSRModule(4, 2, pooling="mean").eval()
    x, mask = padded_batch([3, 9, 0], 4, seed=10)
    with torch.no_grad():
        logits, w = model(x, mask, return_attention=True)
        R = model.cell(x, mask)
    torch.testing.assert_close(w[0, :3], torch.full((3, 16), 1 / 3))
    assert_identical(w[0, 3:], torch.zeros_like(w[0, 3:]), why=Exact.ZERO)
    assert_identical(w[2], torch.zeros_like(w[2]), why=Exact.ZERO)
    torch.testing.assert_close(logits[:2], model.out(R[:2].sum(1) / torch.tensor([[3.0], [9.0]])))
    assert torch.isfinite(logits).all()


@pytest.mark.parametrize("pooling", ["attention", "mean"])
def test_zero_length_document_no_nan(pooling):
    torch.manual_seed(0)
    model = FCSRModule(4, 3, learn_alpha=True, pooling=pooling)
    x, mask = padded_batch([0, 6], 4, seed=6, garbage=float("nan"))
    logits, weights = model(x, mask, return_attention=True)
    assert torch.isfinite(logits).all()
    assert_identical(weights[0], torch.zeros_like(weights[0]), why=Exact.ZERO)
    logits.sum().backward()
    for name, p in model.named_parameters():
        assert torch.isfinite(p.grad).all(), name
    model.eval()
    with torch.no_grad():
        # No token: the pooled representation is 0, so the logits are the bias.
        torch.testing.assert_close(model(x[:1], mask[:1]), model.out.bias[None])
        empty = model(torch.zeros(2, 0, 4), torch.zeros(2, 0, dtype=torch.bool))
    assert torch.isfinite(empty).all() and empty.shape == (2, 3)


def test_learnable_alpha_gets_gradient_and_stays_in_range():
    torch.manual_seed(0)
    model = FCSRModule(4, 2, alpha=0.2, learn_alpha=True)
    # alpha is sigmoid(logit(0.2)) in float32: a few roundings of a number below 1.
    assert model.alpha.item() == pytest.approx(0.2, abs=float(gamma(4)))
    x, mask = padded_batch([7, 3], 4, seed=7)
    torch.nn.functional.cross_entropy(model(x, mask), torch.tensor([0, 1])).backward()
    grad = model.cell.alpha_logit.grad
    assert grad is not None and grad.abs().item() > 0
    # An optimiser can push the logit anywhere; sigmoid(large) rounds to 1.0
    # in float32, which the parametrisation must not let through.
    for logit in (1e9, 40.0, -1e9):
        with torch.no_grad():
            model.cell.alpha_logit.fill_(logit)
        a = model.alpha
        assert 0.0 <= a.item() < 1.0
        assert torch.isfinite(model(x, mask)).all()
    fixed = FCSRModule(4, 2, alpha=0.2)
    assert fixed.alpha == 0.2 and not any("alpha" in n for n, _ in fixed.named_parameters())


def test_cell_output_shape_and_zero_at_padding():
    cell = FCSRCell(3)
    x, mask = padded_batch([2, 5], 3, seed=8)
    R = cell(x, mask)
    assert R.shape == (2, 5, 12) and cell.out_features == 12
    assert_identical(R[0, 2:], torch.zeros_like(R[0, 2:]), why=Exact.ZERO)
    assert (R[0, :2] != 0).any()


def test_module_deterministic_and_dtype_float64():
    torch.manual_seed(0)
    a = FCSRModule(4, 2, hidden_size=8, dropout=0.5).eval()
    torch.manual_seed(0)
    b = FCSRModule(4, 2, hidden_size=8, dropout=0.5).eval()
    x, mask = padded_batch([6, 2], 4, seed=9)
    assert_identical(a(x, mask), b(x, mask), why=Exact.SAME_CALL)
    out = a.double()(x.double(), mask)
    assert out.dtype == torch.float64


@pytest.mark.parametrize(
    "kwargs",
    [
        {"alpha": 1.0},
        {"alpha": -0.1},
        {"alpha": 0.0, "learn_alpha": True},
        {"dropout": 1.0},
        {"hidden_size": 0},
        {"pooling": "max"},
        {"window": 0},
        {"window": 2.5},
        {"window": True},
    ],
)
def test_module_rejects_bad_hyper_parameters(kwargs):
    with pytest.raises(ValueError):
        FCSRModule(4, 2, **kwargs)


def test_fcsr_lr_lambda_matches_eq16_recursion():
    lr, E = 0.01, 40
    lrs = [lr]
    for i in range(12):
        lr = 0.8 * lr * 0.01 ** ((i + 0.01) / (E + 0.01))  # Eq. 16 verbatim
        lrs.append(lr)
    for e, expected in enumerate(lrs):
        assert 0.01 * fcsr_lr_lambda(e, max_epochs=E) == pytest.approx(expected, rel=1e-12)
    assert fcsr_lr_lambda(0) == 1.0

    opt = torch.optim.Adam([torch.nn.Parameter(torch.zeros(1))], lr=0.01)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, functools.partial(fcsr_lr_lambda, max_epochs=E))
    for e in range(1, 4):
        opt.step()
        sched.step()
        assert opt.param_groups[0]["lr"] == pytest.approx(lrs[e], rel=1e-12)


def test_feature_attention_blocks_share_the_n_by_n_matrices():
    # Eq. 9's W_q, W_k are n x n: the same pair scores each n-wide part of R_t,
    # so swapping two parts of R swaps their weights.
    torch.manual_seed(0)
    att = FeatureAttention(8, 2.0, n_blocks=4)
    assert att.qk.weight.shape == (4, 2)
    R = torch.randn(2, 5, 8)
    swapped = R.reshape(2, 5, 4, 2)[:, :, [1, 0, 2, 3]].reshape(2, 5, 8)
    _, w = att(R)
    _, w_swapped = att(swapped)
    torch.testing.assert_close(
        w_swapped.reshape(2, 5, 4, 2)[:, :, [1, 0, 2, 3]].reshape(2, 5, 8), w
    )


def test_feature_attention_rejects_blocks_that_do_not_divide():
    with pytest.raises(ValueError, match="n_blocks"):
        FeatureAttention(10, 1.0, n_blocks=4)


def brute_force_windowed_fofe(x, mask, alpha, window):
    """Each context summed word by word from its definition (§5.3), in float64."""
    x = x.double()
    left, right = torch.zeros_like(x), torch.zeros_like(x)
    for b, n in enumerate(mask.sum(1).tolist()):
        for t in range(n):
            for j in range(max(0, t - window), t):
                left[b, t] += alpha ** (t - 1 - j) * x[b, j]
            for j in range(t + 1, min(n, t + window + 1)):
                right[b, t] += alpha ** (j - t - 1) * x[b, j]
    return left, right


@pytest.mark.parametrize("alpha", [0.0, 0.2, 0.9])
@pytest.mark.parametrize("window", [1, 3, 50])
@pytest.mark.parametrize("chunk_size", [2, 16])
def test_fofe_window_matches_brute_force(alpha, window, chunk_size):
    # Chunks of max(window, chunk_size) words; lengths around and beyond them,
    # padding holding garbage.
    x, mask = padded_batch([70, 51, 3, 1], 3, seed=5)
    left, right = fofe(x.double(), mask, alpha, window=window, chunk_size=chunk_size)
    ref_left, ref_right = brute_force_windowed_fofe(x, mask, alpha, window)
    reference = functools.partial(brute_force_windowed_fofe, mask=mask, window=window)
    bound_l, bound_r = fofe_bound(x, alpha, reference, u=U64)
    assert_within(left, ref_left, bound_l)
    assert_within(right, ref_right, bound_r)
    left32, right32 = fofe(x, mask, alpha, window=window, chunk_size=chunk_size)
    bound_l, bound_r = fofe_bound(x, alpha, reference)
    assert_within(left32, ref_left, bound_l)
    assert_within(right32, ref_right, bound_r)


def test_fofe_window_at_least_the_length_is_the_full_context():
    x, mask = padded_batch([30, 12], 2, seed=6)
    full = fofe(x, mask, 0.5)
    for window in (29, 30, 1000):
        for ours, ref in zip(fofe(x, mask, 0.5, window=window), full):
            torch.testing.assert_close(ours, ref)


def test_fofe_window_gradcheck_x_and_alpha():
    g = torch.Generator().manual_seed(7)
    x = torch.randn(2, 11, 2, dtype=torch.float64, generator=g, requires_grad=True)
    mask = torch.arange(11)[None, :] < torch.tensor([11, 6])[:, None]
    alpha = torch.tensor(0.6, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda x, a: fofe(x, mask, a, window=3), (x, alpha))


def test_module_window_changes_the_contexts_only_beyond_it():
    torch.manual_seed(0)
    full = FCSRModule(4, 2, alpha=0.9).eval()
    windowed = FCSRModule(4, 2, alpha=0.9, window=2).eval()
    windowed.load_state_dict(full.state_dict())
    x = torch.randn(1, 6, 4)
    with torch.no_grad(), output_abs_sum(full.out) as abs_sum:
        short, long = (full(x[:, :3]), windowed(x[:, :3])), (full(x), windowed(x))
    # The windowed contexts are summed by another path: as in
    # test_module_padding_invariance_eval, five reductions, here of 2 * 6 terms at most.
    bound = chained_bound(abs_sum[0], 12, depth=5)
    assert_within(*short, bound)
    assert ((long[0] - long[1]).abs() > bound).any()


@pytest.mark.parametrize("pooling", ["attention", "mean"])
def test_token_attention_is_a_distribution_over_real_tokens(pooling):
    torch.manual_seed(0)
    model = FCSRModule(5, 3, hidden_size=6, pooling=pooling).eval()
    lengths = [9, 4, 0]
    x, mask = padded_batch(lengths, 5, seed=8)
    with torch.no_grad():
        weights = model.token_attention(x, mask)
        assert weights.shape == (3, 1, 9)
        torch.testing.assert_close(weights.sum(-1), torch.tensor([[1.0], [1.0], [0.0]]))
        assert (weights[:, 0][~mask] == 0).all()
        alone = model.token_attention(x[1:2, :4], mask[1:2, :4])
    if pooling == "mean":
        # 1 / length, then the mean of its copies, one per feature, in a batch of another
        # shape: a division, the sum of the copies and a division, each rounding.
        bound = reassociation_bound(alone.double().numpy(), 2 + model.cell.out_features)
        assert_within(weights[1:2, :, :4], alone, bound)
    else:
        with torch.no_grad(), attention_score_abs_sum(model) as scores:
            model.token_attention(x[:2], mask[:2])
        # Before the scores: the projection, FOFE (2T terms), the gates, q and k.
        bound = probability_bound(chained_bound(scores[0], 2 * 9, depth=4))
        assert_within(weights[1:2, :, :4], alone, bound)
    if pooling == "mean":
        torch.testing.assert_close(alone, torch.full((1, 1, 4), 0.25))
