"""Reductions over time that ignore padding, shared by every model."""

import torch

__all__ = ["masked_mean", "masked_softmax"]


def masked_softmax(scores, mask, dim=-1):
    """Softmax over ``dim`` restricted to the positions where ``mask`` is true.

    Parameters
    ----------
    scores : torch.Tensor
        Unnormalised scores.
    mask : torch.Tensor of bool
        Broadcastable to ``scores``; ``True`` marks positions that may receive weight.
    dim : int, default=-1
        Axis to normalise over.

    Returns
    -------
    torch.Tensor
        Same shape as ``scores``. Weights sum to 1 over the unmasked
        positions, are exactly 0 on masked ones, and a slice with no unmasked
        position is all zeros (not NaN).
    """
    # The most negative finite value rather than -inf: a slice with no real
    # position would otherwise compute exp(-inf - (-inf)) = NaN.
    filled = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(filled, dim=dim)
    # Where a real position exists the masked weights already underflowed to
    # exactly 0; the product only changes fully masked slices, which the
    # softmax made uniform over padding.
    return weights * mask.to(weights.dtype)


def masked_mean(x, mask):
    """Mean of ``x`` (B, T, d) over the real positions of ``mask`` (B, T); 0 for an empty row."""
    weights = mask.to(x.dtype).unsqueeze(-1)
    return (x * weights).sum(1) / weights.sum(1).clamp_min(1.0)
