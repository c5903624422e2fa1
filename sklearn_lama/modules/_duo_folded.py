"""Duo's logits from per-token terms: the head folded into its inputs, for prediction.

Without encoder layers, everything in :class:`~sklearn_lama.modules.DuoModule`
between a token's vectors and the logits is linear, except the two softmaxes
over the Eq. 1-2 scores. The logits are ``c + M_P a^P + M_S a^S`` with ``M =
W_out W^O`` (the output layer after the fusion layer of Eq. 3, dropout being
the identity at prediction) and ``a^P = sum_t alpha^S_t p_t`` (Eq. 1), so
they equal ``c + sum_t alpha^S_t (M_P p_t) + sum_t alpha^P_t (M_S s_t)``; the
scores ``w^S . s_t`` and ``w^P . p_t`` and the terms ``M_P p_t`` and ``M_S
s_t`` are sums over the parts of a token's vectors (its word vectors, Naive
Bayes features, position encoding), each a product with a fixed matrix. The
parts that depend on the token alone are computed once per vocabulary id,
those of the token pair once per pair of the batch and those of the position
once per position: a token then costs ``2 + 2 n_classes`` numbers instead of
its ``d1 + d2`` wide vectors and their copies. The same model; the sums
are only associated differently, so the logits agree to float32 rounding.
"""

import torch

from ._duo import DuoModule, _sinusoidal_positions
from ._masking import masked_softmax

__all__ = ["FoldedDuo"]


class FoldedDuo:
    """The logits of a fitted Duo network, computed from per-token terms.

    Build it with :meth:`of`, which returns ``None`` for a network it does
    not cover; call it on a padded batch like the network.

    Parameters
    ----------
    network : SequenceNetwork
        Over one or two lookups, with a :class:`DuoModule` core without
        encoder layers and with ``positions`` ``"concat"`` or ``None``.
    """

    def __init__(self, network):
        core = network.core
        n_classes, p_width = core.n_classes, core.d2 + core.position_dim
        weight = core.output.weight
        fused = weight @ core.fusion.weight  # (C, d2' + d1'), columns [a^P, a^S]
        self.bias = torch.zeros(n_classes, dtype=weight.dtype, device=weight.device)
        if core.fusion.bias is not None:
            self.bias += weight @ core.fusion.bias
        if core.output.bias is not None:
            self.bias += core.output.bias
        # Columns of a token's terms: score^S, score^P, M_S s_t (C), M_P p_t (C).
        w_s = self._columns(core.w_s[:, None], 0, fused[:, p_width:].T, n_classes)
        w_p = self._columns(core.w_p[:, None], 1, fused[:, :p_width].T, n_classes)
        self.n_classes = n_classes
        self.attention_softmax = core.attention_softmax
        # The rows of each stream: word vectors, token features, pair features, positions.
        tables = (network.lookups[0].weight, network.lookups[-1].weight)
        widths = [t.shape[1] for t in tables]
        rows = [w_s, w_p]
        self.table = tables[0] @ w_s[: widths[0]] + tables[1] @ w_p[: widths[1]]
        self.pair_features, self.pair_weights = None, None
        for features, scales in network._fixed_features():
            k = features.values.shape[1]
            # Stream S reads the first table's scale, stream P the last's.
            mixed = sum(
                scales[table].to(rows[i].dtype) * rows[i][widths[i] : widths[i] + k]
                for i, table in enumerate((0, -1))
            )
            widths = [w + k for w in widths]
            if features.n == 1:
                self.table = self.table + features.block_table() @ mixed
            else:
                self.pair_features, self.pair_weights = features, mixed
        self.position_dim = core.position_dim
        self.position_weights = w_s[widths[0] :] + w_p[widths[1] :]

    @staticmethod
    def _columns(scores, column, classes, n_classes):
        """``(width, 2 + 2 C)``: ``scores`` in ``column``, ``classes`` in its block of C."""
        out = scores.new_zeros((scores.shape[0], 2 + 2 * n_classes))
        out[:, column] = scores[:, 0]
        start = 2 + column * n_classes
        out[:, start : start + n_classes] = classes
        return out

    @classmethod
    def of(cls, network):
        """A :class:`FoldedDuo` of ``network``, or ``None`` where it is not covered.

        Covered: a :class:`DuoModule` core without encoder layers, positions
        ``"concat"`` or ``None``, over one or two lookups of token ids.
        """
        core = network.core
        covered = (
            isinstance(core, DuoModule)
            and len(core.layers) == 0
            and core.positions in ("concat", None)
            and len(network.lookups) in (1, 2)
        )
        if not covered:
            return None
        with torch.no_grad():
            return cls(network)

    def __call__(self, lengths, ids):
        """Logits ``(B, C)`` of the padded batch ``ids`` ``(B, T)`` with true ``lengths``."""
        length = ids.shape[1]
        mask = torch.arange(length, device=lengths.device) < lengths.unsqueeze(1)
        terms = self.table[ids]
        if self.pair_features is not None:
            terms = terms + self.pair_features(ids) @ self.pair_weights
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
        # M_P a^P, a^P pooled by the weights of Eq. 1, and M_S a^S by those of Eq. 2.
        pooled_p = torch.bmm(alpha_s.unsqueeze(1), terms[..., 2 + c :]).squeeze(1)
        pooled_s = torch.bmm(alpha_p.unsqueeze(1), terms[..., 2 : 2 + c]).squeeze(1)
        return pooled_p + pooled_s + self.bias
