"""Training of sequence-to-sequence modules: the skorch net, its loss, scores and schedule.

The translator trains through the package's one training stack
(:mod:`._net`, :mod:`._callbacks`): the same precision, devices, callbacks, checkpoints,
early stopping and time budget as the classifiers; this module adds what a
sequence-to-sequence model needs on top (teacher forcing, a loss and
perplexity per target token, the Transformer's learning-rate schedule).
"""

import math
from functools import partial

import torch
from skorch import NeuralNet
from skorch.callbacks import Callback, LRScheduler
from torch.nn import functional as F
from torch.optim.lr_scheduler import LambdaLR

from ..text._sequences import PAD_ID
from ._batching import BatchBudget
from ._net import NetMixin, net_params
from ._parameters import Adam

__all__ = [
    "Perplexity",
    "TranslationNet",
    "make_translation_net",
    "schedule_callback",
    "transformer_schedule",
]


class Perplexity(Callback):
    """Records ``valid_perplexity``, the exponential of the epoch's ``valid_loss``.

    With a loss per target token (:class:`TranslationNet`) this is the
    perplexity per target token. Epochs without validation get none.
    """

    def on_epoch_end(self, net, **kwargs):
        record = net.history[-1]
        if "valid_loss" in record:
            # exp(50) already says "no better than chance"; higher values would overflow.
            net.history.record("valid_perplexity", math.exp(min(record["valid_loss"], 50.0)))


class TranslationNet(NetMixin, NeuralNet):
    """skorch net of a sequence-to-sequence module trained with teacher forcing.

    Batches are those of :class:`~sklearn_lama.training._batching.PairBatches`:
    ``({"src_ids": (B, Ts), "tgt_ids": (B, Tt)}, next_ids)``, the module
    returns logits ``(B, Tt, V)`` and position ``t`` is scored against
    ``next_ids[:, t]``; padding (id 0) is not scored. The loss of a batch is
    the mean cross-entropy per target token: with the criterion's label
    smoothing in training, without it in validation, so that
    ``valid_loss`` is the model's own cross-entropy. An epoch's
    ``train_loss`` and ``valid_loss`` are means over its target tokens (each
    batch weighs its number of target tokens, not of sentences), and each
    epoch with validation records ``valid_perplexity`` (:class:`Perplexity`).
    See :class:`~sklearn_lama.training._net.NetMixin` for ``precision``.
    """

    def get_default_callbacks(self):
        return [*super().get_default_callbacks(), ("valid_perplexity", Perplexity())]

    def infer(self, x, **fit_params):
        # The loss and the decoding scores are computed in float32.
        return super().infer(x, **fit_params).float()

    def get_loss(self, y_pred, y_true, X=None, training=False):
        logits = y_pred.reshape(-1, y_pred.shape[-1])
        target = y_true.to(logits.device).reshape(-1)
        if training:
            return self.criterion_(logits, target)
        return F.cross_entropy(logits, target, ignore_index=self.criterion_.ignore_index)

    def batch_weight(self, batch):
        """What the loss of ``batch`` is a mean over: its target tokens."""
        return int((batch[1] != PAD_ID).sum())

    def validation_record(self, step):
        """A validation ``step``'s loss, for the other workers; no scores read its logits."""
        return {"loss": step["loss"].detach().cpu(), "y_pred": None}

    def on_batch_end(self, net, batch=None, training=False, **kwargs):
        # The epoch's mean loss weighs each batch by this "size": its target tokens.
        prefix = "train" if training else "valid"
        self.history.record_batch(f"{prefix}_batch_size", self.batch_weight(batch))


def transformer_schedule(step, warmup_steps):
    """Learning-rate factor of update ``step + 1``: linear warm-up, then ``1 / sqrt(step)``.

    Vaswani et al.'s schedule, relative to its peak (1 at the end of the
    warm-up): ``min((step + 1) / warmup_steps, sqrt(warmup_steps / (step + 1)))``.
    """
    return min((step + 1) / warmup_steps, math.sqrt(warmup_steps / (step + 1)))


def schedule_callback(warmup_steps, steps_done=0):
    """skorch's :class:`~skorch.callbacks.LRScheduler` stepping :func:`transformer_schedule`.

    It steps after every training batch; ``steps_done`` updates already made
    (continued training) resume the schedule where it was.
    """
    return LRScheduler(
        policy=LambdaLR,
        lr_lambda=partial(transformer_schedule, warmup_steps=warmup_steps),
        step_every="batch",
        # skorch would resume a schedule at the number of epochs; this one counts updates.
        last_epoch=steps_done - 1,
    )


def make_translation_net(module, config, split, callbacks, device, *, label_smoothing):
    """The :class:`TranslationNet` that trains ``module`` with the translator's settings.

    Adam with the Transformer's ``betas=(0.9, 0.98)`` and ``eps=1e-9``, at
    ``config.lr`` (scaled by the schedule among ``callbacks``); the training
    loss smoothed by ``label_smoothing``; training batches of pairs of
    similar length, one pool of ``config.max_batch_tokens`` pairs sorted at
    a time, each batch within ``config.max_batch_tokens`` padded tokens;
    validation batches in the order of the validation set, within the same
    budget.
    """
    return TranslationNet(
        module=module,
        criterion=torch.nn.CrossEntropyLoss,
        criterion__ignore_index=PAD_ID,
        criterion__label_smoothing=label_smoothing,
        optimizer=Adam,
        optimizer__betas=(0.9, 0.98),
        optimizer__eps=1e-9,
        # Batches are bounded by their tokens; a pair has at least one.
        batch_size=config.max_batch_tokens,
        # Pools of one batch's worth of pairs: batch order and content change every epoch.
        iterator_train__pool_batches=1,
        **net_params(config, split, callbacks, device, BatchBudget(config.max_batch_tokens)),
    )
