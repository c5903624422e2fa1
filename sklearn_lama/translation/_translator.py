"""DuoTranslator: the Duo Transformer sequence-to-sequence model as a scikit-learn estimator."""

import copy
import math
import sys
import time
from numbers import Integral, Real
from typing import ClassVar

import numpy as np
import torch
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from ..modules import DuoTranslationModule
from ..text._sequences import TokenSequences
from ..training._batching import BucketBatchSampler, batch_ends
from ..utils._persistence import register
from ..utils._sklearn_compat import Interval, StrOptions
from ._decoding import beam_search, greedy_search
from ._subword_vectors import start_from_word2vec
from ._subwords import (
    BOS_ID,
    EOS_ID,
    PAD_ID,
    SubwordModel,
    normalize_spaces,
    optional_import,
    protect_placeholders,
    restore_placeholders,
)

__all__ = ["DuoTranslator"]


def _pad(rows, prefix=None, suffix=None):
    """Dense ``(B, T)`` int64 padded with 0 from a list of id arrays, with optional BOS/EOS."""
    extra = (prefix is not None) + (suffix is not None)
    width = max(max((len(r) for r in rows), default=0) + extra, 1)
    out = np.zeros((len(rows), width), dtype=np.int64)
    for i, row in enumerate(rows):
        full = (
            ([prefix] if prefix is not None else [])
            + list(row)
            + ([suffix] if suffix is not None else [])
        )
        out[i, : len(full)] = full
    return torch.from_numpy(out)


@register
class DuoTranslator(BaseEstimator):
    """Duo Transformer translator (meta-embedding encoder-decoder) for lists of sentences.

    An encoder-decoder Transformer whose tokens are read through two embedding
    streams on both sides: Duo attention (Eq. 4-5) in the encoder, a Duo
    decoder whose cross-attention takes keys and values from different
    streams (§3.3), the Duo layer norm (Eq. 6) between the decoder's masked
    attention and its feed-forward (§3.4), and an output layer tied to the
    target duo embeddings through a learned projection (fusion, §3.3). Each
    change is a flag; with all four off the model is the vanilla Transformer
    of the same width, the paper's baseline. See
    :class:`~sklearn_lama.modules.DuoTranslationModule`.

    ``X`` is a list of source sentences, or the output of a
    :class:`~sklearn_lama.MetaEmbeddingTransformer` (the source streams then
    start from its first two tables, each followed by a learned projection to
    ``d_model``, as the paper maps GloVe 300d to 512). ``y`` is a list of
    target sentences. Source strings and targets are segmented into
    byte-pair-encoded subwords learned in ``fit`` (SentencePiece, offline;
    unseen characters fall back to bytes, so the vocabulary is open); white
    space is normalised to single spaces. Format placeholders (``%s``,
    ``%(name)s``, ``%1$d``, ``{name}``, ``%1``) of a source string become
    atomic tokens that the translation carries back unchanged (only with
    string input: a :class:`TokenSequences` no longer holds them).

    Training: teacher forcing, cross-entropy with label smoothing, Adam
    (β = 0.9, 0.98, ε = 1e-9) with the Transformer schedule (linear warm-up,
    then inverse square root of the step), batches of similar-length pairs
    within ``max_tokens`` padded tokens, early stopping on the validation
    loss (the best epoch's weights are kept). Decoding: greedy
    (``beam_size=1``) or beam search with the GNMT length penalty; sentences
    are decoded in groups of equal source length, so no sentence is ever
    padded and a translation does not depend on the other sentences given.

    Parameters
    ----------
    d_model : int, default=256
        Width of each embedding stream and of every layer.
    n_heads : int, default=4
        Attention heads; must divide ``d_model``.
    d_ff : int, default=1024
        Feed-forward width.
    n_layers : int, default=3
        Encoder layers and decoder layers (each).
    dropout : float, default=0.1
    meta_embeddings, weight_sharing, duo_norm, fusion : bool, default=True
        The Duo model's parts, in the order of the paper's ablation (Table 6).
    embedding_init : {"auto", "word2vec", "random"}, default="auto"
        How the subword embedding tables start. ``"word2vec"``: from word2vec
        vectors (gensim) learned in ``fit`` on the training pairs' subwords,
        one model per stream and side: CBOW for the first stream, skip-gram
        for the second. The two streams are then two separately trained
        embeddings of the same tokens, as the paper's meta-embeddings are
        (it pairs pretrained GloVe tables); from two random tables they
        differ only by their random start. ``"random"``: normal, as in the
        vanilla Transformer. ``"auto"``: ``"word2vec"`` with
        ``meta_embeddings``, else ``"random"``, so that all flags off is the
        vanilla Transformer. The vectors are rescaled to a quarter of the
        spread of the random start; their training time counts in
        ``max_time``. A source read from a
        :class:`~sklearn_lama.MetaEmbeddingTransformer` keeps its tables.
    vocab_size : int, default=8000
        Subwords per side (a soft limit: fewer on a small corpus).
    label_smoothing : float, default=0.1
    learning_rate : float, default=1e-3
        Peak learning rate, reached at the end of the warm-up.
    warmup_steps : int, default=1000
    max_tokens : int, default=4096
        Padded tokens (sentences x longest of source and target) per
        training batch.
    max_epochs : int, default=30
    max_time : float or None, default=None
        Training budget in seconds (word2vec starting vectors and validation
        included, ``epoch_callback`` excluded), checked after every batch.
    n_iter_no_change : int or None, default=3
        Stop after this many epochs without a lower validation loss
        (``None``: never).
    validation_fraction : float, default=0.1
        Share of the pairs held out for the validation loss (0: none; the
        last epoch is then kept).
    beam_size : int, default=4
        1 for greedy decoding.
    length_penalty : float, default=0.6
        Exponent of the GNMT length penalty in beam search.
    max_length : int or None, default=None
        Most target subwords per translation; ``None``: twice the source
        length plus 10.
    device : str, default="cpu"
    random_state : int, RandomState or None, default=None
        Seeds the split, the initialisation, dropout and batch order.
    verbose : int, default=0
        1: one line per epoch on stderr.
    epoch_callback : callable or None, default=None
        ``epoch_callback(translator, record)`` after every epoch, e.g. to
        measure BLEU per epoch; its time does not count in ``max_time``.

    Attributes
    ----------
    module_ : DuoTranslationModule
    source_subwords_, target_subwords_ : SubwordModel
        ``source_subwords_`` is ``None`` when ``X`` was a :class:`TokenSequences`.
    history_ : list of dict
        Per epoch: ``epoch``, ``train_loss`` (label-smoothed),
        ``valid_loss``, ``valid_perplexity`` (unsmoothed, per target token),
        ``steps``, ``seconds`` (training time so far).
    best_epoch_ : int
    n_parameters_ : int

    References
    ----------
    .. [1] Li, Q., Jiang, X., Xia, J., Li, J. "Meta-embeddings based on
       self-attention", 2022.
    .. [2] Vaswani, A. et al. "Attention is all you need", NeurIPS 2017.

    Examples
    --------
    >>> from sklearn_lama import DuoTranslator
    >>> en = ["open the file", "close the file", "open the window", "close the window"] * 8
    >>> fr = ["ouvrir le fichier", "fermer le fichier", "ouvrir la fenêtre",
    ...       "fermer la fenêtre"] * 8
    >>> mt = DuoTranslator(d_model=32, n_heads=2, d_ff=64, n_layers=1, vocab_size=400,
    ...                    max_epochs=3, validation_fraction=0, random_state=0).fit(en, fr)
    >>> mt.predict(["open the file"]).shape
    (1,)
    """

    _parameter_constraints: ClassVar[dict] = {
        "d_model": [Interval(Integral, 1, None, closed="left")],
        "n_heads": [Interval(Integral, 1, None, closed="left")],
        "d_ff": [Interval(Integral, 1, None, closed="left")],
        "n_layers": [Interval(Integral, 0, None, closed="left")],
        "dropout": [Interval(Real, 0, 1, closed="left")],
        "meta_embeddings": ["boolean"],
        "weight_sharing": ["boolean"],
        "duo_norm": ["boolean"],
        "fusion": ["boolean"],
        "embedding_init": [StrOptions({"auto", "word2vec", "random"})],
        "vocab_size": [Interval(Integral, 300, None, closed="left")],
        "label_smoothing": [Interval(Real, 0, 1, closed="left")],
        "learning_rate": [Interval(Real, 0, None, closed="neither")],
        "warmup_steps": [Interval(Integral, 1, None, closed="left")],
        "max_tokens": [Interval(Integral, 1, None, closed="left")],
        "max_epochs": [Interval(Integral, 1, None, closed="left")],
        "max_time": [Interval(Real, 0, None, closed="neither"), None],
        "n_iter_no_change": [Interval(Integral, 1, None, closed="left"), None],
        "validation_fraction": [Interval(Real, 0, 1, closed="left")],
        "beam_size": [Interval(Integral, 1, None, closed="left")],
        "length_penalty": [Interval(Real, 0, None, closed="left")],
        "max_length": [Interval(Integral, 1, None, closed="left"), None],
        "device": [str],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
        "epoch_callback": [callable, None],
    }

    def __init__(
        self,
        *,
        d_model=256,
        n_heads=4,
        d_ff=1024,
        n_layers=3,
        dropout=0.1,
        meta_embeddings=True,
        weight_sharing=True,
        duo_norm=True,
        fusion=True,
        embedding_init="auto",
        vocab_size=8000,
        label_smoothing=0.1,
        learning_rate=1e-3,
        warmup_steps=1000,
        max_tokens=4096,
        max_epochs=30,
        max_time=None,
        n_iter_no_change=3,
        validation_fraction=0.1,
        beam_size=4,
        length_penalty=0.6,
        max_length=None,
        device="cpu",
        random_state=None,
        verbose=0,
        epoch_callback=None,
    ):
        self.d_model = d_model
        self.n_heads = n_heads
        self.d_ff = d_ff
        self.n_layers = n_layers
        self.dropout = dropout
        self.meta_embeddings = meta_embeddings
        self.weight_sharing = weight_sharing
        self.duo_norm = duo_norm
        self.fusion = fusion
        self.embedding_init = embedding_init
        self.vocab_size = vocab_size
        self.label_smoothing = label_smoothing
        self.learning_rate = learning_rate
        self.warmup_steps = warmup_steps
        self.max_tokens = max_tokens
        self.max_epochs = max_epochs
        self.max_time = max_time
        self.n_iter_no_change = n_iter_no_change
        self.validation_fraction = validation_fraction
        self.beam_size = beam_size
        self.length_penalty = length_penalty
        self.max_length = max_length
        self.device = device
        self.random_state = random_state
        self.verbose = verbose
        self.epoch_callback = epoch_callback

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False
        tags.input_tags.string = True
        tags.target_tags.required = True
        tags.non_deterministic = self.device != "cpu"
        return tags

    # ----------------------------------------------------------------------- input checks
    @staticmethod
    def _check_strings(values, name):
        if isinstance(values, str) or not hasattr(values, "__len__"):
            raise TypeError(f"{name} must be a list of strings, got {type(values).__name__}.")
        values = list(values)
        for i, value in enumerate(values):
            if not isinstance(value, str):
                raise TypeError(
                    f"{name}[{i}] is {value!r} ({type(value).__name__}); {name} must "
                    "hold strings only."
                )
        return values

    def _check_X(self, X, fitting):
        if isinstance(X, TokenSequences):
            if not fitting:
                if self.source_subwords_ is not None:
                    raise TypeError(
                        "X is a TokenSequences but this translator was fitted on "
                        "strings; pass strings."
                    )
                if X.vocabulary_id != self.vocabulary_id_:
                    raise ValueError(
                        "X was built over another vocabulary than the one seen in "
                        "fit; use the same MetaEmbeddingTransformer."
                    )
            return X
        X = self._check_strings(X, "X")
        if not fitting and self.source_subwords_ is None:
            raise TypeError(
                "this translator was fitted on TokenSequences (e.g. from a "
                "MetaEmbeddingTransformer); pass the same kind of input."
            )
        return X

    def _sources(self, X):
        """Source subword ids and, for strings, each sentence's placeholders."""
        if isinstance(X, TokenSequences):
            return [X.document(i).astype(np.int64) for i in range(len(X))], None
        masked, slots = (
            zip(*(protect_placeholders(normalize_spaces(x)) for x in X)) if X else ((), ())
        )
        return masked, list(slots)

    # ----------------------------------------------------------------------- fit
    def fit(self, X, y):
        """Learn subwords, then train the model on the pairs ``(X[i], y[i])``.

        Parameters
        ----------
        X : list of str, or TokenSequences
            Source sentences.
        y : list of str
            Their translations.

        Returns
        -------
        self : DuoTranslator
        """
        self._validate_params()
        X = self._check_X(X, fitting=True)
        y = self._check_strings(y, "y")
        if len(X) != len(y):
            raise ValueError(f"X and y must have the same length, got {len(X)} and {len(y)}.")
        if not len(y):
            raise ValueError("X and y are empty: fit needs at least one sentence pair.")
        if self.d_model % self.n_heads:
            raise ValueError(f"n_heads={self.n_heads} must divide d_model={self.d_model}.")
        rng = np.random.RandomState(
            self.random_state
            if not isinstance(self.random_state, np.random.RandomState)
            else self.random_state.randint(2**31 - 1)
        )
        seed = int(rng.randint(2**31 - 1))

        sources, slots = self._sources(X)
        targets = [normalize_spaces(t) for t in y]
        if slots is not None:
            targets = [protect_placeholders(t, s)[0] for t, s in zip(targets, slots)]
        n = len(targets)
        n_valid = round(self.validation_fraction * n) if n > 1 else 0
        order = rng.permutation(n)
        train, valid = np.sort(order[n_valid:]), np.sort(order[:n_valid])
        vectors_seed = int(rng.randint(2**31 - 2))

        if isinstance(X, TokenSequences):
            self.source_subwords_ = None
            self.vocabulary_id_ = X.vocabulary_id
            src_ids, src_vocab, tables = sources, X.vocabulary_size, X.tables
        else:
            self.source_subwords_ = SubwordModel([sources[i] for i in train], self.vocab_size)
            self.vocabulary_id_ = None
            src_ids, src_vocab, tables = (
                self.source_subwords_.encode(sources),
                len(self.source_subwords_),
                None,
            )
        self.target_subwords_ = SubwordModel([targets[i] for i in train], self.vocab_size)
        tgt_ids = self.target_subwords_.encode(targets)

        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            self.module_ = self._build_module(src_vocab, tables).to(self.device)
            self.n_parameters_ = sum(p.numel() for p in self.module_.parameters())
            spent = 0.0
            if self._word2vec_init():
                start = time.perf_counter()
                sides = [(self.module_.tgt_embeddings, tgt_ids)]
                if self.source_subwords_ is not None:
                    sides.append((self.module_.src_embeddings, src_ids))
                # A quarter of the random start's spread. English -> French, 128 wide, same seeds,
                # validation perplexity after one epoch: 29.8 at the full spread, 22.2 at half,
                # 20.5 at a quarter (Translation page).
                for embeddings, ids in sides:
                    start_from_word2vec(
                        embeddings,
                        [ids[i] for i in train],
                        0.25 * self.d_model**-0.5,
                        vectors_seed,
                    )
                spent = time.perf_counter() - start
            self._train(
                [src_ids[i] for i in train],
                [tgt_ids[i] for i in train],
                [src_ids[i] for i in valid],
                [tgt_ids[i] for i in valid],
                spent,
            )
        return self

    def _word2vec_init(self):
        if self.embedding_init == "auto":
            return self.meta_embeddings
        return self.embedding_init == "word2vec"

    def _batches(self, src, tgt, shuffle):
        lengths = np.array([max(len(s), len(t) + 1) for s, t in zip(src, tgt)])
        if shuffle:
            # One pool of max_tokens sentences at a time is sorted by length: similar lengths
            # share a batch, and batch order and content still change every epoch.
            sampler = BucketBatchSampler(
                lengths, self.max_tokens, pool_batches=1, max_tokens=self.max_tokens
            )
            yield from sampler
            return
        order = np.argsort(lengths, kind="stable")
        ends = batch_ends(lengths[order], self.max_tokens, self.max_tokens)
        yield from np.split(order, ends[:-1])

    def _loss(self, src, tgt, smoothing):
        src_b = _pad(src).to(self.device)
        tgt_in = _pad(tgt, prefix=BOS_ID).to(self.device)
        tgt_out = _pad(tgt, suffix=EOS_ID).to(self.device)
        logits = self.module_(src_b, tgt_in)
        loss = torch.nn.functional.cross_entropy(
            logits.reshape(-1, logits.shape[-1]),
            tgt_out.reshape(-1),
            ignore_index=PAD_ID,
            label_smoothing=smoothing,
            reduction="sum",
        )
        return loss, int((tgt_out != PAD_ID).sum())

    @torch.no_grad()
    def _validation_loss(self, src, tgt):
        self.module_.eval()
        total, count = 0.0, 0
        for index in self._batches(src, tgt, shuffle=False):
            loss, tokens = self._loss([src[i] for i in index], [tgt[i] for i in index], 0.0)
            total, count = total + loss.item(), count + tokens
        return total / max(count, 1)

    def _train(self, src, tgt, valid_src, valid_tgt, spent):
        module = self.module_
        optimizer = torch.optim.Adam(
            module.parameters(), lr=self.learning_rate, betas=(0.9, 0.98), eps=1e-9
        )
        warmup = self.warmup_steps
        schedule = torch.optim.lr_scheduler.LambdaLR(
            optimizer, lambda step: min((step + 1) / warmup, math.sqrt(warmup / (step + 1)))
        )
        self.history_, best_loss, best_state, stale, step = [], math.inf, None, 0, 0
        out_of_time = False
        for epoch in range(1, self.max_epochs + 1):
            start = time.perf_counter()
            module.train()
            total, count = 0.0, 0
            for index in self._batches(src, tgt, shuffle=True):
                loss, tokens = self._loss(
                    [src[i] for i in index], [tgt[i] for i in index], self.label_smoothing
                )
                optimizer.zero_grad()
                (loss / tokens).backward()
                optimizer.step()
                schedule.step()
                step += 1
                total, count = total + loss.item(), count + tokens
                if (
                    self.max_time is not None
                    and spent + time.perf_counter() - start > self.max_time
                ):
                    out_of_time = True
                    break
            record = {"epoch": epoch, "train_loss": total / max(count, 1), "steps": step}
            if valid_src:
                record["valid_loss"] = self._validation_loss(valid_src, valid_tgt)
                record["valid_perplexity"] = math.exp(min(record["valid_loss"], 50.0))
            spent += time.perf_counter() - start
            record["seconds"] = spent
            self.history_.append(record)
            improved = valid_src and record["valid_loss"] < best_loss
            if improved:
                best_loss, best_state, stale = (
                    record["valid_loss"],
                    copy.deepcopy(module.state_dict()),
                    0,
                )
                self.best_epoch_ = epoch
            else:
                stale += 1
            if self.verbose:
                extra = (
                    f"  valid loss {record['valid_loss']:.3f}"
                    f"  ppl {record['valid_perplexity']:.2f}"
                    if valid_src
                    else ""
                )
                print(
                    f"epoch {epoch:3d}  train loss {record['train_loss']:.3f}{extra}  "
                    f"{spent:.0f} s",
                    file=sys.stderr,
                    flush=True,
                )
            if self.epoch_callback is not None:
                self.epoch_callback(self, dict(record))
            if out_of_time or (
                valid_src and self.n_iter_no_change is not None and stale >= self.n_iter_no_change
            ):
                break
        if best_state is not None:
            module.load_state_dict(best_state)
        else:
            self.best_epoch_ = self.history_[-1]["epoch"]
        module.eval()

    # ----------------------------------------------------------------------- predict
    def predict(self, X):
        """Translate.

        Parameters
        ----------
        X : list of str, or TokenSequences
            Source sentences, of the kind seen in ``fit``.

        Returns
        -------
        ndarray of str (dtype object), shape (n_sentences,)
        """
        check_is_fitted(self, "module_")
        X = self._check_X(X, fitting=False)
        sources, slots = self._sources(X)
        src_ids = sources if slots is None else self.source_subwords_.encode(sources)
        module = self.module_.eval()
        lengths = np.array([len(s) for s in src_ids])
        out = [None] * len(src_ids)
        rows_per_sentence = self.beam_size
        for length in np.unique(lengths):
            group = np.flatnonzero(lengths == length)
            limit = self.max_length or 2 * int(length) + 10
            width = max(int(length), limit)
            # Memory grows with sentences x beams x (source + target length).
            per_batch = max(1, self.max_tokens // (rows_per_sentence * width))
            for start in range(0, len(group), per_batch):
                index = group[start : start + per_batch]
                src = _pad([src_ids[i] for i in index]).to(self.device)
                if self.beam_size == 1:
                    ids = greedy_search(module, src, limit)
                else:
                    ids = beam_search(module, src, limit, self.beam_size, self.length_penalty)
                for i, row in zip(index, ids):
                    out[i] = row
        texts = self.target_subwords_.decode(out) if out else []
        if slots is not None:
            texts = [restore_placeholders(t, s) for t, s in zip(texts, slots)]
        else:
            texts = [normalize_spaces(t) for t in texts]
        return np.array(texts, dtype=object)

    def score(self, X, y):
        """Corpus BLEU (sacrebleu, default 13a tokenisation) of ``predict(X)`` against ``y``.

        Parameters
        ----------
        X : list of str, or TokenSequences
        y : list of str
            One reference translation per sentence.

        Returns
        -------
        float
            BLEU in [0, 100]; higher is better.
        """
        y = self._check_strings(y, "y")
        hypotheses = list(self.predict(X))
        if len(hypotheses) != len(y):
            raise ValueError(
                f"X and y must have the same length, got {len(hypotheses)} and {len(y)}."
            )
        return float(optional_import("sacrebleu").corpus_bleu(hypotheses, [y]).score)

    # ----------------------------------------------------------------------- persistence
    def _export_state(self):
        """The fitted state for :func:`~sklearn_lama.save_weights`: plain values and arrays."""
        state = {
            "module": {k: v.detach().cpu() for k, v in self.module_.state_dict().items()},
            "target_subwords": np.frombuffer(self.target_subwords_.proto, dtype=np.uint8).copy(),
            "source_subwords": None
            if self.source_subwords_ is None
            else np.frombuffer(self.source_subwords_.proto, dtype=np.uint8).copy(),
            "vocabulary_id": self.vocabulary_id_,
            "history": [dict(r) for r in self.history_],
            "best_epoch": int(self.best_epoch_),
            "n_parameters": int(self.n_parameters_),
        }
        return state

    def _build_module(self, src_vocab, tables):
        """The network of the current parameters, for ``src_vocab`` source ids."""
        return DuoTranslationModule(
            src_vocab,
            len(self.target_subwords_),
            d_model=self.d_model,
            n_heads=self.n_heads,
            d_ff=self.d_ff,
            n_layers=self.n_layers,
            dropout=self.dropout,
            meta_embeddings=self.meta_embeddings,
            weight_sharing=self.weight_sharing,
            duo_norm=self.duo_norm,
            fusion=self.fusion,
            src_tables=tables,
        )

    def _import_state(self, state):
        """Become the fitted translator that :meth:`_export_state` described."""

        def proto(value):
            return bytes(np.asarray(value, dtype=np.uint8).tobytes())

        self.target_subwords_ = SubwordModel.from_proto(proto(state["target_subwords"]))
        self.source_subwords_ = (
            None
            if state["source_subwords"] is None
            else SubwordModel.from_proto(proto(state["source_subwords"]))
        )
        self.vocabulary_id_ = state["vocabulary_id"]
        weights = {k: torch.as_tensor(np.asarray(v)) for k, v in state["module"].items()}
        src_vocab = weights["src_embeddings.0.weight"].shape[0]
        tables = None
        if self.source_subwords_ is None:
            tables = [
                weights[f"src_embeddings.{i}.weight"]
                for i in range(2 if self.meta_embeddings else 1)
            ]
        self.module_ = self._build_module(src_vocab, tables)
        self.module_.load_state_dict(weights)
        self.module_.to(self.device).eval()
        self.history_ = [dict(r) for r in state["history"]]
        self.best_epoch_ = int(state["best_epoch"])
        self.n_parameters_ = int(state["n_parameters"])
