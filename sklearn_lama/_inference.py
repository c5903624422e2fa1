"""Inference: the one path on which a fitted network runs over new documents."""

import numpy as np
import torch
from torch.utils.data import Subset

from ._batching import make_loader
from ._training import INFERENCE_BATCH

__all__ = ["run_sorted"]


def run_sorted(net, batches, compute):
    """Apply ``compute(network, inputs)`` to every document; yield ``(rows, output)`` per batch.

    Documents are sorted by length, which keeps padding, and so wasted
    compute, small, and cut into batches within the token budget of
    :func:`~sklearn_lama._batching.make_loader`; masking makes each
    document's output independent of its batch. Ties are broken by content,
    so any permutation of the same documents gives the same batches: float32
    kernels can round a row differently at another position, and outputs must
    not depend on input order. ``rows`` are the positions in ``batches`` of the
    batch's documents; the network is in eval mode, without gradients, and
    ``inputs`` are on the net's device.
    """
    order = np.lexsort((batches.content_keys(), batches.lengths))
    network = net.module_
    network.eval()
    device = torch.device(net.device)
    start = 0
    with torch.no_grad():
        for inputs, _ in make_loader(Subset(batches, order), INFERENCE_BATCH):
            stop = start + len(inputs["lengths"])
            inputs = {k: v.to(device) for k, v in inputs.items()}
            yield order[start:stop], compute(network, inputs)
            start = stop
