"""Greedy and beam-search decoding of a :class:`~sklearn_lama.modules.DuoTranslationModule`.

Every sentence of a batch is decoded on rows of its own: nothing of one sentence enters another's
computation. Decoding is incremental (each step runs the decoder on the new token only, reading the
earlier positions' keys and values from a decoder state), and a sentence that is done leaves the
batch while the others go on, so a step costs the same products whatever the prefix's length, plus
one attention weight per earlier position.
"""

import numpy as np
import torch

from ..text._sequences import PAD_ID
from ._subwords import BOS_ID, EOS_ID

__all__ = ["beam_search", "greedy_search"]


def _next_log_probs(module, tokens, state):
    """Log-probabilities of the token after ``tokens`` ``(B, 1)``, which extend ``state``."""
    logits = module.decode_next(tokens, state)[:, -1].float()
    # Padding and BOS are never outputs; blocking them keeps them out of every hypothesis.
    logits[:, PAD_ID] = float("-inf")
    logits[:, BOS_ID] = float("-inf")
    return torch.log_softmax(logits, dim=-1)


@torch.no_grad()
def greedy_search(module, src, max_length):
    """Most probable next token at every step.

    Incremental: each step runs the decoder on the new token only
    (:meth:`~sklearn_lama.modules.DuoTranslationModule.decode_next`), and a sentence leaves the
    batch when it ends.

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
    state = module.start_decoding(memory, memory_mask)
    out = [[] for _ in range(src.shape[0])]
    rows = list(range(src.shape[0]))  # the sentence of each row still decoding
    last = torch.full((src.shape[0], 1), BOS_ID, dtype=torch.int64, device=src.device)
    for _ in range(max_length):
        best = _next_log_probs(module, last, state).argmax(-1)
        ids = best.tolist()
        going = [i for i, token in enumerate(ids) if token != EOS_ID]
        for i in going:
            out[rows[i]].append(ids[i])
        if not going:
            break
        if len(going) < len(ids):
            keep = torch.tensor(going, dtype=torch.int64, device=src.device)
            state.select(keep)
            best, rows = best[keep], [rows[i] for i in going]
        last = best.unsqueeze(1)
    return out


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
    ``max_length`` the unfinished ones end where they are. A sentence that is done leaves the
    batch; each step runs the decoder on the new tokens only
    (:meth:`~sklearn_lama.modules.DuoTranslationModule.decode_next`).

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
    device = src.device
    memory, memory_mask = module.encode(src)
    memory = tuple(m.repeat_interleave(k, dim=0) for m in memory)
    state = module.start_decoding(memory, memory_mask.repeat_interleave(k, dim=0))
    tokens = torch.full((n * k, 1), BOS_ID, dtype=torch.int64, device=device)
    scores = torch.full((n, k), float("-inf"), device=device)
    scores[:, 0] = 0.0  # all beams start equal: keep one, or the first step fills the beam k times
    ended = [[] for _ in range(n)]
    sentences = np.arange(n)  # the sentence of each group of k rows still decoding
    n_ended, best_ended = np.zeros(n, dtype=np.int64), np.full(n, -np.inf)
    best_possible = _length_penalty(max_length, alpha)
    for step in range(1, max_length + 1):
        log_probs = _next_log_probs(module, tokens[:, -1:], state)
        m, vocab = len(sentences), log_probs.shape[1]
        candidates = (scores.reshape(-1, 1) + log_probs).reshape(m, k * vocab)
        top, index = candidates.topk(min(2 * k, k * vocab), dim=1)
        beam, token = index // vocab, index % vocab
        is_eos = token == EOS_ID
        if step == max_length:
            # Whatever is unfinished ends here.
            is_eos = torch.ones_like(is_eos)
        ending = np.nonzero(is_eos[:, :k].cpu().numpy())
        if len(ending[0]):
            penalty = _length_penalty(step, alpha)
            top_, beam_, token_ = (t.cpu().numpy() for t in (top, beam, token))
            history = tokens.cpu().numpy()
            for g, j in zip(*ending):
                if np.isfinite(top_[g, j]):
                    b, token_j = sentences[g], int(token_[g, j])
                    row = history[g * k + beam_[g, j], 1:].tolist()
                    score = float(top_[g, j]) / penalty
                    ended[b].append((score, row + ([] if token_j == EOS_ID else [token_j])))
                    n_ended[b] += 1
                    best_ended[b] = max(best_ended[b], score)
        if step == max_length:
            break
        next_scores, pick = top.masked_fill(is_eos, float("-inf")).topk(k, dim=1)
        rows = (torch.arange(m, device=device).unsqueeze(1) * k + beam.gather(1, pick)).reshape(-1)
        tokens = torch.cat([tokens[rows], token.gather(1, pick).reshape(-1, 1)], dim=1)
        # The beams of a sentence share its encoder output: only the target side moves.
        state.select(rows, memory=False)
        scores = next_scores
        alive_best = (scores.max(dim=1).values / best_possible).cpu().numpy()
        done = (n_ended[sentences] > 0) & (
            (n_ended[sentences] >= k) | (best_ended[sentences] >= alive_best)
        )
        if done.all():
            break
        if done.any():
            (going,) = np.nonzero(~done)
            groups = torch.from_numpy(going).to(device)
            keep = (groups.unsqueeze(1) * k + torch.arange(k, device=device)).reshape(-1)
            state.select(keep)
            tokens, scores, sentences = tokens[keep], scores[groups], sentences[going]
    return [max(hyps)[1] if hyps else [] for hyps in ended]
