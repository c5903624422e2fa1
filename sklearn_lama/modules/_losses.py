"""Per-element losses of the multi-label and multi-task outputs."""

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["LabelwiseBCE", "TaskwiseCrossEntropy"]


class LabelwiseBCE(nn.Module):
    """Binary cross-entropy of each label's logit, one loss per document and label.

    ``forward(logits, targets)`` takes ``(B, L)`` logits and a ``(B, L)``
    indicator matrix (any numeric dtype) and returns the ``(B, L)`` losses
    ``-y log sigmoid(z) - (1 - y) log(1 - sigmoid(z))``, unreduced.

    Examples
    --------
    >>> import torch
    >>> from sklearn_lama.modules import LabelwiseBCE
    >>> LabelwiseBCE()(torch.zeros(1, 2), torch.tensor([[1, 0]])).shape
    torch.Size([1, 2])
    """

    def forward(self, logits, targets):
        return F.binary_cross_entropy_with_logits(
            logits, targets.to(logits.dtype), reduction="none"
        )


class TaskwiseCrossEntropy(nn.Module):
    """Cross-entropy of each task's block of logits, one loss per document and task.

    Parameters
    ----------
    sizes : sequence of int
        Number of classes of each task; the logits hold the tasks' blocks
        side by side, ``sum(sizes)`` columns.

    ``forward(logits, targets)`` takes ``(B, sum(sizes))`` logits and
    ``(B, n_tasks)`` class indices, ``-1`` where a document has no label for
    a task, and returns the ``(B, n_tasks)`` losses, 0 at missing labels.

    Examples
    --------
    >>> import torch
    >>> from sklearn_lama.modules import TaskwiseCrossEntropy
    >>> loss = TaskwiseCrossEntropy([2, 3])
    >>> loss(torch.zeros(1, 5), torch.tensor([[1, -1]]))
    tensor([[0.6931, 0.0000]])
    """

    def __init__(self, sizes):
        super().__init__()
        self.sizes = [int(n) for n in sizes]

    def forward(self, logits, targets):
        blocks = torch.split(logits, self.sizes, dim=-1)
        losses = [
            F.cross_entropy(block, targets[:, k].long(), ignore_index=-1, reduction="none")
            for k, block in enumerate(blocks)
        ]
        return torch.stack(losses, dim=-1)
