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

Decoding is incremental (the standard Transformer inference): :meth:`DuoTranslationModule.
start_decoding` projects the encoder output's keys and values of every cross-attention once, and
each :meth:`~DuoTranslationModule.decode_next` runs the same layers on the new target positions
only, their masked self-attention reading the keys and values of the earlier positions from a
:class:`DecoderState`. Training's :meth:`~DuoTranslationModule.decode` and a decoding step are one
code path: the full prefix is a step from an empty state.
"""

import math

import torch
from torch import nn

from ._duo import DuoEncoderLayer, DuoLayerNorm, _sinusoidal_positions
from ._masking import masked_softmax

__all__ = ["DuoDecoderLayer", "DuoTranslationModule", "StreamAttention", "causal_mask"]


def causal_mask(length, device=None, past=0):
    """``(length, past + length)`` bool, ``True`` where query ``i`` may see key ``j``.

    Query ``i`` is position ``past + i`` and sees the keys of the positions up to its own
    (``j <= past + i``): ``past`` earlier positions come first, as in incremental decoding.
    """
    return torch.ones(length, past + length, dtype=torch.bool, device=device).tril(past)


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

    def project(self, memory):
        """Keys and values of ``memory``, what :meth:`attend` reads (and a decoder caches).

        Parameters
        ----------
        memory : tuple of torch.Tensor, each (B, Tk, d_model)

        Returns
        -------
        keys, values : list of torch.Tensor, each (B, n_heads, Tk, d_model / n_heads)
            One per stream; with ``share_kv`` ``values`` is ``keys``.
        """
        keys = [self._split(k(m)) for k, m in zip(self.k, memory)]
        values = keys if self.share_kv else [self._split(v(m)) for v, m in zip(self.v, memory)]
        return keys, values

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
        return self.attend(queries, *self.project(memory), key_mask, attn_mask)

    def attend(self, queries, keys, values, key_mask, attn_mask=None):
        """Attend with the keys and values of :meth:`project`: the rest of :meth:`forward`.

        Parameters
        ----------
        queries : tuple of torch.Tensor, each (B, Tq, d_model)
        keys, values : list of torch.Tensor, each (B, n_heads, Tk, d_model / n_heads)
        key_mask : torch.Tensor of bool, shape (B, Tk)
        attn_mask : torch.Tensor of bool, shape (Tq, Tk), optional

        Returns
        -------
        tuple of torch.Tensor, each (B, Tq, d_model)
        """
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

    def forward(self, target, memory, target_mask, memory_mask, cache=None):
        """Apply the layer.

        Parameters
        ----------
        target : tuple of torch.Tensor, each (B, Tt, d_model)
        memory : tuple of torch.Tensor, each (B, Ts, d_model)
            Encoder output streams (not read with a ``cache``: it holds their keys and values).
        target_mask, memory_mask : torch.Tensor of bool, shapes (B, P + Tt), (B, Ts)
            ``target_mask`` covers the ``P`` earlier positions of ``cache`` (0 without one), then
            those of ``target``.
        cache : LayerCache, optional
            Incremental decoding: ``target`` holds the positions after the ``P`` whose
            self-attention keys and values ``cache`` holds, and the cross-attention's keys and
            values of the encoder output. Extended in place by the keys and values of ``target``.

        Returns
        -------
        tuple of torch.Tensor, each (B, Tt, d_model)
        """
        past = 0 if cache is None else cache.length
        causal = causal_mask(target[0].shape[1], target[0].device, past)
        keys, values = self.self_attention.project(target)
        if cache is not None:
            keys, values = cache.extend(keys, values)
        attention = self.self_attention.attend(target, keys, values, target_mask, causal)
        x = self._add_norm(self.norms[0], target, attention)
        cross = self.cross_attention.project(memory) if cache is None else cache.cross
        x = self._add_norm(self.norms[1], x, self.cross_attention.attend(x, *cross, memory_mask))
        return self._add_norm(self.norms[2], x, [ff(s) for ff, s in zip(self.ff, x)])


class LayerCache:
    """What one :class:`DuoDecoderLayer` keeps between decoding steps, for a batch of rows.

    Parameters
    ----------
    cross : tuple (keys, values)
        The cross-attention's keys and values of the encoder output
        (:meth:`StreamAttention.project`), computed once.
    contiguous : bool, default=True
        Copy ``cross`` to contiguous memory, where a product would copy a strided view at
        every step (a single full-prefix pass reads it once and needs no copy).

    Attributes
    ----------
    length : int
        Target positions whose self-attention keys and values are held.
    """

    def __init__(self, cross, contiguous=True):
        if contiguous:
            keys, values = cross
            copies = [t.contiguous() for t in keys]
            cross = copies, copies if values is keys else [t.contiguous() for t in values]
        self.cross = cross
        self.length = 0
        self._shared = False
        # The first positions' keys (then, unless shared, values) as given, (B, n_heads, P,
        # head_dim): a full prefix (training) is kept as it is.
        self._first = None
        # Once extended: time-major buffers (capacity, B, n_heads, head_dim), the first
        # ``length`` positions in use, so that a step writes one position without copying the
        # others, and a reordering of the rows (beam search) copies the positions in use once,
        # into the spare buffers, which then swap roles.
        self._buffers = self._spares = None

    def _split(self, tensors):
        n = len(tensors) if self._shared else len(tensors) // 2
        keys = tensors[:n]
        return keys, keys if self._shared else tensors[n:]

    def extend(self, keys, values):
        """Append the new positions' keys and values; return those of every position."""
        new = list(keys) if values is keys else list(keys) + list(values)
        start, end = self.length, self.length + new[0].shape[2]
        self.length = end
        if start == 0:
            self._shared, self._first = values is keys, new
            return keys, values
        if self._buffers is None or self._buffers[0].shape[0] < end:
            # Grown by doubling: the copies cost O(1) per position.
            capacity = max(end, 2 * start)
            old = (
                [t.permute(2, 0, 1, 3) for t in self._first]
                if self._buffers is None
                else [b[:start] for b in self._buffers]
            )
            self._buffers = [t.new_empty((capacity,) + t.shape[1:]) for t in old]
            for buffer, t in zip(self._buffers, old):
                buffer[:start] = t
            self._first = self._spares = None
        for buffer, t in zip(self._buffers, new):
            buffer[start:end] = t.permute(2, 0, 1, 3)
        return self._split([b[:end].permute(1, 2, 0, 3) for b in self._buffers])

    def select(self, rows, memory=True):
        """Keep ``rows`` (int64 tensor), in that order; ``memory=False`` leaves ``cross`` as is."""
        if self._first is not None:
            self._first = [t.index_select(0, rows) for t in self._first]
        elif self._buffers is not None:
            shape = (self._buffers[0].shape[0], len(rows)) + self._buffers[0].shape[2:]
            if self._spares is None or self._spares[0].shape != shape:
                self._spares = [b.new_empty(shape) for b in self._buffers]
            for buffer, spare in zip(self._buffers, self._spares):
                torch.index_select(buffer[: self.length], 1, rows, out=spare[: self.length])
            self._buffers, self._spares = self._spares, self._buffers
        if memory:
            keys, values = self.cross
            taken = [t.index_select(0, rows) for t in keys]
            self.cross = (
                taken,
                taken if values is keys else [t.index_select(0, rows) for t in values],
            )


class DecoderState:
    """What incremental decoding keeps between steps: :meth:`DuoTranslationModule.start_decoding`.

    For each decoder layer a :class:`LayerCache` (the self-attention's keys and values of the
    target positions given so far, the cross-attention's of the encoder output), the masks of
    both sides, and the position encodings.

    Parameters
    ----------
    layers : sequence of DuoDecoderLayer
    memory : tuple of torch.Tensor, each (B, Ts, d_model)
        Encoder output streams: each layer's cross-attention projects their keys and values here.
    memory_mask : torch.Tensor of bool, shape (B, Ts)
    contiguous : bool, default=True
        See :class:`LayerCache`.

    Attributes
    ----------
    length : int
        Target positions given so far.
    layers : list of LayerCache
    target_mask, memory_mask : torch.Tensor of bool, shapes (B, length), (B, Ts)
    output_table : torch.Tensor or None
        The target embedding tables side by side, ``(tgt_vocab_size, n_streams * d_model)``, once
        a step has made it.
    """

    def __init__(self, layers, memory, memory_mask, contiguous=True):
        self.layers = [
            LayerCache(layer.cross_attention.project(memory), contiguous) for layer in layers
        ]
        self.memory_mask = memory_mask
        self.target_mask = memory_mask.new_ones((memory_mask.shape[0], 0))
        self.length = 0
        self.output_table = None
        self._positions = None

    def positions(self, length, width, device):
        """Sinusoidal encodings ``(length, width)`` of the next ``length`` positions."""
        end = self.length + length
        if self._positions is None or self._positions.shape[0] < end:
            # Grown by doubling: the table costs O(1) per position.
            size = end if self.length == 0 else max(end, 2 * self._positions.shape[0])
            self._positions = _sinusoidal_positions(size, width, device, torch.float32)
        return self._positions[self.length : end]

    def select(self, rows, memory=True):
        """Keep the rows ``rows`` (an int64 tensor), in that order.

        For a beam's reordering, or to keep the rows still decoding. ``memory=False`` keeps the
        encoder side as it is, for a reordering among rows of one encoder output (the beams of
        one sentence): only the target side is taken.
        """
        for cache in self.layers:
            cache.select(rows, memory)
        self.target_mask = self.target_mask.index_select(0, rows)
        if memory:
            self.memory_mask = self.memory_mask.index_select(0, rows)


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

    def _embed(self, embeddings, ids, projections=None, positions=None):
        if positions is None:
            positions = _sinusoidal_positions(
                ids.shape[1], self.d_model, ids.device, torch.float32
            )
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

        With ``last_only`` only those of the last position, ``(B, 1, tgt_vocab_size)``. This is
        :meth:`decode_next` from a new :meth:`start_decoding` state: training and each decoding
        step run the same code.
        """
        state = DecoderState(self.decoder, memory, memory_mask, contiguous=False)
        return self.decode_next(tgt_ids, state, last_only)

    def start_decoding(self, memory, memory_mask):
        """A :class:`DecoderState` for decoding from the encoder output of :meth:`encode`.

        The cross-attentions' keys and values of ``memory`` are projected here, once.
        """
        return DecoderState(self.decoder, memory, memory_mask)

    def decode_next(self, tgt_ids, state, last_only=False):
        """Next-token logits ``(B, Tt, tgt_vocab_size)`` for target tokens that extend ``state``.

        ``tgt_ids`` ``(B, Tt)`` follow the ``state.length`` tokens already given, and ``state``
        is extended by them. Incremental decoding: the new positions' masked self-attention
        reads the earlier positions' keys and values from ``state``, so a step of one token
        costs the same products as the last position of :meth:`decode` on the whole prefix,
        whatever its length, plus one attention weight per earlier position. With
        ``last_only`` only the last position's logits are computed (the output layer is the
        largest product of the model).
        """
        positions = state.positions(tgt_ids.shape[1], self.d_model, tgt_ids.device)
        streams = self._embed(self.tgt_embeddings, tgt_ids, positions=positions)
        mask = tgt_ids != 0
        if state.length:
            mask = torch.cat([state.target_mask, mask], dim=1)
        for layer, cache in zip(self.decoder, state.layers):
            streams = layer(streams, None, mask, state.memory_mask, cache)
        state.target_mask, state.length = mask, state.length + tgt_ids.shape[1]
        hidden = torch.cat(streams, dim=-1)
        if last_only:
            hidden = hidden[:, -1:]
        if state.output_table is None:
            # Made once per state: a step would otherwise copy the tables.
            state.output_table = torch.cat([e.weight for e in self.tgt_embeddings], dim=-1)
        tables = state.output_table
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
