"""The training stack's parameters, declared once (shared by every estimator)."""

import os
from numbers import Integral, Real

import torch

from ..utils._parameters import Param
from ..utils._sklearn_compat import Interval, StrOptions

__all__ = [
    "INFERENCE_BATCH",
    "OPTIMIZERS",
    "PRECISIONS",
    "TRAINING_PARAMETERS",
]


OPTIMIZERS = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam}


INFERENCE_BATCH = 256


# The autocast dtype of each ``precision`` (None: no autocast, float32 throughout).
PRECISIONS = {"32": None, "bf16": torch.bfloat16, "16-mixed": torch.float16}


#: The training parameters that every estimator shares, with one meaning, each declared once.
TRAINING_PARAMETERS = {
    "max_epochs": Param(
        "int",
        [Interval(Integral, 1, None, closed="left")],
        "Maximum passes over the training data.",
    ),
    "max_time": Param(
        "float or None",
        [Interval(Real, 0, None, closed="neither"), None],
        """Training budget of a ``fit`` in seconds (``None``: none), checked after
        every training batch: the epoch then ends there (it is still validated
        and recorded) and training stops. Validation counts; what callbacks do
        at the end of an epoch does not. ``net_.history`` records the time so
        far as ``seconds``.""",
    ),
    "lr": Param("float", [Interval(Real, 0, None, closed="neither")], "Learning rate."),
    "early_stopping": Param(
        "bool",
        ["boolean"],
        """Hold out ``validation_fraction`` of the training data (stratified) and
        keep the weights of the epoch with the lowest validation loss, stopping
        after ``patience`` epochs without improvement. Skipped when the data are
        too small for a useful split: fewer than 5 held-out documents per class
        (10 in all when several labels per document leave the split
        unstratified), fewer documents left to train on than classes, or a
        class with a single document.""",
    ),
    "validation_fraction": Param(
        "float",
        [Interval(Real, 0, 1, closed="neither")],
        "Share of the training data held out for early stopping.",
    ),
    "patience": Param(
        "int",
        [Interval(Integral, 1, None, closed="left")],
        """Epochs without improvement before stopping (the LAMA paper's is 5).""",
    ),
    "callbacks": Param(
        "list or None",
        [list, None],
        """skorch callbacks added to the net, as instances or ``(name, callback)``
        pairs (e.g. ``skorch.callbacks.LRScheduler``, ``GradientNormClipping``).
        They are code, so :func:`~sklearn_lama.save_weights` does not store
        them: a loaded estimator has ``callbacks=None``.""",
        identifies_fit=False,
    ),
    "warm_start": Param(
        "bool",
        ["boolean"],
        """When the estimator is already fitted, ``fit`` continues training the
        current network, weights and optimizer state, for ``max_epochs`` more
        epochs instead of starting over. ``X`` must be of the kind seen in the
        first fit (the same vocabulary, or the same number of tokens) and ``y``
        may only hold labels of ``classes_``; architecture parameters must not
        change. The learning rate and the other optimizer settings are taken
        from the current parameters, the optimizer's moments are kept (unless
        ``optimizer`` changed). Early stopping starts afresh on each call.
        :meth:`partial_fit` always continues, one epoch per call.""",
        identifies_fit=False,
    ),
    "checkpoint": Param(
        "str or path-like",
        [str, os.PathLike, None],
        """File name for checkpoints in the format of
        :func:`~sklearn_lama.save_weights`, written after each epoch that
        lowers the validation loss (after every epoch when no validation split
        is used), through skorch's :class:`~skorch.callbacks.Checkpoint`.
        Every fit writes its own file: ``{fit}`` in the name is replaced by 12
        hex digits identifying the parameters and the training data (inserted
        before the suffix when absent: ``"run.safetensors"`` becomes
        ``"run-3f2a9c1b0d4e.safetensors"``), so the fits of a ``GridSearchCV`` never
        overwrite each other and a rerun of the same fit finds its file again;
        skorch's fields (``{last_epoch[epoch]}``) work too.
        ``checkpoint_path_`` names the file. Each write replaces the file
        atomically, so a killed process loses at most the epoch in progress,
        and ``load_weights(path).set_params(warm_start=True).fit(X, y)``
        resumes. A directory, or a file in a directory that does not exist or
        cannot be written, raises ``ValueError`` before training starts.""",
        identifies_fit=False,
    ),
    "device": Param(
        "str or torch.device",
        [str, torch.device],
        """Where the network trains and predicts: ``"cpu"``, ``"cuda"``,
        ``"cuda:N"`` or ``"mps"`` (Apple GPUs), where available.""",
        identifies_fit=False,
    ),
    "precision": Param(
        '{"32", "bf16", "16-mixed"}',
        [StrOptions(set(PRECISIONS))],
        """Arithmetic of the forward pass. ``"32"``: float32 throughout.
        ``"bf16"``: :func:`torch.autocast` to bfloat16 (on the CPU, and on
        GPUs that support it); ``"16-mixed"``: autocast to float16 with
        gradient scaling (:class:`torch.amp.GradScaler`), CUDA only: on
        another device it raises ``ValueError`` before training (float16 is
        not faster on CPUs; use ``"bf16"`` there). Weights, optimizer state,
        loss and the returned probabilities stay float32. A model trained with
        ``"16-mixed"`` and loaded where CUDA is missing predicts in float32.""",
    ),
    "torch_threads": Param(
        "int or None",
        [
            Interval(Integral, 1, None, closed="left"),
            Interval(Integral, None, -1, closed="right"),
            None,
        ],
        """torch's intra-op threads during ``fit``, ``predict`` and the other
        methods; the caller's setting is restored afterwards. ``None`` means
        1, as ``n_jobs=None`` does in scikit-learn: on a machine that other
        processes keep busy, threads beyond the idle cores spin waiting for
        each other, and under a parallel search (loky, Dask, Ray) each fit
        then keeps to one core. A positive int asks for that many; a
        negative one counts from the CPUs the process was given
        (``OMP_NUM_THREADS`` if set, else its CPU affinity): -1 is all of
        them. See the user guide's "Scaling out" page.""",
        identifies_fit=False,
    ),
    "max_batch_tokens": Param(
        "int",
        [Interval(Integral, 1, None, closed="left")],
        """Budget of padded tokens (documents x longest length) of every batch,
        in training and inference; a longer document is a batch of its own.
        Memory grows linearly with it (the reliability page gives each
        model's bytes per token): raise it on a GPU with memory to spare.""",
    ),
    "verbose": Param(
        "int",
        ["verbose"],
        """Above 0, print a progress bar and a per-epoch table of training
        loss/accuracy and validation loss/accuracy.""",
        identifies_fit=False,
    ),
    "random_state": Param(
        "int, RandomState instance or None",
        ["random_state"],
        """Seeds initialisation, shuffling, dropout and the validation split. With
        an int, fits on the same data give the same model, whatever the order
        of the documents.""",
    ),
}
