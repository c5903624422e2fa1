"""Greedy and beam-search decoding of a :class:`~sklearn_lama.modules.DuoTranslationModule`.

Every sentence of a batch is decoded on rows of its own: nothing of one sentence enters another's
computation, and sentences that finished early keep their result while the others go on.
"""

import numpy as np
import torch

from ..text._sequences import PAD_ID
from ._subwords import BOS_ID, EOS_ID

__all__ = ["beam_search", "greedy_search"]


def _next_log_probs(module, tokens, memory, memory_mask):
    logits = module.decode(tokens, memory, memory_mask, last_only=True)[:, -1].float()
    # Padding and BOS are never outputs; blocking them keeps them out of every hypothesis.
    logits[:, PAD_ID] = float("-inf")
    logits[:, BOS_ID] = float("-inf")
    return torch.log_softmax(logits, dim=-1)


def _until_eos(row):
    row = list(row)
    return row[: row.index(EOS_ID)] if EOS_ID in row else row


@torch.no_grad()
def greedy_search(module, src, max_length):
    """Most probable next token at every step.

    Parameters
    ----------
    module : DuoTranslationModule
    src : torch.Tensor of int64, shape (B, Ts)
    max_length : int
        Most target tokens per sentence (EOS included).

    Returns
    -------
    list of list of int
        Target ids of each sentence, without BOS and EOS.
    """
    memory, memory_mask = module.encode(src)
    tokens = torch.full((src.shape[0], 1), BOS_ID, dtype=torch.int64, device=src.device)
    done = torch.zeros(src.shape[0], dtype=torch.bool, device=src.device)
    for _ in range(max_length):
        best = _next_log_probs(module, tokens, memory, memory_mask).argmax(-1)
        tokens = torch.cat([tokens, best.unsqueeze(1)], dim=1)
        done |= best == EOS_ID
        if bool(done.all()):
            break
    return [_until_eos(row[1:]) for row in tokens.tolist()]


def _length_penalty(length, alpha):
    """GNMT length penalty ((5 + length) / 6) ** alpha (Wu et al., 2016), used by Vaswani et al."""
    return ((5.0 + length) / 6.0) ** alpha


@torch.no_grad()
def beam_search(module, src, max_length, beam_size=4, alpha=0.6):
    """Beam search with length-normalised scores.

    A hypothesis that ends (EOS among the ``beam_size`` best candidates) is set aside with its
    score divided by :func:`_length_penalty`; the beam goes on with the best unfinished ones. A
    sentence is done when it has ``beam_size`` ended hypotheses or no unfinished one can still beat
    its best (log-probabilities only fall, the penalty is largest at ``max_length``); at
    ``max_length`` the unfinished ones end where they are.

    Parameters
    ----------
    module : DuoTranslationModule
    src : torch.Tensor of int64, shape (B, Ts)
    max_length : int
        Most target tokens per sentence (EOS included).
    beam_size : int, default=4
    alpha : float, default=0.6
        Length-penalty exponent (0: raw log-probability).

    Returns
    -------
    list of list of int
        Best target ids of each sentence, without BOS and EOS.
    """
    n, k = src.shape[0], beam_size
    memory, memory_mask = module.encode(src)
    memory = tuple(m.repeat_interleave(k, dim=0) for m in memory)
    memory_mask = memory_mask.repeat_interleave(k, dim=0)
    tokens = torch.full((n * k, 1), BOS_ID, dtype=torch.int64, device=src.device)
    scores = torch.full((n, k), float("-inf"), device=src.device)
    scores[:, 0] = 0.0  # all beams start equal: keep one, or the first step fills the beam k times
    ended = [[] for _ in range(n)]
    done = np.zeros(n, dtype=bool)
    best_possible = _length_penalty(max_length, alpha)
    for step in range(1, max_length + 1):
        log_probs = _next_log_probs(module, tokens, memory, memory_mask)
        vocab = log_probs.shape[1]
        candidates = (scores.reshape(-1, 1) + log_probs).reshape(n, k * vocab)
        top, index = candidates.topk(min(2 * k, k * vocab), dim=1)
        beam, token = index // vocab, index % vocab
        is_eos = token == EOS_ID
        if step == max_length:
            # Whatever is unfinished ends here.
            is_eos = torch.ones_like(is_eos)
        penalty = _length_penalty(step, alpha)
        for b, j in zip(*np.nonzero(is_eos[:, :k].cpu().numpy())):
            if not done[b] and np.isfinite(float(top[b, j])):
                row = tokens[b * k + int(beam[b, j]), 1:].tolist()
                token_j = int(token[b, j])
                ended[b].append(
                    (float(top[b, j]) / penalty, row + ([] if token_j == EOS_ID else [token_j]))
                )
        if step == max_length:
            break
        next_scores, pick = top.masked_fill(is_eos, float("-inf")).topk(k, dim=1)
        rows = (
            torch.arange(n, device=src.device).unsqueeze(1) * k + beam.gather(1, pick)
        ).reshape(-1)
        tokens = torch.cat([tokens[rows], token.gather(1, pick).reshape(-1, 1)], dim=1)
        scores = next_scores
        alive_best = (scores.max(dim=1).values / best_possible).cpu().numpy()
        for b in range(n):
            if ended[b] and (len(ended[b]) >= k or max(ended[b])[0] >= alive_best[b]):
                done[b] = True
        if done.all():
            break
    return [max(hyps)[1] if hyps else [] for hyps in ended]
