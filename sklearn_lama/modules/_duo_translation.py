"""The Duo Transformer translator (Li, Jiang, Xia & Li, "Meta-embeddings based on self-attention").

An encoder-decoder Transformer (Vaswani et al., "Attention is all you need", 2017) whose tokens are
read through two embedding streams, "Spongebob" ``S`` and "Patrick" ``P``, of the same width. The
paper's four changes to the Transformer, the steps of its ablation (Table 6), are flags of
:class:`DuoTranslationModule`:

``meta_embeddings``
    Two streams instead of one, on both sides. Every encoder self-attention and every decoder
    cross-attention is Duo attention (Eq. 4-5): the pattern of one stream's output is computed from
    the other stream.
``weight_sharing``
    In every attention, one stream's key and value projections are one matrix (§3.2.1).
``duo_norm``
    In the decoder, the residual of a stream is normalised together with the masked self-attention
    driven by the other stream, Eq. 6 ``LayerNorm(x^S + Sublayer(x^P))``, between the masked
    attention and the feed-forward (§3.4). Off, each stream's masked self-attention reads only its
    own stream.
``fusion``
    The output layer is tied to the target embeddings through a learned projection of their
    concatenation (§3.3), starting at the identity; off, it is tied to the embeddings themselves
    (Press & Wolf, as the vanilla Transformer).

With all four off there is one stream and the module is the post-norm Transformer "base" layout of
Vaswani et al. (sinusoidal positions, embeddings scaled by ``sqrt(d_model)``, ReLU feed-forwards,
output tied to the target embedding) at the same width: the paper's baseline, in the same code.

Masks are boolean with ``True`` for real tokens and padding only at the end of a row; padded keys
get no weight.
"""

import math

import torch
from torch import nn

from ._duo import DuoEncoderLayer, DuoLayerNorm, _sinusoidal_positions
from ._masking import masked_softmax

__all__ = ["DuoDecoderLayer", "DuoTranslationModule", "StreamAttention", "causal_mask"]


def causal_mask(length, device=None):
    """``(length, length)`` bool, ``True`` where query ``i`` may see key ``j`` (``j <= i``)."""
    return torch.ones(length, length, dtype=torch.bool, device=device).tril()


class StreamAttention(nn.Module):
    """Multi-head attention from one or two query streams over one or two memory streams.

    With ``coupled`` and two streams this is the Duo attention of Eq. 4-5 between two sequences
    (the decoder's
    cross-attention when queries come from the target and memory from the encoder, §3.3)::

        A^S = MultiHead(Q^P, K^P, V^S)      A^P = MultiHead(Q^S, K^S, V^P)

    i.e. the output of stream ``i`` takes its pattern from the other stream and its values from its
    own. Without ``coupled`` each stream attends on its own (``MultiHead(Q^S, K^S, V^S)``); with
    one stream this is the attention of the vanilla Transformer (``torch.nn.MultiheadAttention``
    with biases).

    Parameters
    ----------
    d_model : int
        Width of every stream.
    n_streams : {1, 2}
        Number of streams.
    n_heads : int
        Heads; must divide ``d_model``.
    dropout : float, default=0.0
        Dropout on the attention weights.
    share_kv : bool, default=False
        Key and value projections of a stream are one matrix (§3.2.1).
    coupled : bool, default=True
        Eq. 4-5 coupling of the two streams (ignored with one stream).
    """

    def __init__(self, d_model, n_streams, n_heads, dropout=0.0, share_kv=False, coupled=True):
        super().__init__()
        if d_model % n_heads:
            raise ValueError(f"d_model={d_model} must be divisible by n_heads={n_heads}.")
        if n_streams not in (1, 2):
            raise ValueError(f"n_streams must be 1 or 2, got {n_streams}.")
        self.n_streams, self.n_heads, self.head_dim = n_streams, n_heads, d_model // n_heads
        self.share_kv, self.coupled = share_kv, coupled and n_streams == 2
        self.q = nn.ModuleList(nn.Linear(d_model, d_model) for _ in range(n_streams))
        self.k = nn.ModuleList(nn.Linear(d_model, d_model) for _ in range(n_streams))
        self.v = (
            None
            if share_kv
            else nn.ModuleList(nn.Linear(d_model, d_model) for _ in range(n_streams))
        )
        self.out = nn.ModuleList(nn.Linear(d_model, d_model) for _ in range(n_streams))
        self.dropout = nn.Dropout(dropout)

    def _split(self, x):
        b, t, _ = x.shape
        return x.view(b, t, self.n_heads, self.head_dim).transpose(1, 2)

    def forward(self, queries, memory, key_mask, attn_mask=None):
        """Attend.

        Parameters
        ----------
        queries : tuple of torch.Tensor, each (B, Tq, d_model)
        memory : tuple of torch.Tensor, each (B, Tk, d_model)
        key_mask : torch.Tensor of bool, shape (B, Tk)
            ``True`` for real keys.
        attn_mask : torch.Tensor of bool, shape (Tq, Tk), optional
            ``True`` where a query may see a key (e.g. :func:`causal_mask`).

        Returns
        -------
        tuple of torch.Tensor, each (B, Tq, d_model)
        """
        keys = [self._split(k(m)) for k, m in zip(self.k, memory)]
        values = keys if self.share_kv else [self._split(v(m)) for v, m in zip(self.v, memory)]
        mask = key_mask[:, None, None, :]
        if attn_mask is not None:
            mask = mask & attn_mask[None, None]
        scale = 1.0 / math.sqrt(self.head_dim)
        outputs = []
        for i in range(self.n_streams):
            driver = 1 - i if self.coupled else i
            q = self._split(self.q[driver](queries[driver]))
            weights = masked_softmax(q @ keys[driver].transpose(-2, -1) * scale, mask)
            merged = (self.dropout(weights) @ values[i]).transpose(1, 2).flatten(2)
            outputs.append(self.out[i](merged))
        return tuple(outputs)


class _SelfAttentionPair(nn.Module):
    """:class:`StreamAttention` with the ``(s, p, mask)`` call of :class:`DuoMultiHeadAttention`.

    It replaces the attention of a :class:`DuoEncoderLayer` when K/V sharing is off.
    """

    def __init__(self, attention):
        super().__init__()
        self.inner = attention

    def forward(self, s, p, mask):
        return self.inner((s, p), (s, p), mask)


class _VanillaEncoderLayer(nn.Module):
    """Post-norm Transformer encoder layer on one stream (the baseline)."""

    def __init__(self, d_model, n_heads, d_ff, dropout, share_kv):
        super().__init__()
        self.attention = StreamAttention(d_model, 1, n_heads, dropout, share_kv=share_kv)
        self.norm_attention = nn.LayerNorm(d_model)
        self.ff = nn.Sequential(
            nn.Linear(d_model, d_ff), nn.ReLU(), nn.Dropout(dropout), nn.Linear(d_ff, d_model)
        )
        self.norm_ff = nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, s, mask):
        (a,) = self.attention((s,), (s,), mask)
        s = self.norm_attention(s + self.dropout(a))
        return self.norm_ff(s + self.dropout(self.ff(s)))


class DuoDecoderLayer(nn.Module):
    """Duo Transformer decoder layer (§3.3-3.4): masked self-attention, cross-attention, FFN.

    Each sublayer is post-normed, ``LayerNorm(x + Dropout(Sublayer))`` per stream. With two
    streams:

    1. masked self-attention over the target prefix; with ``duo_norm`` it is Duo
       attention (stream ``S``'s output driven by ``P`` and the other way round)
       and its residual sum is the Duo layer norm of Eq. 6; without, each stream
       attends to itself;
    2. cross-attention over the encoder output, with keys and values from
       different embedding streams (§3.3);
    3. a position-wise feed-forward per stream.

    With one stream it is the decoder layer of the vanilla Transformer.

    Parameters
    ----------
    d_model, n_heads, d_ff : int
        Width, heads, feed-forward width.
    n_streams : {1, 2}
        Embedding streams.
    dropout : float, default=0.1
    share_kv : bool, default=True
        K/V sharing in both attentions (§3.2.1).
    duo_norm : bool, default=True
        Eq. 6 between masked attention and feed-forward (§3.4).
    """

    def __init__(
        self, d_model, n_heads, d_ff, n_streams=2, dropout=0.1, share_kv=True, duo_norm=True
    ):
        super().__init__()
        self.n_streams = n_streams
        self.self_attention = StreamAttention(
            d_model, n_streams, n_heads, dropout, share_kv=share_kv, coupled=duo_norm
        )
        self.cross_attention = StreamAttention(
            d_model, n_streams, n_heads, dropout, share_kv=share_kv, coupled=True
        )
        # Eq. 6 normalises each stream's residual with its own LayerNorm; DuoLayerNorm holds both.
        self.norms = nn.ModuleList(
            DuoLayerNorm(d_model, d_model) if n_streams == 2 else nn.LayerNorm(d_model)
            for _ in range(3)
        )
        self.ff = nn.ModuleList(
            nn.Sequential(
                nn.Linear(d_model, d_ff), nn.ReLU(), nn.Dropout(dropout), nn.Linear(d_ff, d_model)
            )
            for _ in range(n_streams)
        )
        self.dropout = nn.Dropout(dropout)

    def _add_norm(self, norm, streams, sublayers):
        sublayers = [self.dropout(x) for x in sublayers]
        if self.n_streams == 2:
            return norm(streams[0], streams[1], sublayers[0], sublayers[1])
        return (norm(streams[0] + sublayers[0]),)

    def forward(self, target, memory, target_mask, memory_mask):
        """Apply the layer.

        Parameters
        ----------
        target : tuple of torch.Tensor, each (B, Tt, d_model)
        memory : tuple of torch.Tensor, each (B, Ts, d_model)
            Encoder output streams.
        target_mask, memory_mask : torch.Tensor of bool, shapes (B, Tt), (B, Ts)

        Returns
        -------
        tuple of torch.Tensor, each (B, Tt, d_model)
        """
        causal = causal_mask(target[0].shape[1], target[0].device)
        x = self._add_norm(
            self.norms[0], target, self.self_attention(target, target, target_mask, causal)
        )
        x = self._add_norm(self.norms[1], x, self.cross_attention(x, memory, memory_mask))
        return self._add_norm(self.norms[2], x, [ff(s) for ff, s in zip(self.ff, x)])


class DuoTranslationModule(nn.Module):
    """Duo Transformer encoder-decoder (§3.2-3.4) or, with every flag off, the Transformer.

    Parameters
    ----------
    src_vocab_size, tgt_vocab_size : int
        Vocabulary sizes; id 0 is padding on both sides.
    d_model : int, default=256
        Width of every stream.
    n_heads : int, default=4
    d_ff : int, default=1024
    n_layers : int, default=3
        Encoder layers.
    n_decoder_layers : int or None, default=None
        Decoder layers (``None``: ``n_layers``).
    dropout : float, default=0.1
        On embeddings plus positions and on every sublayer output and attention weight (Vaswani et
        al.).
    meta_embeddings, weight_sharing, duo_norm, fusion : bool, default=True
        The Table 6 steps; see the module docstring. ``duo_norm`` needs ``meta_embeddings`` to
        change anything.
    src_tables : sequence of array-like of shape (src_vocab_size, d_i), optional
        Pretrained source embeddings (e.g. a :class:`~sklearn_lama.MetaEmbeddingTransformer`'s
        tables): the streams start from the first two (the first alone without
        ``meta_embeddings``), fine-tuned, each followed by a learned ``d_i x d_model`` projection
        as in §4.2 (300d GloVe then a 300 x 512 map). ``None``: source embeddings are learned from
        scratch.
    """

    def __init__(
        self,
        src_vocab_size,
        tgt_vocab_size,
        d_model=256,
        n_heads=4,
        d_ff=1024,
        n_layers=3,
        n_decoder_layers=None,
        dropout=0.1,
        meta_embeddings=True,
        weight_sharing=True,
        duo_norm=True,
        fusion=True,
        src_tables=None,
    ):
        super().__init__()
        n = 2 if meta_embeddings else 1
        self.n_streams, self.d_model = n, d_model
        n_decoder_layers = n_layers if n_decoder_layers is None else n_decoder_layers
        if src_tables is None:
            self.src_embeddings = nn.ModuleList(
                nn.Embedding(src_vocab_size, d_model, padding_idx=0) for _ in range(n)
            )
            self.src_projections = None
        else:
            tables = [torch.as_tensor(t, dtype=torch.float32) for t in src_tables]
            tables = [tables[min(i, len(tables) - 1)] for i in range(n)]
            self.src_embeddings = nn.ModuleList(
                nn.Embedding.from_pretrained(t, freeze=False, padding_idx=0) for t in tables
            )
            self.src_projections = nn.ModuleList(nn.Linear(t.shape[1], d_model) for t in tables)
        self.tgt_embeddings = nn.ModuleList(
            nn.Embedding(tgt_vocab_size, d_model, padding_idx=0) for _ in range(n)
        )
        # §3.3: output weights = a learned projection of the concatenated duo target embedding.
        # Starting from the identity, the fused model begins exactly where plain tying would.
        self.fusion = nn.Parameter(torch.eye(n * d_model)) if fusion else None
        if n == 2:
            self.encoder = nn.ModuleList(
                DuoEncoderLayer(
                    d_model, d_model, n_heads=n_heads, d_ff=d_ff, dropout=dropout, d_attn=d_model
                )
                for _ in range(n_layers)
            )
            if not weight_sharing:
                for layer in self.encoder:
                    layer.attention = _SelfAttentionPair(
                        StreamAttention(d_model, 2, n_heads, dropout, share_kv=False, coupled=True)
                    )
        else:
            self.encoder = nn.ModuleList(
                _VanillaEncoderLayer(d_model, n_heads, d_ff, dropout, weight_sharing)
                for _ in range(n_layers)
            )
        self.decoder = nn.ModuleList(
            DuoDecoderLayer(
                d_model,
                n_heads,
                d_ff,
                n_streams=n,
                dropout=dropout,
                share_kv=weight_sharing,
                duo_norm=duo_norm,
            )
            for _ in range(n_decoder_layers)
        )
        self.dropout = nn.Dropout(dropout)
        self.reset_parameters(src_tables is None)

    def reset_parameters(self, source_too=True):
        """Embeddings ``N(0, d_model^-1/2)``: of scale 1 after the ``sqrt(d_model)`` factor."""
        tables = list(self.tgt_embeddings) + (list(self.src_embeddings) if source_too else [])
        for embedding in tables:
            nn.init.normal_(embedding.weight, std=self.d_model**-0.5)
            with torch.no_grad():
                embedding.weight[0].zero_()

    def _embed(self, embeddings, ids, projections=None):
        t = ids.shape[1]
        positions = _sinusoidal_positions(t, self.d_model, ids.device, torch.float32)
        streams = []
        for i, embedding in enumerate(embeddings):
            x = embedding(ids)
            x = projections[i](x) if projections is not None else x * math.sqrt(self.d_model)
            streams.append(self.dropout(x + positions))
        return tuple(streams)

    def encode(self, src_ids):
        """Encoder output streams and the source mask for ``src_ids`` ``(B, Ts)`` (0 = padding)."""
        mask = src_ids != 0
        streams = self._embed(self.src_embeddings, src_ids, self.src_projections)
        for layer in self.encoder:
            streams = layer(*streams, mask) if self.n_streams == 2 else (layer(streams[0], mask),)
        return streams, mask

    def output_weights(self):
        """Output layer ``(tgt_vocab_size, n_streams * d_model)``: tied, projected by fusion."""
        weights = torch.cat([e.weight for e in self.tgt_embeddings], dim=-1)
        return weights if self.fusion is None else weights @ self.fusion

    def decode(self, tgt_ids, memory, memory_mask, last_only=False):
        """Next-token logits ``(B, Tt, tgt_vocab_size)`` for the target prefixes ``(B, Tt)``.

        With ``last_only`` only those of the last position, ``(B, 1, tgt_vocab_size)``, which is
        all that decoding needs (the output layer is the largest product of the model).
        """
        streams = self._embed(self.tgt_embeddings, tgt_ids)
        mask = tgt_ids != 0
        for layer in self.decoder:
            streams = layer(streams, memory, mask, memory_mask)
        hidden = torch.cat(streams, dim=-1)
        if last_only:
            hidden = hidden[:, -1:]
        tables = torch.cat([e.weight for e in self.tgt_embeddings], dim=-1)
        if self.fusion is not None:
            # (tables @ fusion).T == fusion.T @ tables.T: projecting the B*Tt hidden states costs
            # B*Tt*(2d)^2 products where projecting the vocabulary, output_weights(), costs
            # V*(2d)^2, several times more per training batch and per decoding step.
            hidden = hidden @ self.fusion.T
        return hidden @ tables.T

    def forward(self, src_ids, tgt_ids):
        """Teacher-forced logits: position ``t`` predicts token ``t + 1`` from tokens ``<= t``."""
        memory, memory_mask = self.encode(src_ids)
        return self.decode(tgt_ids, memory, memory_mask)
