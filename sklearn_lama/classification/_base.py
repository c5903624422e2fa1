"""The base class of the classifiers: parameters, ``fit`` and prediction.

A concrete classifier documents its parameters in its docstring, extends
this class's ``_parameter_constraints`` with its own and builds its torch
core in ``_build_core``; this class runs the rest. ``X`` takes one path
through the modules, in order: :mod:`._inputs` validates it and reads it
through the adapter of its kind into batches
(:mod:`..training._batching`), which also gives the training view;
``fit`` hands that view, the hold-out split and the factories of the network
and the net to :func:`..training._driver.train` in one call and keeps the net
it returns, then builds from it the module that predicts
(:meth:`BaseSequenceClassifier._inference_module`, also after loading);
:mod:`..training._inference` runs that module over the batches.
"""

from numbers import Integral, Real

import numpy as np
import torch
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted

from ..base._trained import TrainedMixin
from ..modules import ConcatenateTables, SequenceNetwork
from ..training._batching import BatchBudget, training_view
from ..training._callbacks import SCORES, averaging_decay, checkpoint_file
from ..training._driver import continues, fitting
from ..training._inference import run_sorted
from ..training._net import make_classifier_net, training_state
from ..training._parameters import OPTIMIZERS, PRECISIONS, TRAINING_CONSTRAINTS
from ..training._splits import hold_out
from ..utils._shards import joined_shards
from ..utils._sklearn_compat import (
    Interval,
    Options,
    StrOptions,
    _check_sample_weight,
    _fit_context,
)
from ..utils._state import PortableState
from ..utils._threads import resolve_threads, torch_threads
from ._inputs import read_input, restore_adapter
from ._nb_features import NaiveBayesColumns
from ._targets import learn_target, restore_target

__all__ = ["BaseSequenceClassifier"]


class BaseSequenceClassifier(TrainedMixin, PortableState, ClassifierMixin, BaseEstimator):
    """Base class of the sequence classifiers; not for direct use.

    Accepted inputs ``X``:

    - :class:`~sklearn_lama.TokenSequences` (from a vectorizer): the embedding
      tables initialise the model's lookups.
    - 2-D integer array ``(n, T)``: token ids, 0 is padding (dropped wherever it
      appears); embeddings of size ``embedding_dim`` are learned from scratch.
    - 2-D float array ``(n, T)``: ``T`` scalar features per document, read as a
      sequence of length ``T`` with one value per step.
    - 3-D float array ``(n, T, d)``: pre-computed token vectors.

    Accepted targets ``y`` (:mod:`._targets`, chosen in ``fit``): one label
    per document; a binary indicator matrix ``(n, n_labels)``, several
    labels per document, one sigmoid each; or one column per task, each
    with its own classes and a missing-label marker (``-1`` in a numeric
    ``y``, ``None`` in an object ``y``), one softmax head per task over the
    shared encoder.
    """

    # The constraints of the parameters every classifier has; each extends them
    # with its own (``{**BaseSequenceClassifier._parameter_constraints, ...}``).
    _parameter_constraints = {
        **TRAINING_CONSTRAINTS,
        "scoring": [StrOptions(set(SCORES))],
        "embedding_dim": [Interval(Integral, 1, None, closed="left")],
        "freeze_embeddings": ["boolean"],
        "embedding_dropout": [Interval(Real, 0, 1, closed="left")],
        "nb_unigram_weight": [Interval(Real, 0, None, closed="left")],
        "nb_bigram_weight": [Interval(Real, 0, None, closed="left")],
        "nb_folds": [Interval(Integral, 2, None, closed="left"), Options(Integral, {0})],
        "batch_size": [Interval(Integral, 1, None, closed="left")],
        "optimizer": [StrOptions(set(OPTIMIZERS))],
        "momentum": [Interval(Real, 0, 1, closed="left")],
        "weight_decay": [Interval(Real, 0, None, closed="left")],
        "ema_horizon": [Interval(Real, 0, None, closed="left")],
        "class_weight": [dict, list, StrOptions({"balanced"}), None],
        "calibration": [StrOptions({"temperature"}), None],
        "inference_batch_size": [Interval(Integral, 1, None, closed="left")],
    }

    # -------------------------------------------------------------- hooks
    def _build_core(self, input_size, n_outputs):
        """The torch module that maps embedded tokens and their mask to ``n_outputs`` logits."""
        raise NotImplementedError

    def _combination(self):
        """How the tables' vectors reach the core: one tensor (:class:`ConcatenateTables`)."""
        return ConcatenateTables()

    def _check_params(self):
        """Checks across parameters that the constraints cannot express."""

    def _batch_budget(self):
        """The :class:`BatchBudget` that every batch keeps to: ``max_batch_tokens``."""
        return BatchBudget(self.max_batch_tokens)

    def _check_batches(self, batches, budget):
        """Refuse ``X`` that the model cannot batch within ``budget``."""

    # Padded tokens of a prediction batch on the CPU at most, within
    # ``max_batch_tokens`` (None: no further limit), so that a model wide per
    # token keeps a batch's activations within the CPU's caches.
    _inference_tokens = None

    def _inference_budget(self, budget):
        """``budget`` of the prediction batches: at most ``_inference_tokens`` on the CPU."""
        if self._inference_tokens is None or torch.device(self.net_.device).type != "cpu":
            return budget
        return BatchBudget(min(budget.max_tokens, self._inference_tokens), budget.max_pairs)

    def _extra_callbacks(self):
        """Callbacks a subclass adds to the net (e.g. a learning-rate schedule)."""
        return []

    def _attention_row_labels(self):
        """A name for each row of :meth:`attention_weights`' arrays (heads, streams)."""
        raise NotImplementedError

    # The method sklearn_lama.inspection explains with when given method=None:
    # the most faithful one of the deletion benchmark, for every classifier.
    _default_explanation = "integrated_gradients"

    # -------------------------------------------------------------- input
    def _read(self, X, y=None, reset=False):
        """``(adapter, batches, y, budget)``: ``X`` read by its adapter, and the batch budget."""
        adapter, batches, y = read_input(self, X, y, reset=reset)
        budget = self._batch_budget()
        self._check_batches(batches, budget)
        return adapter, batches, y, budget

    def _build_network(self, counted=None):
        """The network over the input adapter's lookup, with the target's outputs.

        ``counted`` are the training rows (a :class:`TrainingView`) whose
        batches carry the embedding tables and which the Naive Bayes ratios
        count; ``None`` rebuilds a network to receive trained weights.
        """
        naive_bayes = NaiveBayesColumns(
            self.nb_unigram_weight, self.nb_bigram_weight, self.nb_folds, self.target_encoder_
        )
        lookup, sizes = self.input_adapter_.lookup(self.embedding_dim, naive_bayes, counted)
        combination = self._combination()
        freeze = self.freeze_embeddings
        if freeze == "auto":
            # LAMA's default: keep pretrained vectors fixed, fine-tune those trained on the corpus.
            freeze = self.input_adapter_.pretrained
        n_outputs = self.target_encoder_.n_outputs
        return SequenceNetwork(
            self._build_core(combination.input_size(sizes), n_outputs),
            freeze=freeze,
            combine=combination,
            embedding_dropout=self.embedding_dropout,
            side_features=self.input_adapter_.n_side,
            n_outputs=n_outputs,
            **lookup,
        )

    # ----------------------------------------------------------- training
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Train the model.

        With ``warm_start=True`` and an already fitted estimator, training
        continues from the current weights and optimizer state for
        ``max_epochs`` more epochs instead of starting over.

        Parameters
        ----------
        X : TokenSequences or array-like of shape (n_documents, n_tokens[, n_dims])
            Documents, e.g. the output of :class:`~sklearn_lama.Word2VecVectorizer`.
        y : array-like of shape (n_documents,) or (n_documents, n_outputs)
            Class labels of any type scikit-learn accepts; or a binary
            indicator matrix, several labels per document (what
            :class:`~sklearn.preprocessing.MultiLabelBinarizer` makes); or
            one column of labels per task, ``-1`` (numeric ``y``) or
            ``None`` (object ``y``) where a document has no label for a task.
        sample_weight : array-like of shape (n_documents,), default=None
            Non-negative weights: a document of weight ``w`` counts as
            ``floor(w)`` copies of it, plus one more whose loss is scaled by
            ``w - floor(w)``; so an integer weight is exactly the same as
            repeating the document, and 0 as leaving it out. It weighs all
            the labels (tasks) of the document alike.

        Returns
        -------
        self : object
            The fitted estimator.
        """
        return self._train(X, y, sample_weight, partial=False)

    @_fit_context(prefer_skip_nested_validation=True)
    def partial_fit(self, X, y, classes=None, sample_weight=None):
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
        y : array-like of shape (n_documents,) or (n_documents, n_outputs)
            Class labels, all in ``classes``; or a 2-D ``y`` as in :meth:`fit`.
        classes : array-like of shape (n_classes,) or list of array-like, default=None
            Every label that will ever be passed. Required on the first call;
            later calls may omit it but, if given, it must not change. For an
            indicator matrix ``y``, its column indices ``0..n_labels-1``; for
            a multi-output ``y``, one array of labels per task.
        sample_weight : array-like of shape (n_documents,), default=None
            As in :meth:`fit`.

        Returns
        -------
        self : object
            The fitted estimator.
        """
        return self._train(X, y, sample_weight, partial=True, classes=classes)

    def _train(self, X, y, sample_weight, *, partial, classes=None):
        """Train: from scratch, or on from the fitted net (``warm_start``, ``partial_fit``).

        ``partial=False`` (``fit``) trains ``max_epochs`` epochs with the
        configured validation split; ``partial=True`` (``partial_fit``) one
        epoch on all of ``X``. ``X`` goes through the adapter of its kind
        into batches, the training view of the batches, then
        :func:`~sklearn_lama.training._driver.train`, which builds the network
        over the adapter's lookup and trains it.
        """
        self._check_params()
        config = self._training_config()
        resume = continues(config, hasattr(self, "net_"), partial)
        if not resume and partial and classes is None:
            raise ValueError(
                "classes must be passed on the first call to partial_fit: every "
                "label the estimator will see, e.g. classes=np.unique(y_all)."
            )
        # Under torchrun, ranks that pass different parts of the training set train on them all.
        names = ("X", "y", "sample_weight")
        (X, y, sample_weight), _ = joined_shards((X, y, sample_weight), names)
        with fitting(config) as seed:
            adapter, batches, y, budget = self._read(X, y, reset=not resume)
            if sample_weight is not None:
                sample_weight = _check_sample_weight(
                    sample_weight,
                    np.empty((len(y), 0)),
                    dtype=np.float64,
                    ensure_non_negative=True,
                )
                # scikit-learn refuses all-zero weights from 1.7 on; 1.6 leaves it to us.
                if not sample_weight.any():
                    raise ValueError(
                        "sample_weight must give at least one document a non-zero weight; "
                        "got all zeros."
                    )
            if resume:
                if classes is not None and not self.target_encoder_.same_classes(classes):
                    raise ValueError(
                        f"classes={classes!r} differs from the classes "
                        f"of the first fit, {self.target_encoder_.describe_classes()}."
                    )
            else:
                self.target_encoder_ = learn_target(y, classes)
                self.classes_ = self.target_encoder_.classes_
                self.input_adapter_ = adapter
            target = self.target_encoder_
            y_encoded = target.encode(y)
            view = training_view(
                batches,
                y_encoded,
                sample_weight,
                target.element_weights(y_encoded, self.class_weight),
                target.batch_groups(y_encoded),
            )
            split = None if partial else hold_out(config, len(view), seed, target.strata(view.y))
            if split is not None:
                split = split.by_length(view.lengths)
            if not partial and self.calibration is not None and split is None:
                raise ValueError(
                    f"calibration={self.calibration!r} fits on the validation split that fit "
                    "holds out, and this fit holds none out: it needs early_stopping=True and "
                    "enough documents (at least 5 held out per class, a validation_fraction "
                    f"of {self.validation_fraction} of {len(view)} rows). Set calibration=None."
                )
            averaging = 0.0
            if not partial and self.ema_horizon > 0:
                n_train = len(view) if split is None else len(split.train_rows)
                averaging = averaging_decay(self.ema_horizon, n_train, self.batch_size)
            # The Naive Bayes ratios count the rows trained on, the held-out ones left out;
            # a continued fit's network only needs the shapes (its weights are restored).
            counted = None if resume else view if split is None else view.subset(split.train_rows)
            checkpoint = checkpoint_file(
                config,
                batches.ids,
                batches.offsets,
                batches.dense,
                y_encoded,
                sample_weight,
                batches.side,
            )

            # Checkpoints written while training hold the uncalibrated net.
            result = self._train_net(
                view,
                view.y,
                config=config,
                seed=seed,
                resume=resume,
                checkpoint=checkpoint,
                build_module=lambda: (self._build_network(counted), 0.0),
                split=split,
                callbacks=self._extra_callbacks(),
                averaging=averaging,
                epochs=1 if partial else None,
            )
            inference = self._inference_module(result.net)
            temperature = None
            if not partial and self.calibration is not None:
                held_out = view.subset(split.valid_rows)
                temperature = self._fit_temperatures(
                    result.net, inference, batches, budget, held_out
                )
        self.net_ = result.net
        self.inference_module_ = inference
        self.n_epochs_ = result.n_epochs
        self.checkpoint_path_ = checkpoint
        self.temperature_ = temperature
        self._warn_if_interrupted(
            result,
            "partial_fit" if partial else "fit",
            "the weights of the finished epoch with the lowest validation loss "
            "(the current weights if no epoch finished)"
            if split is not None
            else "the weights reached when it stopped",
        )
        return self

    def _make_net(self, module, config, split, callbacks, device):
        """The skorch net that trains (or runs) ``module`` with the current parameters."""
        return make_classifier_net(
            module,
            config,
            split,
            callbacks,
            device,
            target=self.target_encoder_,
            budget=self._batch_budget(),
            optimizer=self.optimizer,
            momentum=self.momentum,
            weight_decay=self.weight_decay,
            batch_size=self.batch_size,
            inference_batch_size=self.inference_batch_size,
        )

    def _fit_temperatures(self, net, module, batches, budget, held_out):
        """The target's temperatures, fitted on the logits of the held-out rows.

        The logits are those that prediction computes: ``module``'s (the
        :meth:`_inference_module` of ``net``).
        """
        documents = np.unique(held_out.index)
        logits = self._collect_logits(
            batches,
            run_sorted(
                net,
                batches,
                _forward_logits,
                budget,
                batch_size=self.inference_batch_size,
                documents=documents,
                module=module,
            ),
        )
        return self.target_encoder_.fit_temperatures(logits[held_out.index], held_out.y)

    # -------------------------------------------------------- persistence
    def _export_state(self):
        """The fitted state as plain values and tensors, for :func:`~sklearn_lama.save_weights`."""
        return self._fitted_state(self.net_, self.temperature_, self.checkpoint_path_)

    def _fitted_state(self, net, temperature, checkpoint_path):
        """The state of :meth:`_export_state`, of ``net``, ``temperature`` and ``checkpoint_path``.

        A checkpoint written in training holds the net in training, before
        the estimator's attributes are set.
        """
        state = {
            "input": self.input_adapter_.export(),
            "target": self.target_encoder_.export(),
            "temperature": None if temperature is None else temperature.tolist(),
            "checkpoint_path": checkpoint_path,
            **training_state(net),
        }
        if hasattr(self, "n_features_in_"):
            state["n_features_in"] = self.n_features_in_
        return state

    def _import_state(self, state):
        """Become the fitted estimator that :meth:`_export_state` described."""
        self.input_adapter_ = restore_adapter(state["input"])
        self.target_encoder_ = restore_target(state["target"])
        self.classes_ = self.target_encoder_.classes_
        temperature = state.get("temperature")
        self.temperature_ = None if temperature is None else np.array(temperature)
        self.checkpoint_path_ = state["checkpoint_path"]
        if "n_features_in" in state:
            self.n_features_in_ = state["n_features_in"]
        self.net_ = self._restore_net(self._build_network, state)
        self.inference_module_ = self._inference_module(self.net_)
        self.n_epochs_ = len(self.net_.history)

    # ---------------------------------------------------------- inference
    def _inference_module(self, net):
        """The module that predicts with ``net``'s weights: the step after training and loading.

        ``fit``, ``partial_fit`` (on a warm start too) and loading (a pickle,
        :func:`~sklearn_lama.load_weights`) end with it and keep its result
        as ``inference_module_``; ``predict``, ``predict_proba``,
        ``decision_function`` and the calibration's temperatures run that
        module. It is the network's folded form
        (:meth:`~sklearn_lama.modules.SequenceNetwork.fold`, a
        :class:`~sklearn_lama.modules.FoldedNetwork` built here from the
        weights ``net`` holds) where the network has one and the net
        computes in float32 (``precision="32"``: the folded form is not
        computed under autocast); otherwise the network itself
        (``net.module_``). Training, its validation and the inspection
        (attention, attributions) run the network. Built with the
        estimator's torch threads, as prediction runs; the network is left
        in eval mode.
        """
        network = net.module_.eval()
        if PRECISIONS[net.precision] is None:
            with torch_threads(resolve_threads(self.torch_threads)):
                folded = network.fold()
            if folded is not None:
                return folded
        return network

    def _run(self, X, compute, collect, module=None):
        """``collect(batches, pairs)``, ``pairs`` the ``(rows, output)`` of each batch.

        ``output`` is ``compute(network, inputs)``, ``network`` ``module``
        (by default the fitted network, ``net_.module_``); the pairs come
        batch by batch, with the estimator's torch threads.
        """
        check_is_fitted(self)
        with torch_threads(resolve_threads(self.torch_threads)):
            _, batches, _, budget = self._read(X)
            pairs = run_sorted(
                self.net_,
                batches,
                compute,
                self._inference_budget(budget),
                batch_size=self.inference_batch_size,
                module=module,
                n_workers=resolve_threads(self.n_workers),
            )
            return collect(batches, pairs)

    def _collect_logits(self, batches, pairs):
        logits = np.full((len(batches), self.target_encoder_.n_outputs), np.nan)
        # Each batch goes straight into the result: one small array kept per
        # batch until the end (as skorch's predict_proba keeps them) pins glibc's
        # heap between batches, and memory would grow with the stream.
        for rows, out in pairs:
            logits[rows] = out.cpu().numpy()
        return logits

    def _logits(self, X):
        check_is_fitted(self)
        return self._run(X, _forward_logits, self._collect_logits, self.inference_module_)

    def decision_function(self, X):
        """The network's scores (logits) before the softmax or sigmoid.

        Not calibrated: ``calibration`` changes :meth:`predict_proba` only.

        Parameters
        ----------
        X : TokenSequences or array-like of shape (n_documents, n_tokens[, n_dims])
            Documents in the form used in ``fit``.

        Returns
        -------
        scores : ndarray of shape (n_documents,) or (n_documents, n_classes), or list
            One logit per class, columns following ``classes_``; with two
            classes, as in scikit-learn, one column: the log-odds of
            ``classes_[1]`` (its logit minus that of ``classes_[0]``). With
            an indicator matrix ``y``, each label's log-odds, ``(n_documents,
            n_labels)``; with a multi-output ``y``, one such array per task.
        """
        logits = self._logits(X)
        return self.target_encoder_.decision(logits)

    def predict_proba(self, X):
        """Class probabilities, calibrated when ``calibration`` is set.

        Parameters
        ----------
        X : TokenSequences or array-like of shape (n_documents, n_tokens[, n_dims])
            Documents in the form used in ``fit``.

        Returns
        -------
        proba : ndarray of shape (n_documents, n_classes), or list of ndarray
            Columns follow ``classes_``. With an indicator matrix ``y``, each
            label's probability, ``(n_documents, n_labels)``, independent of
            the others (as :class:`~sklearn.neural_network.MLPClassifier`);
            with a multi-output ``y``, one ``(n_documents, n_classes_k)``
            array per task (as :class:`~sklearn.ensemble.RandomForestClassifier`).
        """
        logits = self._logits(X)
        return self.target_encoder_.proba(logits, self.temperature_)

    def predict(self, X):
        """Predicted class labels.

        Parameters
        ----------
        X : TokenSequences or array-like of shape (n_documents, n_tokens[, n_dims])
            Documents in the form used in ``fit``.

        Returns
        -------
        y : ndarray of shape (n_documents,) or (n_documents, n_outputs)
            Labels from ``classes_``; with an indicator matrix ``y``, the
            indicator matrix of the labels of probability above 0.5; with a
            multi-output ``y``, one column of labels per task.
        """
        logits = self._logits(X)
        return self.target_encoder_.predict(logits)

    def attention_weights(self, X):
        """How much each token of each document is attended to.

        One convention for every classifier: per document an array over its
        tokens, with the model's heads (LAMA), its single pooling (FCSR) or
        its two streams (Duo) as the leading axis; padding is excluded and
        every row sums to 1. The attention comes before the output layer,
        so it is shared by every label and task of a 2-D ``y``: no row is
        specific to one label. Computed on the same batches as
        :meth:`predict_proba`, so a document's weights do not depend on the
        other documents of ``X``.

        Parameters
        ----------
        X : TokenSequences or array-like
            Documents in the form used in ``fit``.

        Returns
        -------
        attention : list of ndarray of shape (n_rows, n_tokens_i)
            One array per document. With token-id input, positions follow the
            ids left after dropping padding. See the class documentation for
            what the rows are.
        """

        def compute(network, inputs):
            embedded, mask = network.embed(**inputs)
            return network.core.token_attention(embedded, mask)

        return self._per_token(X, compute)

    def _per_token(self, X, compute):
        """Per-document arrays ``(n_rows, n_tokens_i)`` of ``compute(network, inputs)``.

        The hook through which :mod:`sklearn_lama.inspection` reads a fitted
        model token by token. ``compute`` gets the fitted
        :class:`~sklearn_lama.modules.SequenceNetwork` and one padded batch
        (``lengths`` and ``ids`` or ``x``, on the net's device) and returns a
        ``(B, n_rows, T)`` tensor; padded positions are cut off. It runs on the
        batches of :meth:`predict_proba`, in eval mode and without gradients
        (``compute`` enables them where it needs them).
        """

        def collect(batches, pairs):
            values = [None] * len(batches)
            for rows, output in pairs:
                output = output.cpu().numpy()
                for row, v in zip(rows, output):
                    values[row] = v[:, : batches.lengths[row]]
            return values

        return self._run(X, compute, collect)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.three_d_array = True
        tags.classifier_tags.multi_label = True
        tags.target_tags.multi_output = True
        # On a GPU the kernels chosen for a batch depend on its shape, so a document's scores
        # can move in the last bits with the other documents of its call (as the translator's).
        tags.non_deterministic = str(self.device) != "cpu"
        return tags


def _forward_logits(network, inputs):
    """The logits of a batch (without the penalty): of the network or its folded form."""
    return network(**inputs)[0]
