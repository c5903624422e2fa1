"""The estimator machinery shared by every classifier of the package."""

import copy
import os
import warnings
from numbers import Integral, Real

import numpy as np
import torch
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.preprocessing import LabelEncoder
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data
from skorch import NeuralNetClassifier
from skorch.callbacks import EarlyStopping, EpochScoring, ProgressBar
from skorch.dataset import ValidSplit
from skorch.history import History
from torch.utils.data import Subset

from ._batching import SequenceBatches, make_loader
from ._sequences import TokenSequences
from .modules import SequenceNetwork

OPTIMIZERS = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam}
_INFERENCE_BATCH = 256


def _silent(*args, **kwargs):
    """A sink for skorch messages when ``verbose=0``."""


class _PenalisedNet(NeuralNetClassifier):
    """skorch classifier whose module returns ``(logits, penalty)``.

    The penalty (e.g. LAMA's disagreement term, Eq. 18) is added to the
    cross-entropy; prediction uses the logits only.
    """

    def get_loss(self, y_pred, y_true, X=None, training=False):
        logits, penalty = y_pred
        return super().get_loss(logits, y_true, X=X, training=training) + penalty

    def fit_loop(self, X, y=None, **fit_params):
        # skorch swallows KeyboardInterrupt (then restores the best weights in
        # on_train_end), and its EarlyStopping stops training by raising one.
        # Remember a user's interruption so the estimator can say so.
        self.interrupted_ = False
        try:
            return super().fit_loop(X, y, **fit_params)
        except KeyboardInterrupt:
            self.interrupted_ = not any(
                isinstance(cb, EarlyStopping) and cb.misses_ >= cb.patience
                for _, cb in self.callbacks_
            )
            raise


def _looks_like_text(X):
    if isinstance(X, (str, bytes)):
        return True
    if isinstance(X, np.ndarray):
        return X.dtype.kind in "USO" and X.size > 0 and isinstance(X.flat[0], (str, bytes))
    if isinstance(X, (list, tuple)) or hasattr(X, "iloc"):
        first = X.iloc[0] if hasattr(X, "iloc") and len(X) else (X[0] if len(X) else None)
        return isinstance(first, (str, bytes))
    return False


class BaseSequenceClassifier(ClassifierMixin, BaseEstimator):
    """Base class of the sequence classifiers; not for direct use.

    Subclasses declare their hyper-parameters in ``__init__`` and implement
    ``_build_core(input_size, n_classes)``; this class owns input validation,
    label encoding, seeding, device choice, batching and the skorch net
    (``net_``).

    Accepted inputs ``X``:

    - :class:`~sklearn_lama.TokenSequences` (from a vectorizer): the embedding
      tables initialise the model's lookups.
    - 2-D integer array ``(n, T)``: token ids, 0 is padding (dropped wherever it
      appears); embeddings of size ``embedding_dim`` are learned from scratch.
    - 2-D float array ``(n, T)``: ``T`` scalar features per document, read as a
      sequence of length ``T`` with one value per step.
    - 3-D float array ``(n, T, d)``: pre-computed token vectors.
    """

    _combine = "concat"

    _common_constraints = {
        "embedding_dim": [Interval(Integral, 1, None, closed="left")],
        "freeze_embeddings": ["boolean"],
        "max_epochs": [Interval(Integral, 1, None, closed="left")],
        "batch_size": [Interval(Integral, 1, None, closed="left")],
        "optimizer": [StrOptions(set(OPTIMIZERS))],
        "lr": [Interval(Real, 0, None, closed="neither")],
        "momentum": [Interval(Real, 0, 1, closed="left")],
        "weight_decay": [Interval(Real, 0, None, closed="left")],
        "early_stopping": ["boolean"],
        "validation_fraction": [Interval(Real, 0, 1, closed="neither")],
        "patience": [Interval(Integral, 1, None, closed="left")],
        "warm_start": ["boolean"],
        "checkpoint": [str, os.PathLike, None],
        "device": [str],
        "verbose": ["verbose"],
        "random_state": ["random_state"],
    }

    def __init__(
        self,
        *,
        embedding_dim,
        freeze_embeddings,
        max_epochs,
        batch_size,
        optimizer,
        lr,
        momentum,
        weight_decay,
        early_stopping,
        validation_fraction,
        patience,
        warm_start,
        checkpoint,
        device,
        verbose,
        random_state,
    ):
        self.embedding_dim = embedding_dim
        self.freeze_embeddings = freeze_embeddings
        self.max_epochs = max_epochs
        self.batch_size = batch_size
        self.optimizer = optimizer
        self.lr = lr
        self.momentum = momentum
        self.weight_decay = weight_decay
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.patience = patience
        self.warm_start = warm_start
        self.checkpoint = checkpoint
        self.device = device
        self.verbose = verbose
        self.random_state = random_state

    # ------------------------------------------------------------------ input
    def _check_device(self):
        try:
            device = torch.device(self.device)
        except (RuntimeError, TypeError):
            raise ValueError(
                f"device must be 'cpu', 'cuda' or 'cuda:N', got {self.device!r}."
            ) from None
        if device.type == "cuda" and not torch.cuda.is_available():
            raise ValueError(
                f"device={self.device!r} was requested but CUDA is not available on "
                "this machine (torch.cuda.is_available() is False); use device='cpu'."
            )
        if device.type not in ("cpu", "cuda"):
            raise ValueError(f"device must be 'cpu' or 'cuda', got {self.device!r}.")
        return device

    def _check_input(self, X, y=None, reset=False):
        """Validate ``X`` (and ``y``) and return a :class:`SequenceBatches`.

        With ``reset`` the input kind, vocabulary and sizes are learned from
        ``X``; without, ``X`` must match them (``y``, when given, is validated too).
        """
        name = type(self).__name__
        if isinstance(X, TokenSequences):
            if reset or y is not None:
                if y is None:
                    raise ValueError(
                        f"This {name} estimator requires y to be passed, but the "
                        "target y is None."
                    )
                y = validate_data(self, X="no_validation", y=y)
                if len(y) != len(X):
                    raise ValueError(
                        f"X holds {len(X)} documents but y holds {len(y)} labels."
                    )
            if reset:
                self._input_kind = "sequences"
                self.vocabulary_id_ = X.vocabulary_id
                self.vocabulary_size_ = X.vocabulary_size
                self.embedding_dims_ = tuple(t.shape[1] for t in X.tables)
                if hasattr(self, "n_features_in_"):
                    del self.n_features_in_
            elif self._input_kind != "sequences":
                raise ValueError(
                    f"This {name} was fitted on {self._input_kind_description()}, "
                    "but X is a TokenSequences."
                )
            elif X.vocabulary_id != self.vocabulary_id_:
                raise ValueError(
                    "X was built over a different vocabulary than the one seen in "
                    "fit (vocabulary fingerprint "
                    f"{X.vocabulary_id!r} != {self.vocabulary_id_!r}); transform it "
                    "with the vectorizer fitted together with this classifier."
                )
            batches = SequenceBatches(ids=X.ids, offsets=X.offsets)
            return batches, y, X.tables

        if _looks_like_text(X):
            raise TypeError(
                f"{name} takes token sequences, not raw text: put a "
                f"Word2VecVectorizer before it, e.g. Pipeline([('emb', "
                f"Word2VecVectorizer()), ('clf', {name}())])."
            )
        if reset or y is not None:
            X, y = validate_data(self, X, y, dtype="numeric", allow_nd=True, reset=reset)
        else:
            X = validate_data(self, X, dtype="numeric", allow_nd=True, reset=False)
        if X.ndim > 3:
            raise ValueError(
                f"X must be 2-D (n_documents, n_tokens) or 3-D (n_documents, "
                f"n_tokens, n_dims); got {X.ndim} dimensions."
            )
        if X.ndim == 2:
            kind = "ids" if X.dtype.kind in "iu" else "features"
        else:
            kind = "dense"
        if reset:
            self._input_kind = kind
            for attr in ("vocabulary_id_", "vocabulary_size_", "embedding_dims_"):
                if hasattr(self, attr):
                    delattr(self, attr)
        elif kind != self._input_kind:
            raise ValueError(
                f"This {name} was fitted on {self._input_kind_description()}, but X "
                f"is {self._input_kind_description(kind)}."
            )
        if kind == "ids":
            batches = self._ids_batches(X, reset)
            tables = None
        else:
            dense = X.astype(np.float32, copy=False)
            if dense.ndim == 2:
                dense = dense[:, :, None]
            if reset:
                self.embedding_dims_ = (dense.shape[2],)
            elif dense.shape[2] != self.embedding_dims_[0]:
                raise ValueError(
                    f"X has {dense.shape[2]} values per token, but {name} was fitted "
                    f"with {self.embedding_dims_[0]}."
                )
            batches = SequenceBatches(dense=dense)
            tables = None
        return batches, y, tables

    def _ids_batches(self, X, reset):
        if X.size and X.min() < 0:
            raise ValueError("X holds negative token ids; ids must be >= 0 (0 is padding).")
        top = int(X.max(initial=0))
        if reset:
            self.vocabulary_size_ = max(top + 1, 2)
        elif top >= self.vocabulary_size_:
            raise ValueError(
                f"X holds token id {top}, but the ids seen in fit were below "
                f"{self.vocabulary_size_}."
            )
        real = X != 0
        offsets = np.zeros(len(X) + 1, dtype=np.int64)
        np.cumsum(real.sum(1), out=offsets[1:])
        return SequenceBatches(ids=X[real].astype(np.int32), offsets=offsets)

    def _input_kind_description(self, kind=None):
        return {
            "sequences": "TokenSequences",
            "ids": "a 2-D integer array of token ids",
            "features": "a 2-D float array",
            "dense": "a 3-D float array",
        }[kind or self._input_kind]

    # -------------------------------------------------------------- training
    def _build_network(self, tables, n_classes):
        if tables is None and self._input_kind == "sequences":
            # Rebuilt to receive trained weights: only the tables' shapes matter.
            tables = [
                np.zeros((self.vocabulary_size_, d), np.float32) for d in self.embedding_dims_
            ]
        if tables is not None:
            torch_tables = [torch.from_numpy(np.array(t, dtype=np.float32)) for t in tables]
            sizes = tuple(t.shape[1] for t in tables)
            lookup = {"tables": torch_tables}
        elif self._input_kind == "ids":
            sizes = (self.embedding_dim,)
            lookup = {"vocabulary_size": self.vocabulary_size_, "embedding_dim": self.embedding_dim}
        else:
            sizes = self.embedding_dims_
            lookup = {}
        input_size = sizes if self._combine == "tuple" else sum(sizes)
        return SequenceNetwork(
            self._build_core(input_size, n_classes),
            freeze=self.freeze_embeddings,
            combine=self._combine,
            **lookup,
        )

    def _build_core(self, input_size, n_classes):
        raise NotImplementedError

    def _check_params(self):
        """Checks across parameters that the constraints cannot express."""

    def _extra_callbacks(self):
        """Callbacks a subclass adds to the net (e.g. a learning-rate schedule)."""
        return []

    def _train_split(self, y, seed):
        if not self.early_stopping:
            return None
        n_valid = int(np.ceil(self.validation_fraction * len(y)))
        counts = np.bincount(y)
        n_classes = len(counts)
        # A stratified split needs every class twice and room for each class on
        # both sides; on smaller data early stopping is skipped (documented).
        if counts.min() < 2 or n_valid < n_classes or len(y) - n_valid < n_classes:
            return None
        return ValidSplit(self.validation_fraction, stratified=True, random_state=seed)

    def _optimizer_params(self):
        params = {"optimizer__weight_decay": self.weight_decay}
        if self.optimizer == "sgd":
            params["optimizer__momentum"] = self.momentum
        return params

    def fit(self, X, y):
        """Train the model.

        With ``warm_start=True`` and an already fitted estimator, training
        continues from the current weights and optimizer state for
        ``max_epochs`` more epochs instead of starting over.

        Parameters
        ----------
        X : TokenSequences or array-like of shape (n_documents, n_tokens[, n_dims])
            Documents, e.g. the output of :class:`~sklearn_lama.Word2VecVectorizer`.
        y : array-like of shape (n_documents,)
            Class labels of any type scikit-learn accepts.

        Returns
        -------
        self : object
            The fitted estimator.
        """
        return self._train(X, y, resume=self.warm_start)

    def partial_fit(self, X, y, classes=None):
        """Train for one epoch, continuing from the current weights.

        Follows scikit-learn's incremental-learning convention: the first call
        (on an unfitted estimator) needs ``classes``, every call trains one
        epoch over ``X`` with all of it (no validation split, no early
        stopping), and the optimizer state carries over between calls.

        Parameters
        ----------
        X : TokenSequences or array-like of shape (n_documents, n_tokens[, n_dims])
            Documents; after the first call, of the kind (and vocabulary or
            number of tokens) seen then.
        y : array-like of shape (n_documents,)
            Class labels, all in ``classes``.
        classes : array-like of shape (n_classes,), default=None
            Every label that will ever be passed. Required on the first call;
            later calls may omit it but, if given, it must not change.

        Returns
        -------
        self : object
            The fitted estimator.
        """
        return self._train(X, y, classes=classes, resume=True, epochs=1)

    def _train(self, X, y, *, resume, classes=None, epochs=None):
        """Fit from scratch, or continue training when ``resume`` and fitted.

        ``epochs=None`` trains ``max_epochs`` epochs with the configured
        validation split; an int trains that many epochs on all of ``X``
        (``partial_fit``).
        """
        self._validate_params()
        self._check_params()
        device = self._check_device()
        checkpoint = self._checkpoint_callback()
        resume = resume and hasattr(self, "net_")
        if not resume and epochs is not None and classes is None:
            raise ValueError(
                "classes must be passed on the first call to partial_fit: every "
                "label the estimator will see, e.g. classes=np.unique(y_all)."
            )
        batches, y, tables = self._check_input(X, y, reset=not resume)
        check_classification_targets(y)
        if resume:
            if classes is not None and not np.array_equal(np.unique(classes), self.classes_):
                raise ValueError(
                    f"classes={np.unique(classes).tolist()!r} differs from the classes "
                    f"of the first fit, {self.classes_.tolist()!r}."
                )
            previous = self._training_state()
        else:
            self._set_classes(y if classes is None else classes)
        y_encoded = self._encode_labels(y)
        batches.y = y_encoded

        seed = int(check_random_state(self.random_state).randint(np.iinfo(np.int32).max))
        split = self._train_split(y_encoded, seed) if epochs is None else None
        callbacks = self._callbacks(split, checkpoint)
        cuda_devices = [device] if device.type == "cuda" else []
        with torch.random.fork_rng(devices=cuda_devices):
            # Continued training draws new batches and dropout masks: the seed
            # moves on with the number of epochs already trained.
            torch.manual_seed(seed + (len(previous["history"]) if resume else 0))
            network = self._build_network(tables, len(self.classes_))
            net = self._make_net(network, split, callbacks, device)
            net.initialize()
            if resume:
                self._restore(net, previous)
            # Set before training so that checkpoints written during it export this net.
            self.net_ = net
            net.partial_fit(batches, y_encoded, epochs=epochs or self.max_epochs)
        self.n_epochs_ = len(net.history)
        if net.interrupted_:
            kept = (
                "the weights of the finished epoch with the lowest validation loss "
                "(the current weights if no epoch finished)"
                if split is not None
                else "the weights reached when it stopped"
            )
            method = "fit" if epochs is None else "partial_fit"
            warnings.warn(
                f"{type(self).__name__}.{method} was interrupted (KeyboardInterrupt) "
                f"during epoch {self.n_epochs_}; the estimator is usable and keeps "
                f"{kept}; fit with warm_start=True continues from there.",
                UserWarning,
            )
        return self

    def _set_classes(self, labels):
        encoder = LabelEncoder().fit(labels)
        if len(encoder.classes_) < 2:
            raise ValueError(
                f"y contains only one class ({encoder.classes_[0]!r}); a classifier "
                "needs samples of at least 2 classes."
            )
        self.classes_ = encoder.classes_

    def _encode_labels(self, y):
        unseen = set(np.unique(y).tolist()) - set(self.classes_.tolist())
        if unseen:
            raise ValueError(
                f"y holds labels {sorted(unseen, key=repr)!r} that are not in classes_ "
                f"{self.classes_.tolist()!r}. Continued training (warm_start, "
                "partial_fit) keeps the classes of the first fit: refit with "
                "warm_start=False, or pass every label as classes to the first "
                "partial_fit call."
            )
        return np.searchsorted(self.classes_, y)

    def _callbacks(self, split, checkpoint):
        callbacks = []
        if self.verbose:
            callbacks.append(ProgressBar())
            callbacks.append(
                EpochScoring("accuracy", name="train_acc", on_train=True, lower_is_better=False)
            )
        if checkpoint is not None:
            callbacks.append(checkpoint)
        if split is not None:
            callbacks.append(
                EarlyStopping(
                    monitor="valid_loss",
                    patience=self.patience,
                    load_best=True,
                    sink=print if self.verbose else _silent,
                )
            )
        callbacks.extend(self._extra_callbacks())
        return callbacks

    def _checkpoint_callback(self):
        """The callback writing ``checkpoint``; refuses an unwritable path before training."""
        if self.checkpoint is None:
            return None
        # Imported here: _persistence imports every estimator module, this one included.
        from ._persistence import WeightsCheckpoint

        return WeightsCheckpoint(self, self.checkpoint)

    def _make_net(self, network, split, callbacks, device):
        return _PenalisedNet(
            module=network,
            criterion=torch.nn.CrossEntropyLoss,
            optimizer=OPTIMIZERS[self.optimizer],
            lr=self.lr,
            max_epochs=self.max_epochs,
            batch_size=self.batch_size,
            train_split=split,
            callbacks=callbacks,
            device=str(device),
            iterator_train=make_loader,
            iterator_train__shuffle=True,
            iterator_valid=make_loader,
            iterator_valid__batch_size=max(self.batch_size, _INFERENCE_BATCH),
            verbose=int(self.verbose),
            **self._optimizer_params(),
        )

    # ----------------------------------------------------------- persistence
    _FITTED_INPUT_ATTRIBUTES = (
        "n_features_in_", "vocabulary_size_", "vocabulary_id_", "embedding_dims_",
    )

    def _training_state(self):
        """What continued training needs from the fitted net (references, not copies)."""
        net = self.net_
        return {
            "network": net.module_.state_dict(),
            "optimizer": next(k for k, v in OPTIMIZERS.items() if type(net.optimizer_) is v),
            "optimizer_state": net.optimizer_.state_dict()["state"],
            "history": net.history.to_list(),
        }

    def _restore(self, net, state):
        """Load a previous training's weights, optimizer state and history into ``net``."""
        try:
            net.module_.load_state_dict(state["network"])
        except RuntimeError as exc:
            raise ValueError(
                f"The trained network does not fit the one {type(self).__name__}'s "
                "current parameters build (were architecture parameters changed "
                f"after fitting?): {str(exc).splitlines()[0]}"
            ) from None
        # The state may still belong to another net (warm start): copies keep
        # that net untouched while this one trains.
        if state["optimizer"] == self.optimizer:
            # The saved moments, with the param groups (lr, ...) of the current parameters.
            current = net.optimizer_.state_dict()
            net.optimizer_.load_state_dict(
                {**current, "state": copy.deepcopy(state["optimizer_state"])}
            )
        # skorch's LRScheduler resumes a schedule at the epoch count of the
        # history, which torch allows only when each group records its initial lr.
        for group in net.optimizer_.param_groups:
            group.setdefault("initial_lr", group["lr"])
        net.history = History(copy.deepcopy(state["history"]))

    def _export_state(self):
        """The fitted state as plain values and tensors, for :func:`~sklearn_lama.save_weights`."""
        return {
            "input_kind": self._input_kind,
            "classes": {"dtype": self.classes_.dtype.str, "values": self.classes_.tolist()},
            "inputs": {
                name: getattr(self, name)
                for name in self._FITTED_INPUT_ATTRIBUTES
                if hasattr(self, name)
            },
            **self._training_state(),
        }

    def _import_state(self, state):
        """Become the fitted estimator that :meth:`_export_state` described."""
        self._input_kind_description(state["input_kind"])  # refuses an unknown kind
        self._input_kind = state["input_kind"]
        classes = state["classes"]
        self.classes_ = np.array(classes["values"], dtype=np.dtype(classes["dtype"]))
        for name in self._FITTED_INPUT_ATTRIBUTES:
            if name in state["inputs"]:
                setattr(self, name, state["inputs"][name])
        try:
            device = self._check_device()
        except ValueError:
            warnings.warn(
                f"{type(self).__name__} was saved with device={self.device!r}, which "
                "is not available here; it is loaded on the CPU.",
                UserWarning,
            )
            device = torch.device("cpu")
        net = self._make_net(self._build_network(None, len(self.classes_)), None, [], device)
        net.initialize()
        self._restore(net, state)
        self.net_ = net
        self.n_epochs_ = len(net.history)

    # ------------------------------------------------------------ inference
    def predict_proba(self, X):
        """Class probabilities.

        Parameters
        ----------
        X : TokenSequences or array-like of shape (n_documents, n_tokens[, n_dims])
            Documents in the form used in ``fit``.

        Returns
        -------
        proba : ndarray of shape (n_documents, n_classes)
            Columns follow ``classes_``.
        """
        check_is_fitted(self)
        batches, _, _ = self._check_input(X)
        # Sorting by length keeps padding, and so wasted compute, small; masking
        # makes the result independent of which documents share a batch. Ties
        # are broken by content so that any permutation of the same documents
        # gives the same batches: float32 kernels can round a row differently
        # at another position, and the output must not depend on input order.
        order = np.lexsort((batches.content_keys(), batches.lengths))
        proba = np.empty((len(order), len(self.classes_)), dtype=np.float64)
        # Each batch's probabilities go straight into the result: skorch's
        # predict_proba keeps one small array per batch until the end, and on
        # glibc those pin the heap between batches: FCSR grew by 1.7 GB over a
        # stream of 200,000 short documents.
        start = 0
        for logits, _ in self.net_.forward_iter(Subset(batches, order), training=False):
            stop = start + len(logits)
            proba[order[start:stop]] = torch.softmax(logits, dim=-1).numpy()
            start = stop
        proba /= proba.sum(axis=1, keepdims=True)
        return proba

    def predict(self, X):
        """Predicted class labels.

        Parameters
        ----------
        X : TokenSequences or array-like of shape (n_documents, n_tokens[, n_dims])
            Documents in the form used in ``fit``.

        Returns
        -------
        y : ndarray of shape (n_documents,)
            Labels from ``classes_``.
        """
        proba = self.predict_proba(X)
        return self.classes_[np.argmax(proba, axis=1)]

    def _network_batches(self, X):
        """Yield ``(network, inputs, true_lengths)`` per batch, in eval mode."""
        check_is_fitted(self)
        batches, _, _ = self._check_input(X)
        network = self.net_.module_
        network.eval()
        device = torch.device(self.net_.device)
        loader = make_loader(batches, _INFERENCE_BATCH)
        start = 0
        with torch.no_grad():
            for inputs, _ in loader:
                inputs = {k: v.to(device) for k, v in inputs.items()}
                n = len(inputs["lengths"])
                yield network, inputs, batches.lengths[start : start + n]
                start += n

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.three_d_array = True
        return tags
