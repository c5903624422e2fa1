"""Inference: the one path on which a fitted network runs over new documents."""

import numpy as np
import torch
from torch.utils.data import Subset

from ._batching import MAX_BATCH_TOKENS, make_loader
from ._training import INFERENCE_BATCH

__all__ = ["run_sorted"]

# Rows below which a batch is padded with copies of its last document. CPU
# matrix kernels take another path for a handful of rows (matrix-vector
# products below 5 rows on the MKL build measured here), which rounds float32
# results differently: a document predicted alone then differed from the same
# document in a batch by up to 3e-7 in its logits. From 5 rows on, each row's
# result was bitwise the same whatever the other rows.
_MIN_ROWS = 8


def run_sorted(net, batches, compute):
    """Apply ``compute(network, inputs)`` to every document; yield ``(rows, output)`` per batch.

    Documents are sorted by length, which keeps padding, and so wasted
    compute, small, and cut into batches within the token budget of
    :func:`~sklearn_lama._batching.make_loader`; masking makes each
    document's output independent of its batch. Ties are broken by content,
    so any permutation of the same documents gives the same batches: float32
    kernels can round a row differently at another position, and outputs must
    not depend on input order. A batch of fewer than 8 documents is padded
    with copies of its last one (up to the token budget), so that a document
    predicted alone gets bitwise the result it gets among others. ``rows``
    are the positions in ``batches`` of the batch's documents; the network is
    in eval mode, without gradients, and ``inputs`` are on the net's device.
    """
    order = np.lexsort((batches.content_keys(), batches.lengths))
    network = net.module_
    network.eval()
    device = torch.device(net.device)
    start = 0
    with torch.no_grad():
        for inputs, _ in make_loader(Subset(batches, order), INFERENCE_BATCH):
            n = len(inputs["lengths"])
            inputs = {k: v.to(device) for k, v in _padded_rows(inputs).items()}
            yield order[start : start + n], compute(network, inputs)[:n]
            start += n


def _padded_rows(inputs):
    """``inputs`` with copies of the last document up to ``_MIN_ROWS`` rows, within budget."""
    n = len(inputs["lengths"])
    width = next(v.shape[1] for k, v in inputs.items() if k in ("ids", "x"))
    rows = min(_MIN_ROWS, MAX_BATCH_TOKENS // max(width, 1))
    if n >= rows:
        return inputs
    index = torch.cat([torch.arange(n), torch.full((rows - n,), n - 1)])
    return {k: v[index] for k, v in inputs.items()}
