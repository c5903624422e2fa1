"""The network every estimator trains: embedding lookup, mask, then a model core."""

import torch
from torch import nn

__all__ = ["SequenceNetwork"]


class SequenceNetwork(nn.Module):
    """Embed a padded batch, build its mask and apply a classifier core.

    Parameters
    ----------
    core : nn.Module
        Called as ``core(inputs, mask)``; returns logits, or ``(logits, penalty)``
        when it adds a term to the loss.
    tables : sequence of Tensor of shape (V, d_i), default=None
        Embedding tables that initialise one lookup each (row 0 is padding).
    vocabulary_size, embedding_dim : int, default=None
        Without ``tables``: one randomly initialised lookup of this shape. With
        neither, the batches carry vectors already (``x``) and nothing is looked up.
    freeze : bool, default=False
        Keep the tables fixed instead of fine-tuning them.
    combine : {"concat", "tuple"}, default="concat"
        ``"concat"`` joins the tables' vectors into one input; ``"tuple"`` hands
        the core one tensor per table (meta-embedding models).
    embedding_dropout : float, default=0.0
        Dropout on the embedded token vectors while training, each table's
        vectors separately. Vectors fine-tuned on a few thousand documents
        otherwise memorise the training set within two or three epochs.
    """

    def __init__(
        self,
        core,
        tables=None,
        vocabulary_size=None,
        embedding_dim=None,
        freeze=False,
        combine="concat",
        embedding_dropout=0.0,
    ):
        super().__init__()
        if tables is not None:
            lookups = [
                nn.Embedding.from_pretrained(t, freeze=freeze, padding_idx=0) for t in tables
            ]
        elif vocabulary_size is not None:
            lookup = nn.Embedding(vocabulary_size, embedding_dim, padding_idx=0)
            lookup.weight.requires_grad_(not freeze)
            lookups = [lookup]
        else:
            lookups = []
        self.lookups = nn.ModuleList(lookups)
        self.core = core
        self.combine = combine
        self.embedding_dropout = nn.Dropout(embedding_dropout)

    def embed(self, lengths, ids=None, x=None):
        """Return the core's inputs and the (B, T) mask, True on real tokens."""
        if ids is not None:
            vectors = [lookup(ids) for lookup in self.lookups]
            length = ids.shape[1]
        else:
            vectors = [x]
            length = x.shape[1]
        vectors = [self.embedding_dropout(v) for v in vectors]
        mask = torch.arange(length, device=lengths.device) < lengths.unsqueeze(1)
        if self.combine == "concat":
            inputs = vectors[0] if len(vectors) == 1 else torch.cat(vectors, dim=-1)
        else:
            inputs = tuple(vectors)
        return inputs, mask

    def forward(self, lengths, ids=None, x=None):
        inputs, mask = self.embed(lengths, ids=ids, x=x)
        out = self.core(inputs, mask)
        if isinstance(out, tuple):
            return out
        return out, out.new_zeros(())
