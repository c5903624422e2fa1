"""Full-Context Semantic Representation (FCSR) in pure torch.

Implements the model of "Full-context semantic representation in sentence
level" (FCSR): FOFE left/right contexts
(Eq. 2-3, 12-13), the Context Integration Sub-cell (Eq. 4-6), the Semantic
Analysis Sub-cell (Eq. 7-8), feature attention pooling (Eq. 9) and the
epoch-wise learning-rate schedule (Eq. 16).

Everything here is a function of tensors and a boolean padding mask
(``True`` = real token, padding only at the end of each row); no sklearn,
skorch or numpy logic.
"""

import math
import numbers

import torch
from torch import nn

from ._masking import masked_mean, masked_softmax

__all__ = [
    "FCSRCell",
    "FCSRModule",
    "FeatureAttention",
    "fcsr_lr_lambda",
    "fofe",
]

# Chunk length of the blocked FOFE scan: a chunk's weight matrix grows with its
# square and the recursion over chunk summaries deepens as it shrinks; this
# balances the two (the "Scaling out" page compares chunk lengths).
_CHUNK = 16
# Levels of the scan's recursion in a traced graph: enough for documents of
# up to _CHUNK ** 6 (16.7 million) tokens.
_TRACED_LEVELS = 6


def _as_alpha(alpha, dtype, device):
    if torch.is_tensor(alpha):
        return alpha.to(dtype=dtype, device=device)
    return torch.tensor(float(alpha), dtype=dtype, device=device)


def _as_window(window):
    """Validate a context window: None or an int >= 1, returned as a Python int."""
    if window is None:
        return None
    if isinstance(window, bool) or not isinstance(window, numbers.Integral) or window < 1:
        raise ValueError(f"window must be None or an int >= 1, got {window!r}")
    return int(window)


def _powers(alpha, exponents):
    """``alpha ** exponents`` with results below the normal range set to 0.

    Exponents are always >= 0 here, so nothing can overflow (the reason the
    ``alpha**(-t)`` cumulative-sum trick is avoided).  Flushing values that
    underflow to subnormals costs no precision that float32/float64 can keep
    but avoids the slow subnormal paths of the CPU in the matmuls.
    """
    p = torch.pow(alpha, exponents)
    return torch.where(p < torch.finfo(p.dtype).tiny, torch.zeros_like(p), p)


def _chunk_matrices(alpha, L, dtype, device):
    """Matrices of one chunk of the blocked scan.

    Returns ``E`` (2, L): the chunk's own inclusive FOFE value at its last
    position (row 0, weights alpha^(L-1-j)) and, reading right to left, at its
    first position (row 1, weights alpha^j); and ``M`` (2L, L+2) which maps
    ``[x_0..x_{L-1}, carry_left, carry_right]`` of a chunk to its exclusive
    left contexts (rows 0..L-1) and exclusive right contexts (rows L..2L-1).
    """
    ar = torch.arange(L, dtype=dtype, device=device)
    zero = torch.zeros((), dtype=dtype, device=device)
    E = torch.stack([_powers(alpha, L - 1 - ar), _powers(alpha, ar)], 0)
    i, j = ar[:, None], ar[None, :]
    # Eq. 3 excludes the target word: left weight of x_j at i is
    # alpha^(i-1-j) for j < i, right weight alpha^(j-i-1) for j > i.  The
    # clamp keeps masked-out exponents non-negative so pow (and its gradient)
    # stays finite where torch.where discards it.
    el, er = i - 1 - j, j - i - 1
    A = torch.where(el >= 0, _powers(alpha, el.clamp(min=0)), zero)
    B = torch.where(er >= 0, _powers(alpha, er.clamp(min=0)), zero)
    # Carry from the previous chunk (its inclusive value at its last word)
    # reaches position i with weight alpha^i; the carry from the next chunk
    # reaches i with weight alpha^(L-1-i).
    pl = _powers(alpha, ar)[:, None]
    pr = _powers(alpha, L - 1 - ar)[:, None]
    zcol = torch.zeros(L, 1, dtype=dtype, device=device)
    M = torch.cat([torch.cat([A, pl, zcol], 1), torch.cat([B, zcol, pr], 1)], 0)
    return E, M


def _cmm(M, X):
    """``M @ X`` over the chunk axis of ``X`` (..., K, d).

    For narrow ``d`` the batched matmul would do little work per matrix;
    folding every chunk and feature into one large matmul gives the kernel
    one product large enough to use the hardware.
    """
    if X.shape[-1] < 16:
        return torch.matmul(X.transpose(-1, -2), M.transpose(0, 1)).transpose(-1, -2)
    return torch.matmul(M, X)


def _scan(xl, xr, alpha, L, level=0):
    """Exclusive forward FOFE of ``xl`` and exclusive backward FOFE of ``xr``.

    Blocked scan: inside a chunk of ``L`` words the recurrence is a small
    ``L x L`` decay matrix (one batched matmul, no Python loop over time);
    the values carried between chunks obey the same recurrence with decay
    ``alpha^L`` over ``T/L`` chunk summaries, solved by recursion.  Work is
    O(T * L * d) and memory O(T * d), never O(T^2).
    """
    B, T, d = xl.shape
    dtype, device = xl.dtype, xl.device
    same = xr is xl
    # Non-negative operands: ONNX divides integers towards zero, not down.
    nC = (T + L - 1) // L
    Tp = nC * L
    # Trailing zeros contribute nothing to either direction (padding by none
    # copies, but keeps a traced graph right for every length).
    xl = nn.functional.pad(xl, (0, 0, 0, Tp - T))
    xr = xl if same else nn.functional.pad(xr, (0, 0, 0, Tp - T))
    Xl = xl.reshape(B, nC, L, d)
    Xr = Xl if same else xr.reshape(B, nC, L, d)
    E, M = _chunk_matrices(alpha, L, dtype, device)
    # A traced graph (ONNX export) holds for every length only if it recurses
    # as deep as the longest document needs; one chunk's carries are zeros.
    if (level + 1 < _TRACED_LEVELS) if torch.jit.is_tracing() else nC > 1:
        if same:
            edges = _cmm(E, Xl)
            last, first = edges[:, :, 0], edges[:, :, 1]
        else:
            last = _cmm(E[:1], Xl)[:, :, 0]
            first = _cmm(E[1:], Xr)[:, :, 0]
        # Chunk c needs the inclusive value just before it (= exclusive scan
        # of the chunk summaries) and the one just after it.
        carry_l, carry_r = _scan(last, first, torch.pow(alpha, L), L, level + 1)
    else:
        carry_l = carry_r = xl.new_zeros(B, 1, d)
    if same:
        # One matmul for both directions, the carries folded in as two extra
        # input rows instead of separate broadcast adds (fewer memory passes).
        out = _cmm(M, torch.cat([Xl, carry_l[:, :, None], carry_r[:, :, None]], 2))
        left, right = torch.split(out, L, 2)
    else:
        cols_r = list(range(L)) + [L + 1]
        left = _cmm(M[:L, : L + 1], torch.cat([Xl, carry_l[:, :, None]], 2))
        right = _cmm(M[L:, cols_r], torch.cat([Xr, carry_r[:, :, None]], 2))
    return left.reshape(B, Tp, d)[:, :T], right.reshape(B, Tp, d)[:, :T]


def _window_matrices(alpha, k, L, dtype, device):
    """Matrices of the windowed scan over chunks of ``L >= k`` words.

    A window of ``k`` words on one side of position ``i`` of a chunk then
    reaches at most into the neighbouring chunk on that side. ``ML`` (L, 2L)
    maps ``[previous chunk, own chunk]`` to the left contexts: weight
    alpha^(i-1-j) for the own words ``i-k <= j < i`` and alpha^(i+L-1-j) for
    the words ``j >= i+L-k`` of the previous chunk. ``MR`` (L, 2L) maps
    ``[own chunk, next chunk]`` to the right contexts symmetrically. Every
    exponent is >= 0, so nothing overflows.
    """
    ar = torch.arange(L, dtype=dtype, device=device)
    zero = torch.zeros((), dtype=dtype, device=device)
    i, j = ar[:, None], ar[None, :]

    def weights(exponent, keep):
        # The clamp keeps discarded exponents non-negative so pow (and its
        # gradient) stays finite where torch.where drops it.
        return torch.where(keep, _powers(alpha, exponent.clamp(min=0)), zero)

    own_left = weights(i - 1 - j, (j < i) & (j >= i - k))
    previous = weights(i + L - 1 - j, j >= i + L - k)
    own_right = weights(j - i - 1, (j > i) & (j <= i + k))
    following = weights(j + L - 1 - i, j <= i + k - L)
    return torch.cat([previous, own_left], 1), torch.cat([own_right, following], 1)


def _windowed_scan(x, alpha, k, L):
    """Exclusive left and right FOFE of ``x`` (B, T, d) cut to ``k`` words each side.

    Works in chunks of ``L >= k`` words, each reading its two neighbours:
    every sum is computed directly from the words inside its window (no
    subtraction of a longer prefix, so no cancellation for any alpha), in
    O(T * L * d) work.
    """
    B, T, d = x.shape
    # Non-negative operands: ONNX divides integers towards zero, not down.
    nC = (T + L - 1) // L
    # One zero chunk before and after, and trailing zeros up to whole chunks.
    X = nn.functional.pad(x, (0, 0, L, (nC + 1) * L - T)).reshape(B, nC + 2, L, d)
    ML, MR = _window_matrices(alpha, k, L, x.dtype, x.device)
    left = _cmm(ML, torch.cat([X[:, :-2], X[:, 1:-1]], 2))
    right = _cmm(MR, torch.cat([X[:, 1:-1], X[:, 2:]], 2))
    return left.reshape(B, nC * L, d)[:, :T], right.reshape(B, nC * L, d)[:, :T]


def fofe(x, mask=None, alpha=0.2, *, window=None, chunk_size=_CHUNK):
    """Left and right FOFE contexts of every word (paper Eq. 2-3, 12-13).

    For a document ``S_1..S_m`` the left context of word ``t`` is
    ``S_tl = FOFE(S_1, S_{t-1}) = sum_{j<t} alpha^(t-1-j) S_j`` and the right
    context is ``S_tr = FOFE(S_m, S_{t+1}) = sum_{j>t} alpha^(j-t-1) S_j``:
    the target word itself is excluded, its nearest neighbour has weight 1,
    and ``S_1l = S_mr = 0`` (Eq. 3).

    Parameters
    ----------
    x : Tensor of shape (B, T, d)
        Word vectors.
    mask : bool Tensor of shape (B, T) or None
        True for real tokens; padding only at the end of each row.  Padding
        values (even inf/NaN) never reach a real token, and the outputs at
        padding positions are 0, so a document gives the same contexts alone
        or inside a padded batch.  None means no padding.
    alpha : float or 0-d Tensor in [0, 1)
        Forgetting factor; a tensor may require grad.
    window : int >= 1 or None, default=None
        The limited context window of the paper's §5.3 (Fig. 3): each
        context sums only the ``window`` nearest words on its side,
        ``S_tl = sum_{t-window <= j < t} alpha^(t-1-j) S_j`` and likewise on
        the right. None is the full context of Eq. 2-3. Exact for any alpha
        and length; costs O(T * max(window, chunk_size) * d), and a window at
        least as long as the document falls back to the full-context scan it
        equals.
    chunk_size : int >= 2, default=16
        Block length of the scan; affects speed only.

    Returns
    -------
    left, right : Tensors of shape (B, T, d)
    """
    if x.dim() != 3:
        raise ValueError(f"x must have shape (B, T, d), got {tuple(x.shape)}")
    window = _as_window(window)
    if int(chunk_size) < 2:
        # chunk_size 1 would never shorten the sequence in the recursion.
        raise ValueError("chunk_size must be >= 2")
    if mask is not None:
        if mask.shape != x.shape[:2]:
            raise ValueError(
                f"mask shape {tuple(mask.shape)} does not match x {tuple(x.shape[:2])}"
            )
        m = mask.to(torch.bool)[..., None]
        # where, not multiply: 0 * inf would be NaN.
        x = torch.where(m, x, torch.zeros((), dtype=x.dtype, device=x.device))
    if x.shape[1] == 0:
        return x.clone(), x.clone()
    a = _as_alpha(alpha, x.dtype, x.device)
    if window is not None and window < x.shape[1] - 1:
        left, right = _windowed_scan(x, a, window, max(window, int(chunk_size)))
    else:
        left, right = _scan(x, x, a, int(chunk_size))
    if mask is not None:
        zero = torch.zeros((), dtype=x.dtype, device=x.device)
        left = torch.where(m, left, zero)
        right = torch.where(m, right, zero)
    return left, right


def fcsr_lr_lambda(epoch, max_epochs=40, decay=0.8, base=0.01, offset=0.01):
    """Learning-rate factor of the paper's epoch-wise schedule (Eq. 16).

    Eq. 16 updates ``lr_{i+1} = 0.8 * lr_i * 0.01 ** ((i + 0.01) /
    (epoch_max + 0.01))`` with ``lr_0 = 0.01`` (Adam) and ``epoch_max = 40``.
    Unrolled, the factor relative to the initial learning rate after
    ``epoch`` updates is::

        decay**e * base ** ((e*(e-1)/2 + offset*e) / (max_epochs + offset))

    which is what this returns, so it plugs into
    ``torch.optim.lr_scheduler.LambdaLR(opt, functools.partial(fcsr_lr_lambda,
    max_epochs=E))``.  Note how fast it decays: with the paper's constants the
    factor is 0.10 after 5 epochs, 6e-4 after 10 and ~1e-43 after 40.

    Parameters
    ----------
    epoch : int
        Number of completed epochs (``LambdaLR``'s counter), >= 0.
    max_epochs : int, default=40
        ``epoch_max`` of Eq. 16 (40 in the paper).
    decay : float, default=0.8
        Per-epoch multiplicative factor (paper: 0.8).
    base : float, default=0.01
        Base of the epoch-dependent factor (paper: 0.01).
    offset : float, default=0.01
        The 0.01 added to ``i`` and ``epoch_max`` in Eq. 16.

    Returns
    -------
    float
    """
    e = int(epoch)
    if e < 0:
        raise ValueError("epoch must be >= 0")
    log_f = e * math.log(decay) + (e * (e - 1) / 2 + offset * e) / (
        max_epochs + offset
    ) * math.log(base)
    return math.exp(log_f)


def _gated_sum(x, y, z, gates):
    """Eq. 4: f_a(x, y, z) = x*G_q + y*G_k + z*G_v and f_t(.) = tanh(.)*G_o."""
    gq, gk, gv, go = torch.sigmoid(gates).chunk(4, dim=-1)
    a = x * gq + y * gk + z * gv
    return a, torch.tanh(a) * go


class FCSRCell(nn.Module):
    """One FCSR layer: sequence of word vectors -> sequence of R_t (Eq. 1-8).

    Parameters
    ----------
    hidden_size : int
        ``n`` of the paper: the width of the word vectors and of every gate
        (the Hadamard products of Eq. 4 force them to be equal).
    alpha : float, default=0.2
        FOFE forgetting factor in [0, 1) (paper: fixed 0.2).
    learn_alpha : bool, default=False
        If True, alpha is learned as ``sigmoid(logit)`` (clamped below 1 so
        that float32 rounding cannot reach 1), initialised at ``alpha``,
        which must then be in (0, 1).  The paper keeps alpha fixed.
    window : int >= 1 or None, default=None
        Limited context window of §5.3 (Fig. 3): the FOFE contexts sum only
        the ``window`` nearest words on each side (see :func:`fofe`).  None
        is the paper's model, the full context of Eq. 2-3.

    Notes
    -----
    Each sub-cell's four gates (Eq. 5 / Eq. 7) are computed by one fused
    ``Linear(3n, 4n)`` on ``concat(S_t, S_tl, S_tr)`` / ``concat(S_t, C_t,
    Ĉ_t)``: mathematically the same as the paper's separate ``W_t*``,
    ``W_c*`` (or ``W_l*``, ``W_r*``) matrices and biases, in one matmul.
    The paper's text mentions ReLU but its equations use a sigmoid; the
    equations are followed.  Weights use PyTorch's default initialisation
    (the paper only says "Normal distribution").

    The output at time t is ``R_t = concat(C_t, Ĉ_t, H_t, Ĥ_t)`` with
    ``4n`` features; it is exactly 0 at padding positions.
    """

    def __init__(self, hidden_size, alpha=0.2, learn_alpha=False, window=None):
        super().__init__()
        self.window = _as_window(window)
        hidden_size = int(hidden_size)
        if hidden_size < 1:
            raise ValueError("hidden_size must be >= 1")
        alpha = float(alpha)
        if not 0.0 <= alpha < 1.0:
            raise ValueError(f"alpha must be in [0, 1), got {alpha}")
        if learn_alpha and alpha == 0.0:
            raise ValueError("learn_alpha=True needs alpha in (0, 1): sigmoid cannot start at 0")
        self.hidden_size = hidden_size
        self.learn_alpha = bool(learn_alpha)
        if self.learn_alpha:
            self.alpha_logit = nn.Parameter(torch.tensor(math.log(alpha / (1.0 - alpha))))
        else:
            self._alpha = alpha
        n = hidden_size
        self.cis_gates = nn.Linear(3 * n, 4 * n)  # Eq. 5
        self.sas_gates = nn.Linear(3 * n, 4 * n)  # Eq. 7

    @property
    def alpha(self):
        """Current forgetting factor (a 0-d tensor when learned)."""
        if self.learn_alpha:
            a = torch.sigmoid(self.alpha_logit)
            return a.clamp(max=1.0 - torch.finfo(a.dtype).eps)
        return self._alpha

    @property
    def out_features(self):
        return 4 * self.hidden_size

    def forward(self, s, mask=None):
        """Map ``s`` (B, T, n) and ``mask`` (B, T) to ``R`` (B, T, 4n)."""
        if mask is not None:
            s = torch.where(
                mask.to(torch.bool)[..., None], s, torch.zeros((), dtype=s.dtype, device=s.device)
            )
        s_l, s_r = fofe(s, mask, self.alpha, window=self.window)  # Eq. 2-3
        # Eq. 5 (S_tc = concat(S_tl, S_tr)) and Eq. 6.
        c, c_hat = _gated_sum(s, s_l, s_r, self.cis_gates(torch.cat([s, s_l, s_r], -1)))
        # Eq. 7 and Eq. 8.
        h, h_hat = _gated_sum(s, c, c_hat, self.sas_gates(torch.cat([s, c, c_hat], -1)))
        return torch.cat([c, c_hat, h, h_hat], -1)


class FeatureAttention(nn.Module):
    """Feature attention pooling over time (our reading of Eq. 9).

    Eq. 9 writes ``σ[(R W_q)(R W_k)/√n] W_f`` with ``W_q, W_k`` n x n and
    ``W_f`` n x 1, which does not type-check (``R_t`` has 4n features and
    the product of two m x n matrices is undefined).  We keep the stated
    ``n x n`` shapes and the intent -- a bilinear query/key score per
    feature, scaled by √n, selecting which time steps feed each feature --
    and make it well-defined and length-independent:

    ``R_t`` is read as ``n_blocks`` parts of width n (``C_t``, ``Ĉ_t``,
    ``H_t``, ``Ĥ_t``); the same ``W_q, W_k`` (n x n) score every part,
    ``E_tb = (R_tb W_q) ∘ (R_tb W_k) / √n``,
    ``A = softmax over t of E`` per feature (padding masked),
    ``r = Σ_t A_t ∘ R_t``  (4n features).

    Applying the n x n matrices per part, rather than widening them to
    4n x 4n, takes a quarter of the multiplications. The documentation's
    results page compares the accuracy of the two forms.

    The softmax replaces the paper's σ so that the weights of each feature
    sum to one over the real tokens (a sum of σ over time would grow with
    the document length).  ``W_f`` is dropped: the output layer that follows
    is the learned linear read-out.  Padding gets weight exactly 0; a row
    with no real token gets all-zero weights and ``r = 0`` (no NaN).

    The other type-correct reading, ``σ((R W_q)ᵀ (R W_k) / √n) W_f`` (a
    4n x 4n feature-feature matrix summed over time, then ``W_f`` 4n x 1),
    has no per-time weights to mask and grows with the length (the results
    page compares it with the per-feature form); it is not offered
    (``FCSRModule(pooling=...)`` chooses between this attention and a plain
    mean).

    Parameters
    ----------
    n_features : int
        Width of ``R_t`` (4n).
    scale : float
        Divisor of the scores (√n in the paper).
    n_blocks : int, default=1
        Number of equal parts of ``R_t`` that share ``W_q, W_k``
        (:class:`FCSRModule` uses 4); must divide ``n_features``.
    """

    def __init__(self, n_features, scale, n_blocks=1):
        super().__init__()
        self.n_features = int(n_features)
        self.n_blocks = int(n_blocks)
        if self.n_blocks < 1 or self.n_features % self.n_blocks:
            raise ValueError(
                f"n_blocks={n_blocks} must be >= 1 and divide n_features={n_features}"
            )
        self.scale = float(scale)
        width = self.n_features // self.n_blocks
        self.qk = nn.Linear(width, 2 * width, bias=False)  # W_q, W_k fused

    def forward(self, R, mask=None):
        """Return ``r`` (B, F) and the weights ``A`` (B, T, F)."""
        B, T, F = R.shape
        q, k = self.qk(R.reshape(B, T, self.n_blocks, F // self.n_blocks)).chunk(2, dim=-1)
        scores = (q * k).reshape(B, T, F) / self.scale
        if mask is None:
            weights = torch.softmax(scores, dim=1)
        else:
            weights = masked_softmax(scores, mask.to(torch.bool)[..., None], dim=1)
        return (weights * R).sum(1), weights


class FCSRModule(nn.Module):
    """FCSR text classifier: FCSR cell, feature attention, linear output.

    ``x`` (B, T, input_size) -> optional linear projection to
    ``hidden_size`` -> :class:`FCSRCell` (FOFE contexts, Eq. 2-3; CIS,
    Eq. 4-6; SAS, Eq. 7-8) -> ``R`` (B, T, 4n) -> :class:`FeatureAttention`
    (Eq. 9, see its docstring for how the paper's inconsistent shapes are
    resolved: ``E_t = (R_t W_q) ∘ (R_t W_k) / √n`` with ``W_q, W_k``
    n x n applied to each n-wide part of ``R_t``, masked softmax over time per
    feature, ``r = Σ_t A_t ∘ R_t`` has 4n features) -> dropout ->
    ``Linear(4n, n_classes)`` -> logits.

    Parameters
    ----------
    input_size : int
        Width of the input word vectors.
    n_classes : int
        Number of output logits.
    hidden_size : int or None, default=None
        ``n`` of the paper.  None uses the word vectors as they are
        (``n = input_size``, as in the paper, whose Hadamard products need
        the gate width to equal the embedding width).  An int adds a learned
        linear projection ``W x + b`` of the inputs to that width first.
        (Projecting before FOFE is not the same model as projecting its
        output: FOFE is linear, but the bias enters each context once per
        word in it, ``FOFE(W x + b) = W FOFE(x) + b sum_i alpha^i``, a term
        that depends on the word's position in the document.)
    alpha : float, default=0.2
        FOFE forgetting factor in [0, 1) (paper: 0.2, fixed).
    learn_alpha : bool, default=False
        Learn alpha (sigmoid-parametrised, stays in [0, 1)); not in the paper.
    window : int >= 1 or None, default=None
        Limited FOFE context window of the paper's §5.3 (Fig. 3), see
        :class:`FCSRCell`; None (the paper's FCSR) uses the full context.
    dropout : float, default=0.3
        Dropout on the pooled representation ``r`` before the output layer.
        The paper tunes dropout per dataset and does not report it.
    pooling : {"attention", "mean"}, default="attention"
        "attention" is the paper's feature attention (Eq. 9, as resolved in
        :class:`FeatureAttention`); "mean" is a masked mean of ``R`` over
        time, not in the paper, worth a grid-search entry (the results page
        compares the two); the default stays the paper's.

    Notes
    -----
    ``forward(x, mask=None, return_attention=False)``: ``mask`` (B, T) bool,
    True for real tokens, padding only at the end of rows.  Results for a
    document do not depend on how much padding its batch has.
    """

    def __init__(
        self,
        input_size,
        n_classes,
        hidden_size=None,
        alpha=0.2,
        learn_alpha=False,
        dropout=0.3,
        pooling="attention",
        window=None,
    ):
        super().__init__()
        input_size, n_classes = int(input_size), int(n_classes)
        if input_size < 1 or n_classes < 1:
            raise ValueError("input_size and n_classes must be >= 1")
        if pooling not in ("attention", "mean"):
            raise ValueError(f"pooling must be 'attention' or 'mean', got {pooling!r}")
        self.pooling = pooling
        if not 0.0 <= float(dropout) < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {dropout}")
        n = input_size if hidden_size is None else int(hidden_size)
        if n < 1:
            raise ValueError("hidden_size must be >= 1")
        self.input_size = input_size
        self.n_classes = n_classes
        self.hidden_size = n
        self.proj = nn.Identity() if hidden_size is None else nn.Linear(input_size, n)
        self.cell = FCSRCell(n, alpha=alpha, learn_alpha=learn_alpha, window=window)
        # √n as in Eq. 9.
        self.attention = (
            FeatureAttention(4 * n, math.sqrt(n), n_blocks=4) if pooling == "attention" else None
        )
        self.dropout = nn.Dropout(float(dropout))
        self.out = nn.Linear(4 * n, n_classes)

    @property
    def alpha(self):
        return self.cell.alpha

    def forward(self, x, mask=None, return_attention=False):
        r, weights = self._pool(x, mask)
        logits = self.out(self.dropout(r))
        if return_attention:
            return logits, weights
        return logits

    def token_attention(self, x, mask):
        """Per-token weights of the feature attention, one row per document.

        Eq. 9 gives every feature of ``R_t`` its own softmax over the words;
        this returns the mean of those ``4n`` distributions, the share of the
        pooled representation ``r`` that each word supplies when every
        feature counts equally. A mean of distributions over the same words
        is itself one: it sums to 1 over the real tokens and is 0 on padding.
        With ``pooling="mean"`` it is the uniform ``1 / length``.

        Parameters
        ----------
        x : Tensor of shape (B, T, input_size)
            Word vectors, as :meth:`SequenceNetwork.embed` returns them.
        mask : BoolTensor of shape (B, T)
            True on real tokens.

        Returns
        -------
        Tensor of shape (B, 1, T)
            All zeros for an empty document.
        """
        return self._pool(x, mask)[1].mean(-1).unsqueeze(1)

    def _pool(self, x, mask):
        """Pooled representation ``r`` (B, 4n) and its weights (B, T, 4n)."""
        if x.dim() != 3 or x.shape[-1] != self.input_size:
            raise ValueError(f"x must have shape (B, T, {self.input_size}), got {tuple(x.shape)}")
        if mask is not None:
            # The cell masks again after the projection (its bias makes padded
            # rows non-zero); zeroing here too keeps inf/NaN garbage in padded
            # rows out of the projection's weight gradient (NaN * 0 = NaN).
            x = torch.where(
                mask.to(torch.bool)[..., None], x, torch.zeros((), dtype=x.dtype, device=x.device)
            )
        s = self.proj(x)
        R = self.cell(s, mask)
        if self.attention is not None:
            r, weights = self.attention(R, mask)
        else:
            if mask is None:
                mask = torch.ones(R.shape[:2], dtype=torch.bool, device=R.device)
            r = masked_mean(R, mask)
            weights = mask.to(R.dtype).unsqueeze(-1) / mask.sum(1).clamp_min(1)[:, None, None]
            weights = weights.expand_as(R)
        return r, weights
