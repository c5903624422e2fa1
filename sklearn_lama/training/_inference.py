"""Inference: the one path on which a fitted network runs over new documents."""

import numpy as np
import torch
from torch.utils.data import Subset

from ._batching import make_loader
from ._devices import to_device
from ._distributed import run_workers
from ._parameters import INFERENCE_BATCH

__all__ = ["SPREAD_DOCUMENTS", "run_sorted"]

#: Documents per worker from which prediction spreads over ``n_workers`` processes,
#: which take some 0.1 s to start and gather (a set value, not one chosen by measurement).
SPREAD_DOCUMENTS = 2000


def run_sorted(
    net,
    batches,
    compute,
    budget,
    batch_size=INFERENCE_BATCH,
    documents=None,
    module=None,
    n_workers=1,
):
    """Apply ``compute(network, inputs)`` to every document; yield ``(rows, output)`` per batch.

    ``documents`` (positions in ``batches``) restricts the run to those.
    ``network`` is ``module``, by default the net's network (``net.module_``):
    an estimator passes the inference form it built from the network
    (``inference_module_``, a :class:`~sklearn_lama.modules.FoldedNetwork`)
    to predict with it.

    Documents are sorted by length, which keeps padding, and so wasted
    compute, small, and cut into batches of at most ``batch_size`` documents
    within ``budget`` (a :class:`~sklearn_lama.training._batching.BatchBudget`);
    masking makes each document's output independent of its batch, up to
    float32 rounding. Ties are broken by content, so any permutation of the
    same documents gives the same batches: float32 kernels can round a row
    differently at another position, and outputs must not depend on input
    order. A document predicted alone or among others of another number or
    length gets its result up to float32 rounding: matrix kernels round a row
    differently in products of another shape (docs/reliability.rst). ``rows`` are the
    positions in ``batches`` of the batch's documents; ``network`` is in eval
    mode, without gradients, under the net's autocast (``precision``), and
    ``inputs`` are on the net's device; ``output`` is float32 whatever the
    precision.

    With ``n_workers`` above 1, on the CPU, and at least
    :data:`SPREAD_DOCUMENTS` documents per worker, the sorted documents are
    dealt out to ``n_workers`` processes forked from this one (one thread
    each, a share of the threads): each runs this function on every
    ``n_workers``-th document, and the pairs come back worker by worker.
    """
    keys, lengths = batches.content_keys(), batches.lengths
    if documents is None:
        order = np.lexsort((keys, lengths))
    else:
        documents = np.asarray(documents, dtype=np.int64)
        order = documents[np.lexsort((keys[documents], lengths[documents]))]
    device_type = torch.device(net.device).type
    if n_workers > 1 and device_type == "cpu" and len(order) >= n_workers * SPREAD_DOCUMENTS:

        def work(workers):
            share = order[workers.rank :: workers.size]
            pairs = run_sorted(net, batches, compute, budget, batch_size, share, module)
            return list(pairs)

        threads = max(torch.get_num_threads() // n_workers, 1)
        for pairs in run_workers(n_workers, work, threads, group=False):
            yield from pairs
        return
    network = net.module_ if module is None else module
    network.eval()
    pinned = device_type == "cuda"
    loader = make_loader(Subset(batches, order), batch_size, budget, pin_memory=pinned)
    start = 0
    with torch.no_grad():
        for inputs, end in zip(loader, loader.batch_sampler.ends):
            inputs = {k: to_device(v, net.device) for k, v in inputs.items()}
            with net.autocast():
                output = compute(network, inputs)
            yield order[start:end], output[: end - start].float()
            start = end
