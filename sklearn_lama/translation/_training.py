"""One fit of :class:`DuoTranslator`, as a :class:`~..training._driver.Recipe` of the driver."""

import numpy as np
from skorch.callbacks import EarlyStopping

from ..text._sequences import TokenSequences
from ..training._batching import PairBatches
from ..training._driver import Recipe, TrainingData
from ..training._net import training_state
from ..training._seq2seq import schedule_callback
from ..training._splits import RowSplit
from ..utils._persistence import save_weights
from ._subwords import BOS_ID, EOS_ID, normalize_spaces, protect_placeholders

__all__ = ["TranslatorTraining"]


class TranslatorTraining(Recipe):
    """The steps of one :meth:`DuoTranslator.fit` that are the translator's own.

    Parameters
    ----------
    translator : DuoTranslator
        The estimator being fitted; it receives its fitted attributes.
    X, y
        As given to ``fit``.
    resume : bool
        Continue from the fitted net (``warm_start``).
    """

    def __init__(self, translator, X, y, resume):
        self.translator = translator
        self.X, self.y = X, y
        self.resume = resume

    def prepare(self, seed):
        tr = self.translator
        X = tr._check_X(self.X, fitted=self.resume)
        y = tr._check_pairs(X, self.y)
        train, valid = tr._hold_out(len(y), seed)
        sources, slots = tr._sources(X)
        targets = [normalize_spaces(t) for t in y]
        if slots is not None:
            targets = [protect_placeholders(t, s)[0] for t, s in zip(targets, slots)]
        previous = None
        if self.resume:
            previous = training_state(tr.net_)
        else:
            tr._learn_subwords(X, [sources[i] for i in train], [targets[i] for i in train])
        src_ids = sources if slots is None else tr.source_subwords_.encode(sources)
        tgt_ids = tr.target_subwords_.encode(targets)
        pairs = PairBatches(src_ids, [np.concatenate([[BOS_ID], t, [EOS_ID]]) for t in tgt_ids])
        split = None
        if valid is not None:
            # Validation batches of similar lengths: little padding.
            split = RowSplit(train, valid[np.argsort(pairs.lengths[valid], kind="stable")])
        self.tables = X.tables if isinstance(X, TokenSequences) else None
        self.src_vocab = X.vocabulary_size if self.tables is not None else None
        self.src_ids, self.tgt_ids, self.train_rows = src_ids, tgt_ids, train
        return TrainingData(pairs, None, split, (*_data_arrays(X), *_data_arrays(y)), previous)

    def build_module(self, data, seed):
        tr = self.translator
        if self.resume:
            # Only the shapes matter: the trained weights are restored later.
            module = tr._build_module(tr.module_.src_embeddings[0].num_embeddings, self.tables)
            return module, 0.0
        src_vocab = len(tr.source_subwords_) if self.tables is None else self.src_vocab
        module = tr._build_module(src_vocab, self.tables)
        return module, tr._start_embeddings(
            module, self.src_ids, self.tgt_ids, self.train_rows, seed
        )

    def callbacks(self, data):
        steps = 0 if data.previous is None else _updates(data.previous["history"])
        return [schedule_callback(self.translator.warmup_steps, steps)]

    def make_net(self, module, config, split, callbacks, device):
        return self.translator._make_net(module, config, split, callbacks, device)

    def save(self, path):
        save_weights(self.translator, path)

    def started(self, net, checkpoint_path):
        tr = self.translator
        tr.checkpoint_path_ = checkpoint_path
        # Set before training so that checkpoints and callbacks see the net in training.
        tr.net_ = net
        tr.best_epoch_ = None
        tr.n_parameters_ = sum(p.numel() for p in net.module_.parameters())

    def finish(self, net, data):
        self.translator.best_epoch_ = _kept_epoch(net)

    def interruption(self, net, data):
        return (
            f"DuoTranslator.fit was interrupted (KeyboardInterrupt) during epoch "
            f"{len(net.history)}; the translator is usable and keeps the weights of epoch "
            f"{self.translator.best_epoch_}; fit with warm_start=True continues from there."
        )


def _data_arrays(data):
    """Arrays holding ``data`` (a list of strings or a TokenSequences), for the fit's key."""
    if isinstance(data, TokenSequences):
        return data.ids, data.offsets
    lengths = np.array([len(text) for text in data], dtype=np.int64)
    text = "".join(data).encode("utf-8", "surrogatepass")
    return lengths, np.frombuffer(text, dtype=np.uint8)


def _updates(history):
    """Training batches (updates) recorded in a net's history."""
    return sum(1 for epoch in history for batch in epoch["batches"] if "train_loss" in batch)


def _kept_epoch(net):
    """The epoch whose weights ``net`` holds after training: early stopping's best, or the last."""
    for _, callback in net.callbacks_:
        if isinstance(callback, EarlyStopping) and callback.best_epoch_:
            return int(callback.best_epoch_)
    return int(net.history[-1, "epoch"])
