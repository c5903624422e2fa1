"""Duo meta-embedding attention.

Implements Q. Li, X. Jiang, J. Xia and J. Li, "Meta-Embeddings Based on
Self-Attention" (2022). The Duo model reads one token sequence through two
separately trained embedding tables, "Spongebob" ``S`` (``(B, T, d1)``) and
"Patrick" ``P`` (``(B, T, d2)``), and lets each embedding decide where to
attend while the other supplies the values (paper §3.5: attention space and
value space need not coincide).

Everything here is a pure function of tensors and a padding mask ``(B, T)``
(``True`` = real token, padding only at the end of a row). Padding is
excluded from every softmax and every sum over time, so a document gives the
same output alone or inside a padded batch, and a fully padded row (a
zero-length document) gives finite output.
"""

import math

import torch
from torch import nn

from ._masking import masked_softmax

__all__ = [
    "DuoEncoderLayer",
    "DuoLayerNorm",
    "DuoModule",
    "DuoMultiHeadAttention",
    "FoldedDuoHead",
]


def _sinusoidal_positions(length, width, device, dtype):
    """Sinusoidal position encoding (Vaswani et al., 2017), ``(length, width)``, ``width`` >= 1."""
    position = torch.arange(length, device=device, dtype=torch.float32).unsqueeze(1)
    n_freq = (width + 1) // 2
    freq = torch.exp(
        torch.arange(n_freq, device=device, dtype=torch.float32)
        * (-2.0 * math.log(10000.0) / width)
    )
    angles = position * freq
    # Interleave sin/cos and cut, so odd widths (e.g. a scalar feature, width 1) still work.
    enc = torch.stack([torch.sin(angles), torch.cos(angles)], dim=-1).reshape(length, 2 * n_freq)[
        :, :width
    ]
    return enc.to(dtype)


class DuoMultiHeadAttention(nn.Module):
    """Duo multi-head attention (paper Eq. 4-5) with the weight sharing of §3.2.1.

    ``A^S = MultiHead(Q^P, K^P, V^S)`` (Eq. 4) and ``A^P = MultiHead(Q^S, K^S,
    V^P)`` (Eq. 5): each stream's attention pattern is computed from the
    *other* embedding and applied to its own values. Per §3.2.1 the key and
    value projections of one embedding are the same matrix (``K^S``/``V^S``
    share, ``K^P``/``V^P`` share), so there are four input projections
    (``Q^S``, ``Q^P``, ``KV^S``, ``KV^P``) where a vanilla attention has three
    -- the paper's "1/3 more projection parameters". Each output then has its
    own output projection back to its stream's width, so ``A^S`` can be added
    to ``S`` and ``A^P`` to ``P`` (Eq. 6).

    Parameters
    ----------
    d1 : int
        Width of ``S``.
    d2 : int
        Width of ``P``.
    n_heads : int, default=8
        Number of heads (8 as in the original Transformer, which the paper
        follows).
    d_attn : int or None, default=None
        Total width of queries/keys/values across heads. Keys of one stream are
        the values of the other, so one width serves both; ``None`` means the
        smallest multiple of ``n_heads`` that is ``>= max(d1, d2)``.
    dropout : float, default=0.1
        Dropout on the attention weights.
    """

    def __init__(self, d1, d2, n_heads=8, d_attn=None, dropout=0.1):
        super().__init__()
        if n_heads < 1:
            raise ValueError(f"n_heads must be >= 1, got {n_heads}.")
        if d_attn is None:
            d_attn = n_heads * math.ceil(max(d1, d2) / n_heads)
        if d_attn % n_heads:
            raise ValueError(f"d_attn={d_attn} must be divisible by n_heads={n_heads}.")
        self.d1, self.d2, self.n_heads, self.d_attn = d1, d2, n_heads, d_attn
        self.head_dim = d_attn // n_heads
        self.q_s = nn.Linear(d1, d_attn)
        self.q_p = nn.Linear(d2, d_attn)
        self.kv_s = nn.Linear(d1, d_attn)  # K^S = V^S projection (§3.2.1)
        self.kv_p = nn.Linear(d2, d_attn)  # K^P = V^P projection (§3.2.1)
        self.out_s = nn.Linear(d_attn, d1)
        self.out_p = nn.Linear(d_attn, d2)
        self.dropout = nn.Dropout(dropout)

    def _split(self, x):
        b, t, _ = x.shape
        return x.view(b, t, self.n_heads, self.head_dim).transpose(1, 2)  # (B, h, T, hd)

    def _merge(self, x):
        b, _, t, _ = x.shape
        return x.transpose(1, 2).reshape(b, t, self.d_attn)

    def forward(self, s, p, mask, need_weights=False):
        """Compute ``(A^S, A^P)``.

        Parameters
        ----------
        s : torch.Tensor, shape (B, T, d1)
        p : torch.Tensor, shape (B, T, d2)
        mask : torch.Tensor of bool, shape (B, T)
            ``True`` for real tokens. Padded keys get no weight; outputs at
            padded query positions are finite but meaningless (callers zero
            them).
        need_weights : bool, default=False
            Also return the attention weights.

        Returns
        -------
        a_s : torch.Tensor, shape (B, T, d1)
            Eq. 4.
        a_p : torch.Tensor, shape (B, T, d2)
            Eq. 5.
        weights_p, weights_s : torch.Tensor, shape (B, n_heads, T, T)
            Only if ``need_weights``: the pattern computed from ``P`` (used for
            ``A^S``) and from ``S`` (for ``A^P``), before dropout.
        """
        q_s, q_p = self._split(self.q_s(s)), self._split(self.q_p(p))
        kv_s, kv_p = self._split(self.kv_s(s)), self._split(self.kv_p(p))
        key_mask = mask[:, None, None, :]
        scale = 1.0 / math.sqrt(self.head_dim)
        # Eq. 4: queries and keys from P, values from S.
        weights_p = masked_softmax(q_p @ kv_p.transpose(-2, -1) * scale, key_mask)
        a_s = self.out_s(self._merge(self.dropout(weights_p) @ kv_s))
        # Eq. 5: queries and keys from S, values from P.
        weights_s = masked_softmax(q_s @ kv_s.transpose(-2, -1) * scale, key_mask)
        a_p = self.out_p(self._merge(self.dropout(weights_s) @ kv_p))
        if need_weights:
            return a_s, a_p, weights_p, weights_s
        return a_s, a_p


class DuoLayerNorm(nn.Module):
    """Duo layer normalisation (paper Eq. 6) for both streams at once.

    ``DuoLayerNorm(x^S, x^P) = LayerNorm(x^S + Sublayer(x^P))``: the residual
    comes from one stream while the sublayer output was driven by the other.
    This module takes the sublayer outputs already computed -- ``sub_s`` in
    ``S``'s width (e.g. ``A^S`` of Eq. 4, whose pattern comes from ``P``) and
    ``sub_p`` in ``P``'s width -- and returns ``(LayerNorm_S(s + sub_s),
    LayerNorm_P(p + sub_p))`` with one normaliser per stream because the
    widths differ.

    Where it sits. §3.4 uses Duo layer norm "in the decoder layer between the
    masked multi-head attention, and the feed-forward unit" (Figure 2) of its
    translation model. The classifier of §3.1 has no decoder: it reads the two
    embeddings of one input sequence and has nothing to decode, so a Duo
    decoder layer has no place in it. The only residual sublayers here are
    those of the optional encoder layers (:class:`DuoEncoderLayer`,
    ``DuoModule(n_layers >= 1)``), and that is where we use it, after the Duo
    attention and after the feed-forwards. It fits there for the reason §3.4
    gives: ``A^S`` is driven by ``P``'s attention pattern (Eq. 4), so
    ``LayerNorm(s + A^S)`` is the cross-stream residual of Eq. 6, and the two
    normalisers keep the streams' different widths apart. With ``n_layers =
    0`` (the paper's classifier) no layer norm is used.

    Parameters
    ----------
    d1 : int
        Width of ``S``.
    d2 : int
        Width of ``P``.
    eps : float, default=1e-5
        LayerNorm epsilon.
    """

    def __init__(self, d1, d2, eps=1e-5):
        super().__init__()
        self.norm_s = nn.LayerNorm(d1, eps=eps)
        self.norm_p = nn.LayerNorm(d2, eps=eps)

    def forward(self, s, p, sub_s, sub_p, mask=None):
        """Normalise both residual sums.

        Parameters
        ----------
        s, p : torch.Tensor, shapes (B, T, d1), (B, T, d2)
            Residual inputs.
        sub_s, sub_p : torch.Tensor, shapes (B, T, d1), (B, T, d2)
            Sublayer outputs.
        mask : torch.Tensor of bool, shape (B, T), optional
            If given, padded positions are set to 0 so that nothing from them
            can reach a later reduction.

        Returns
        -------
        tuple of torch.Tensor
            ``(s_out, p_out)``, same shapes as ``s`` and ``p``.
        """
        s_out = self.norm_s(s + sub_s)
        p_out = self.norm_p(p + sub_p)
        if mask is not None:
            keep = mask.unsqueeze(-1).to(s_out.dtype)
            s_out, p_out = s_out * keep, p_out * keep
        return s_out, p_out


class DuoEncoderLayer(nn.Module):
    """One Duo Transformer encoder layer (paper §3.2, Figure 2).

    Post-norm as in the original Transformer: Duo attention (Eq. 4-5) then Duo
    layer norm (Eq. 6), then a position-wise feed-forward per stream
    (``Linear -> ReLU -> Linear``) with a residual and layer norm. The
    feed-forwards stay per stream: cross-stream information already flows
    through the attention, and a shared one would need both widths equal.

    Parameters
    ----------
    d1, d2 : int
        Widths of ``S`` and ``P`` (kept through the layer so layers stack and
        feed the Eq. 1-3 head).
    n_heads : int, default=8
        Attention heads.
    d_ff : int, default=600
        Hidden width of each feed-forward.
    dropout : float, default=0.1
        Dropout on attention weights and on every sublayer output before its
        residual (original Transformer).
    d_attn : int or None, default=None
        See :class:`DuoMultiHeadAttention`.

    Notes
    -----
    LayerNorm over a width of 1 maps every input to its bias, so stacking
    layers on scalar-feature sequences (``d = 1``) discards the input unless
    positions are concatenated (``DuoModule(positions="concat")`` widens the
    streams); use ``n_layers = 0`` there otherwise.
    """

    def __init__(self, d1, d2, n_heads=8, d_ff=600, dropout=0.1, d_attn=None):
        super().__init__()
        self.attention = DuoMultiHeadAttention(
            d1, d2, n_heads=n_heads, d_attn=d_attn, dropout=dropout
        )
        self.norm_attention = DuoLayerNorm(d1, d2)
        self.ff_s = nn.Sequential(
            nn.Linear(d1, d_ff), nn.ReLU(), nn.Dropout(dropout), nn.Linear(d_ff, d1)
        )
        self.ff_p = nn.Sequential(
            nn.Linear(d2, d_ff), nn.ReLU(), nn.Dropout(dropout), nn.Linear(d_ff, d2)
        )
        self.norm_ff = DuoLayerNorm(d1, d2)
        self.dropout = nn.Dropout(dropout)

    def forward(self, s, p, mask):
        """Apply the layer.

        Parameters
        ----------
        s : torch.Tensor, shape (B, T, d1)
        p : torch.Tensor, shape (B, T, d2)
        mask : torch.Tensor of bool, shape (B, T)

        Returns
        -------
        tuple of torch.Tensor
            New ``(s, p)``, same shapes; padded positions are 0.
        """
        a_s, a_p = self.attention(s, p, mask)
        s, p = self.norm_attention(s, p, self.dropout(a_s), self.dropout(a_p), mask)
        s, p = self.norm_ff(s, p, self.dropout(self.ff_s(s)), self.dropout(self.ff_p(p)), mask)
        return s, p


class DuoModule(nn.Module):
    """Duo classifier (paper §3.1, Eq. 1-3), optionally after Duo encoder layers (§3.2).

    With ``S`` (``(B, T, d1)``) and ``P`` (``(B, T, d2)``) the two embeddings
    of the same tokens and learned vectors ``w^S`` (``d1``) and ``w^P``
    (``d2``)::

        a^P = softmax(w^S S^T) P     (Eq. 1)  S decides where to look, P supplies the values
        a^S = softmax(w^P P^T) S     (Eq. 2)  and the other way round
        e   = [a^P, a^S] W^O         (Eq. 3)  W^O: (d2 + d1) x d_ff, the "fusion" layer
        logits = e W^C (+ b^C)                the final "softmax layer", d_ff x n_classes

    Parameters
    ----------
    input_sizes : int or tuple of int
        ``(d1, d2)``, or ``(d1,)``/``d1`` for a single embedding used in both
        roles (``S = P``; the diagonal of the paper's Table 2). The internal
        layout is then the same as for ``(d1, d1)``.
    n_classes : int
        Number of output logits.
    d_ff : int, default=600
        Width of the fusion output ``e`` (paper §3.1.4: 600) and hidden width
        of the encoder feed-forwards.
    n_layers : int, default=0
        Duo Transformer encoder layers applied to ``S`` and ``P`` before the
        Eq. 1-3 head. The paper's classifier is the head alone (``0``).
    n_heads : int, default=8
        Heads per encoder layer (original Transformer); unused when
        ``n_layers == 0``.
    attention_softmax : bool, default=True
        Whether Eq. 1-2 normalise the scores ``w^S S^T`` and ``w^P P^T`` with a
        softmax over the real tokens. The paper (§3.1.2, right after Eq. 1-2)
        says it drops "the softmax function" in its experiments for speed; the
        only softmax that both sits there and costs time is this one (the
        final "softmax layer" of §3.1.4 is the output layer, whose softmax
        belongs to the loss). With ``False`` the raw scores (zeroed on padding)
        weight the sum, i.e. ``a^P = sum_t (w^S . s_t) p_t``, which grows with
        document length; ``True`` keeps the pooled vectors on one scale
        whatever the length (the documentation's results page compares the
        two). The output-side softmax is never inside the module: it returns
        logits, for a cross-entropy loss on logits (``nn.CrossEntropyLoss``);
        ``softmax(logits)`` gives probabilities.
    dropout : float, default=0.1
        Dropout on ``e`` before the output layer, and inside the encoder layers
        (0.1: original Transformer, which the paper says it follows for
        dropout).
    bias : bool, default=True
        Add biases to ``W^O`` and the output layer (``d_ff + n_classes``
        parameters). The paper's Eq. 3 and its parameter count (§3.1.4) have
        none; ``False`` gives exactly the paper's model. Default ``True``
        because without them the class priors have to come from the pooled
        embeddings.
    positions : {"concat", "add"} or None, default="concat"
        Give every token the sinusoidal position encoding of the Transformer
        (Vaswani et al., 2017) before everything else. Without it the Eq. 1-3
        head (and the encoder layers, whose attention is
        permutation-equivariant) is a function of the bag of tokens: it cannot
        use word order at all, which for a plain 2-D float array read as a
        sequence of scalars means it cannot tell its columns apart. ``"add"``
        adds a ``d``-wide encoding to each stream, as the Duo Transformer of
        §3.2 (after the original Transformer) does to its embeddings.
        ``"concat"`` appends a ``position_dim``-wide encoding to each stream
        instead, so the word's own features stay intact and the Eq. 1-2 scores
        gain a separate learned position term, ``w^S . [s_t, pe_t] =
        w^S_word . s_t + w^S_pos . pe_t``; the head and encoder then work on
        widths ``d1 + position_dim`` and ``d2 + position_dim``. Addition needs
        wide embeddings to keep the two apart (the Transformer's 512): at width
        1, a sequence of scalars, it folds a single sinusoid into the value
        itself, where concatenation keeps them apart. ``None`` is the paper's
        classifier of §3.1, without position information. A token's encoding
        depends only on its own index, so a document's output is the same
        alone or inside a padded batch.
    position_dim : int, default=4
        Width of the concatenated encoding (``positions="concat"`` only). The
        encoding enters the pooled values too, so a wide one can outweigh
        narrow word vectors.

    Notes
    -----
    No nonlinearity sits between ``e`` and the output layer, as in Eq. 3 and
    §3.1.4 (fusion, then the softmax layer). ``W^O`` followed by the output
    layer is then one linear map of rank ``<= min(d_ff, n_classes)``: the
    fusion layer adds parameters, not capacity, to the head, and is kept
    because it is the paper's model.

    Parameter count of the head (``n_layers = 0``, ``bias=False``,
    ``positions=None`` or ``"add"``), §3.1.4: ``(d1 + d2) + (d1 + d2) * d_ff +
    d_ff * n_classes``; at ``d1 = d2 = 300``, ``d_ff = 600``, 20 classes that
    is ``600 + 360000 + 12000 = 372600`` (< 0.4 M). ``bias=True`` adds ``d_ff
    + n_classes``; ``positions="concat"`` adds ``2 * position_dim * (1 +
    d_ff)`` (the wider ``w^S``, ``w^P`` and ``W^O``).
    """

    def __init__(
        self,
        input_sizes,
        n_classes,
        d_ff=600,
        n_layers=0,
        n_heads=8,
        attention_softmax=True,
        dropout=0.1,
        bias=True,
        positions="concat",
        position_dim=4,
    ):
        super().__init__()
        if isinstance(input_sizes, int):
            input_sizes = (input_sizes,)
        input_sizes = tuple(int(d) for d in input_sizes)
        if len(input_sizes) not in (1, 2) or min(input_sizes) < 1:
            raise ValueError(f"input_sizes must be one or two positive widths, got {input_sizes}.")
        if n_classes < 1 or d_ff < 1 or n_layers < 0:
            raise ValueError(
                "need n_classes >= 1, d_ff >= 1, n_layers >= 0; got "
                f"{n_classes}, {d_ff}, {n_layers}."
            )
        self.input_sizes = input_sizes
        self.n_classes = n_classes
        self.attention_softmax = attention_softmax
        if positions not in ("concat", "add", None):
            raise ValueError(f"positions must be 'concat', 'add' or None, got {positions!r}.")
        if positions == "concat" and position_dim < 1:
            raise ValueError(f"position_dim must be >= 1, got {position_dim}.")
        self.positions = positions
        self.position_dim = position_dim if positions == "concat" else 0
        d1, d2 = input_sizes[0], input_sizes[-1]
        self.d1, self.d2 = d1, d2
        # Widths of the streams as the encoder layers and the head see them.
        d1, d2 = d1 + self.position_dim, d2 + self.position_dim

        self.layers = nn.ModuleList(
            DuoEncoderLayer(d1, d2, n_heads=n_heads, d_ff=d_ff, dropout=dropout)
            for _ in range(n_layers)
        )
        self.w_s = nn.Parameter(torch.empty(d1))  # w^S, Eq. 1
        self.w_p = nn.Parameter(torch.empty(d2))  # w^P, Eq. 2
        self.fusion = nn.Linear(d2 + d1, d_ff, bias=bias)  # W^O, Eq. 3; rows ordered [a^P, a^S]
        self.dropout = nn.Dropout(dropout)
        self.output = nn.Linear(d_ff, n_classes, bias=bias)
        self.reset_parameters()

    def reset_parameters(self):
        """Initialise ``w^S``, ``w^P`` as ``nn.Linear(d, 1)`` would its weight.

        Non-zero so that, without the attention softmax, the first step does
        not start from ``e = 0`` (where ``W^O`` and the output layer get no
        gradient); small so that, with it, attention starts near a mean.
        """
        for w in (self.w_s, self.w_p):
            bound = 1.0 / math.sqrt(w.numel())
            nn.init.uniform_(w, -bound, bound)

    def _inputs(self, xs, mask):
        if isinstance(xs, torch.Tensor):
            xs = (xs,)
        xs = tuple(xs)
        if len(xs) not in (1, 2):
            raise ValueError(f"expected 1 or 2 input tensors, got {len(xs)}.")
        if len(xs) == 1 and len(self.input_sizes) == 2 and self.d1 != self.d2:
            raise ValueError(f"module built for widths {self.input_sizes} but got a single input.")
        s, p = xs[0], xs[-1]
        if s.dim() != 3 or p.dim() != 3 or s.shape[-1] != self.d1 or p.shape[-1] != self.d2:
            raise ValueError(
                f"expected inputs (B, T, {self.d1}) and (B, T, {self.d2}), "
                f"got {tuple(s.shape)} and {tuple(p.shape)}."
            )
        if s.shape[:2] != p.shape[:2]:
            raise ValueError(
                f"S and P must share (B, T), got {tuple(s.shape[:2])} and {tuple(p.shape[:2])}."
            )
        if mask is None:
            mask = torch.ones(s.shape[:2], dtype=torch.bool, device=s.device)
        else:
            mask = mask.to(device=s.device, dtype=torch.bool)
            if mask.shape != s.shape[:2]:
                raise ValueError(
                    f"mask must have shape {tuple(s.shape[:2])}, got {tuple(mask.shape)}."
                )
        return s, p, mask

    def _encode(self, s, p, mask):
        t = s.shape[1]
        keep = mask.unsqueeze(-1).to(s.dtype)
        if self.positions == "concat":
            encoding = _sinusoidal_positions(t, self.position_dim, s.device, s.dtype) * keep
            s, p = torch.cat([s, encoding], -1), torch.cat([p, encoding], -1)
        elif self.positions == "add":
            s = (s + _sinusoidal_positions(t, self.d1, s.device, s.dtype)) * keep
            p = (p + _sinusoidal_positions(t, self.d2, p.device, p.dtype)) * keep
        for layer in self.layers:
            s, p = layer(s, p, mask)
        return s, p

    def _head_weights(self, s, p, mask):
        """The weights of Eq. 1 and Eq. 2 over the encoded streams, each (B, T), 0 on padding."""
        # A one-column matrix rather than a vector keeps the exported graph on
        # onnxruntime's matrix-product kernels; torch gives the same numbers.
        scores_s = (s @ self.w_s.unsqueeze(-1)).squeeze(-1)  # w^S S^T, (B, T)
        scores_p = (p @ self.w_p.unsqueeze(-1)).squeeze(-1)  # w^P P^T
        if self.attention_softmax:
            return masked_softmax(scores_s, mask), masked_softmax(scores_p, mask)
        keep = mask.to(scores_s.dtype)
        return scores_s * keep, scores_p * keep

    def token_attention(self, xs, mask):
        """Both directions of the Eq. 1-2 head as distributions over the tokens.

        Parameters
        ----------
        xs : tuple of torch.Tensor, or torch.Tensor
            As in :meth:`forward` (what :meth:`SequenceNetwork.embed` returns).
        mask : torch.Tensor of bool, shape (B, T)
            ``True`` for real tokens.

        Returns
        -------
        torch.Tensor, shape (B, 2, T)
            Row 0: the weights of ``a^P`` (Eq. 1, from ``w^S S^T``, applied to
            ``P``); row 1: those of ``a^S`` (Eq. 2, from ``w^P P^T``, applied to
            ``S``). Each row sums to 1 over the real tokens and is exactly 0 on
            padding (all zeros for an empty document). With
            ``attention_softmax=True`` these are the head's weights. With
            ``False`` the head weights tokens by raw, signed scores that need
            not sum to anything; the rows are then ``|score_t| / sum_t'
            |score_t'|``, each token's share of the total magnitude it
            contributes to the sum (all zeros if every score is 0).
        """
        s, p, mask = self._inputs(xs, mask)
        alpha_s, alpha_p = self._head_weights(*self._encode(s, p, mask), mask)
        weights = torch.stack([alpha_s, alpha_p], dim=1)
        if not self.attention_softmax:
            weights = weights.abs()
            weights = weights / weights.sum(-1, keepdim=True).clamp_min(
                torch.finfo(weights.dtype).tiny
            )
        return weights

    def fold(self, inputs):
        """This module's inference folded into per-token terms of its inputs' parts.

        :meth:`SequenceNetwork.fold <sklearn_lama.modules.SequenceNetwork.fold>`
        calls it to build the network's inference form.

        Parameters
        ----------
        inputs : TokenInputs
            How ``S`` (from the first table) and ``P`` (from the last) are
            built from token ids.

        Returns
        -------
        FoldedDuoHead or None
            The logits of :meth:`forward` in eval mode, computed from the
            parts of the vectors; ``None`` with encoder layers (nonlinear in
            the tokens), with ``positions="add"``, or without tables. Its
            tensors are computed from the current weights, without
            gradients.
        """
        if len(self.layers) or self.positions == "add" or not inputs.tables:
            return None
        with torch.no_grad():
            return FoldedDuoHead(self, inputs)

    def forward(self, xs, mask=None):
        """Class logits.

        Parameters
        ----------
        xs : tuple or list of torch.Tensor, or torch.Tensor
            ``(S, P)`` with shapes ``(B, T, d1)``, ``(B, T, d2)``, or
            ``(X,)``/``X`` used as both ``S`` and ``P``.
        mask : torch.Tensor of bool, shape (B, T), optional
            ``True`` for real tokens, padding only at the end of a row;
            ``None`` means no padding.

        Returns
        -------
        torch.Tensor, shape (B, n_classes)
            Logits (no softmax). An all-padding row pools to ``[a^P, a^S] =
            0``, so its logits are the biases carried through (zeros with
            ``bias=False``).
        """
        s, p, mask = self._inputs(xs, mask)
        s, p = self._encode(s, p, mask)
        alpha_s, alpha_p = self._head_weights(s, p, mask)
        a_p = torch.bmm(alpha_s.unsqueeze(1), p).squeeze(1)  # Eq. 1
        a_s = torch.bmm(alpha_p.unsqueeze(1), s).squeeze(1)  # Eq. 2
        e = self.fusion(torch.cat([a_p, a_s], dim=-1))  # Eq. 3
        return self.output(self.dropout(e))


class FoldedDuoHead(nn.Module):
    """Duo's logits from per-token terms: the head of Eq. 1-3 folded into its inputs.

    Without encoder layers, everything in :class:`DuoModule` between a
    token's vectors and the logits is linear but the two weightings of Eq.
    1-2. With ``M = W^C W^O`` (the output layer after the fusion layer of
    Eq. 3; dropout is the identity at inference) and its columns ``M_P``,
    ``M_S`` that read ``a^P`` and ``a^S``, the logits are::

        c + M_P a^P + M_S a^S = c + sum_t alpha^S_t (M_P p_t) + sum_t alpha^P_t (M_S s_t)

    by Eq. 1 (``a^P = sum_t alpha^S_t p_t``) and Eq. 2 (``a^S = sum_t
    alpha^P_t s_t``), where ``alpha^S`` weights the scores ``w^S . s_t``
    and ``alpha^P`` the scores ``w^P . p_t``, and ``c`` carries the biases.
    The scores and the terms ``M_P p_t``, ``M_S s_t`` are products of a
    token's vectors with fixed matrices, so each is a sum over the parts of
    the vectors (:class:`~sklearn_lama.modules.TokenInputs`: table rows,
    fixed features, position encoding): the parts that depend on the token
    id alone are multiplied once per vocabulary id, those of an n-gram once
    per position of a batch, the position encoding once per position. A
    token then costs ``2 + 2 n_classes`` numbers instead of its ``d1 + d2``
    wide vectors. The same function of the weights; the sums are associated
    differently from :meth:`DuoModule.forward`, so the logits agree with it
    to float32 rounding.

    Built by :meth:`DuoModule.fold`, from the weights of that moment: its
    buffers are computed from them, not views of them, and the n-gram
    features it reads are those of inference
    (:meth:`~sklearn_lama.modules.NgramFeatures.inference_features`), so it
    computes the same in train and eval mode and does not change when the
    module trains on.

    Parameters
    ----------
    core : DuoModule
        Without encoder layers, ``positions`` ``"concat"`` or ``None``.
    inputs : TokenInputs
        The parts of the vectors ``S`` (first table) and ``P`` (last table).
    """

    def __init__(self, core, inputs):
        super().__init__()
        n_classes, p_width = core.n_classes, core.d2 + core.position_dim
        weight = core.output.weight
        fused = weight @ core.fusion.weight  # M = W^C W^O, (C, d2' + d1'), columns [a^P, a^S]
        bias = torch.zeros(n_classes, dtype=weight.dtype, device=weight.device)
        if core.fusion.bias is not None:
            bias += weight @ core.fusion.bias
        if core.output.bias is not None:
            bias += core.output.bias
        # A token's terms, by column: w^S . s_t, w^P . p_t, M_S s_t (C), M_P p_t (C).
        rows = [
            self._columns(core.w_s, 0, fused[:, p_width:].T, n_classes),
            self._columns(core.w_p, 1, fused[:, :p_width].T, n_classes),
        ]
        tables = (inputs.tables[0], inputs.tables[-1])
        widths = [t.shape[1] for t in tables]
        table = tables[0] @ rows[0][: widths[0]] + tables[1] @ rows[1][: widths[1]]
        ngrams, ngram_weights = [], []
        for features, scales in inputs.features:
            values = features.block_table() if features.n == 1 else features.values
            k = values.shape[1]
            # Stream S reads the first table's scale, stream P the last's.
            mixed = sum(
                scales[which].to(rows[i].dtype) * rows[i][widths[i] : widths[i] + k]
                for i, which in enumerate((0, -1))
            )
            widths = [w + k for w in widths]
            if features.n == 1:
                table = table + values @ mixed
            else:
                ngrams.append(features.inference_features())
                ngram_weights.append(mixed)
        self.register_buffer("table", table)
        self.register_buffer("bias", bias)
        self.register_buffer("position_weights", rows[0][widths[0] :] + rows[1][widths[1] :])
        self.ngrams = nn.ModuleList(ngrams)
        for i, mixed in enumerate(ngram_weights):
            self.register_buffer(f"ngram_weights_{i}", mixed)
        self.n_classes = n_classes
        self.attention_softmax = core.attention_softmax
        self.position_dim = core.position_dim

    @staticmethod
    def _columns(scores, column, classes, n_classes):
        """``(width, 2 + 2 C)``: ``scores`` in ``column``, ``classes`` in its block of C."""
        out = scores.new_zeros((scores.shape[0], 2 + 2 * n_classes))
        out[:, column] = scores
        start = 2 + column * n_classes
        out[:, start : start + n_classes] = classes
        return out

    def ngram_terms(self):
        """``(features, weights)`` per n-gram feature: ``weights`` ``(k, 2 + 2 C)``, its terms."""
        return [
            (features, getattr(self, f"ngram_weights_{i}"))
            for i, features in enumerate(self.ngrams)
        ]

    def forward(self, lengths, ids):
        """Logits ``(B, C)`` of the padded batch ``ids`` ``(B, T)`` of ``lengths`` ``(B,)``."""
        length = ids.shape[1]
        mask = torch.arange(length, device=lengths.device) < lengths.unsqueeze(1)
        terms = self.table[ids]
        for features, weights in self.ngram_terms():
            terms = terms + features(ids) @ weights
        if self.position_dim:
            encoding = _sinusoidal_positions(length, self.position_dim, ids.device, terms.dtype)
            terms = terms + encoding @ self.position_weights
        scores_s, scores_p = terms[..., 0], terms[..., 1]
        if self.attention_softmax:
            alpha_s, alpha_p = masked_softmax(scores_s, mask), masked_softmax(scores_p, mask)
        else:
            keep = mask.to(terms.dtype)
            alpha_s, alpha_p = scores_s * keep, scores_p * keep
        c = self.n_classes
        # M_P a^P with a^P pooled by the weights of Eq. 1, M_S a^S by those of Eq. 2.
        pooled_p = torch.bmm(alpha_s.unsqueeze(1), terms[..., 2 + c :]).squeeze(1)
        pooled_s = torch.bmm(alpha_p.unsqueeze(1), terms[..., 2 : 2 + c]).squeeze(1)
        return pooled_p + pooled_s + self.bias
