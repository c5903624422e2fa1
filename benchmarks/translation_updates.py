"""Validation perplexity of a translator after a fixed number of updates, whatever the load.

The ``translation`` part compares models at equal wall-clock time, which on a shared machine mixes
what a model learns per update with how many updates the load left it. This script takes the
part's full-size configuration on English → French gettext messages and measures the first: it
trains for ``--evals`` rounds of ``--updates`` updates each (one torch thread) and prints, as one
JSON line, the validation perplexity after each round (the 10 % of the training pairs held out;
``--random-state`` also changes which pairs those are, so compare models at the same seed).

``--fusion-step C`` writes the fusion projection (§3.3) as ``I + C G`` and trains ``G`` from 0: the
same model and starting point, with Adam steps of the projection ``C`` times larger.

Usage::

    python -m benchmarks.translation_updates 1111               # Duo: the four flags on
    python -m benchmarks.translation_updates 0000               # the Transformer
    python -m benchmarks.translation_updates 1111 --fusion-step 4
"""

import argparse
import itertools
import json
import os
import time

import torch
from torch.nn.utils import parametrize

from sklearn_lama import DuoTranslator
from sklearn_lama.datasets import load_gettext
from sklearn_lama.training._callbacks import EpochCut

from .translation import FLAGS, SIZES


class _FromIdentity(torch.nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, g):
        return torch.eye(g.shape[0], device=g.device) + self.scale * g

    def right_inverse(self, weight):
        return (weight - torch.eye(weight.shape[0], device=weight.device)) / self.scale


class _Rounds(EpochCut):
    """Ends every training "epoch" after ``updates`` batches: rounds of updates."""

    def __init__(self, updates):
        self.updates = updates

    def ends_epoch(self, net):
        return len(net.history[-1, "batches"]) >= self.updates


class _FusionStep(DuoTranslator):
    """A translator whose fusion projection is ``I + fusion_step G``, ``G`` trained from 0."""

    fusion_step = 1.0

    def _build_module(self, src_vocab, tables):
        module = super()._build_module(src_vocab, tables)
        if module.fusion is not None and self.fusion_step != 1.0:
            parametrize.register_parametrization(module, "fusion", _FromIdentity(self.fusion_step))
        return module


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("flags", help="meta_embeddings, weight_sharing, duo_norm, fusion as 0/1")
    parser.add_argument("--updates", type=int, default=100, help="updates per round")
    parser.add_argument("--evals", type=int, default=4, help="rounds")
    parser.add_argument("--fusion-step", type=float, default=1.0)
    parser.add_argument("--random-state", type=int, default=0)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    flags = {flag: bit == "1" for flag, bit in zip(FLAGS, args.flags)}
    bunch = load_gettext("fr")
    model = _FusionStep(
        **SIZES["full"]["model"],
        **flags,
        max_epochs=args.evals,
        # Validation after every round, no early stop.
        patience=args.evals,
        random_state=args.random_state,
        callbacks=[_Rounds(args.updates)],
    )
    model.fusion_step = args.fusion_step
    load, start = os.getloadavg()[0], time.perf_counter()
    model.fit(bunch.data, bunch.target)
    result = {
        "flags": flags,
        "fusion_step": args.fusion_step,
        "random_state": args.random_state,
        "n_parameters": model.n_parameters_,
        "updates": list(itertools.accumulate(model.history_[:, "train_batch_count"])),
        "valid_perplexity": [round(h["valid_perplexity"], 2) for h in model.history_],
        "seconds": [round(h["seconds"], 1) for h in model.history_],
        "wall_s": round(time.perf_counter() - start, 1),
        "load_start": round(load, 2),
        "load_end": round(os.getloadavg()[0], 2),
    }
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
