"""FCSRClassifier: the estimator around :class:`~sklearn_lama.modules.FCSRModule`."""

from functools import partial
from numbers import Integral, Real

from skorch.callbacks import LRScheduler
from torch.optim.lr_scheduler import LambdaLR

from ..modules import FCSRModule, fcsr_lr_lambda
from ..training._batching import MAX_BATCH_TOKENS
from ..training._parameters import INFERENCE_BATCH
from ..utils._parameters import Param
from ..utils._persistence import register
from ..utils._sklearn_compat import Interval, StrOptions
from ._base import BaseSequenceClassifier
from ._parameters import ADDITIONS_OFF, inference_batch_description, shared_parameters

__all__ = ["FCSRClassifier"]


@register
class FCSRClassifier(BaseSequenceClassifier):
    """Full-context semantic representation (FCSR) text classifier.

    One layer: FOFE compresses each word's whole left and right context with
    forgetting factor ``alpha`` (Eq. 2-3 and 12-13 of the FCSR paper), a Context
    Integration Sub-cell and a Semantic Analysis Sub-cell, each with four
    sigmoid gates, combine them (Eq. 4-8), and feature attention pools the
    ``4n`` features over time (Eq. 9; see
    :class:`~sklearn_lama.modules.FeatureAttention` for how its inconsistent
    shapes are resolved). The cost is linear in the document length.

    From the paper: ``alpha=0.2``, Adam, learning rate 0.01, and (optionally,
    ``lr_schedule="paper"``) the epoch-wise decay of Eq. 16 with
    ``epoch_max = max_epochs``. Dropout 0.3, batch size 32 and ``max_epochs=20``
    are this library's choices (the paper sets them per dataset).

    Parameters
    ----------
    %(parameters)s

    Attributes
    ----------
    %(fitted_attributes)s

    References
    ----------
    .. [1] "Full-context semantic representation in sentence level" (the
       FCSR paper; authors as listed in its preprint).
    %(shared_references)s

    Examples
    --------
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn_lama import FCSRClassifier, Word2VecVectorizer
    >>> docs = ["good great fine nice", "bad awful poor sad"] * 20
    >>> labels = ["pos", "neg"] * 20
    >>> pipe = make_pipeline(
    ...     Word2VecVectorizer(vector_size=16, min_count=1, random_state=0),
    ...     FCSRClassifier(alpha=0.5, random_state=0),
    ... ).fit(docs, labels)
    >>> pipe.predict(["great nice", "awful sad"]).tolist()
    ['pos', 'neg']
    """

    #: The paper's settings where the defaults differ (the library's additions
    #: off, see the user guide's "Paper-faithful settings"):
    #: ``clf.set_params(**clf.paper_parameters)``.
    paper_parameters = {
        **ADDITIONS_OFF,
    }

    # Padded tokens of a prediction batch on the CPU (BaseSequenceClassifier._inference_budget).
    _inference_tokens = 2048

    _parameters = {
        "alpha": Param(
            "float",
            [Interval(Real, 0, 1, closed="left")],
            "FOFE forgetting factor, in [0, 1).",
        ),
        "learn_alpha": Param(
            "bool",
            ["boolean"],
            "Learn ``alpha`` (starting from ``alpha``, which must then be > 0).",
        ),
        "hidden_size": Param(
            "int or None",
            [Interval(Integral, 1, None, closed="left"), None],
            """Width ``n`` of the cell. ``None`` uses the embedding size as the paper
            does; an int adds a linear projection of the embeddings first.""",
        ),
        "pooling": Param(
            '{"attention", "mean"}',
            [StrOptions({"attention", "mean"})],
            """``"attention"`` is the paper's feature attention (Eq. 9); ``"mean"``
            averages ``R_t`` over the document's tokens.""",
        ),
        "dropout": Param(
            "float",
            [Interval(Real, 0, 1, closed="left")],
            "Dropout before the output layer.",
        ),
        "lr_schedule": Param(
            '{"paper"} or None',
            [StrOptions({"paper"}), None],
            """``"paper"`` multiplies the learning rate by Eq. 16's factor each epoch,
            with ``epoch_max = max_epochs``: the paper's 40 is
            ``max_epochs=40``; with the default 20 the decay is twice as fast.""",
        ),
        "context_window": Param(
            "int or None",
            [Interval(Integral, 1, None, closed="left"), None],
            """Limited context window of the paper's §5.3 (Fig. 3): the FOFE left and
            right contexts sum only the ``context_window`` nearest words on each
            side. ``None`` (the paper's FCSR) uses the whole context.""",
        ),
        **shared_parameters(
            inference_batch_size={"description": inference_batch_description(_inference_tokens)},
            optimizer={"description": '``"sgd"`` uses ``momentum``; the paper uses Adam.'},
            embedding_dropout={
                "description": """Dropout on the token vectors while training (the
                paper has none: 0; the results page compares other values).""",
            },
        ),
    }

    def __init__(
        self,
        alpha=0.2,
        *,
        learn_alpha=False,
        hidden_size=None,
        pooling="attention",
        dropout=0.3,
        lr_schedule=None,
        context_window=None,
        embedding_dim=100,
        freeze_embeddings=False,
        embedding_dropout=0.0,
        nb_unigram_weight=0.0,
        nb_bigram_weight=3.0,
        nb_folds=10,
        max_epochs=20,
        max_time=None,
        batch_size=32,
        optimizer="adam",
        lr=0.01,
        momentum=0.9,
        weight_decay=0.0,
        early_stopping=True,
        validation_fraction=0.1,
        patience=1,
        ema_horizon=0.5,
        class_weight=None,
        calibration=None,
        callbacks=None,
        warm_start=False,
        checkpoint=None,
        device="cpu",
        precision="32",
        torch_threads=None,
        max_batch_tokens=MAX_BATCH_TOKENS,
        inference_batch_size=INFERENCE_BATCH,
        verbose=0,
        random_state=None,
    ):
        self.alpha = alpha
        self.learn_alpha = learn_alpha
        self.hidden_size = hidden_size
        self.pooling = pooling
        self.dropout = dropout
        self.lr_schedule = lr_schedule
        self.context_window = context_window
        self.embedding_dim = embedding_dim
        self.freeze_embeddings = freeze_embeddings
        self.embedding_dropout = embedding_dropout
        self.nb_unigram_weight = nb_unigram_weight
        self.nb_bigram_weight = nb_bigram_weight
        self.nb_folds = nb_folds
        self.max_epochs = max_epochs
        self.max_time = max_time
        self.batch_size = batch_size
        self.optimizer = optimizer
        self.lr = lr
        self.momentum = momentum
        self.weight_decay = weight_decay
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.patience = patience
        self.ema_horizon = ema_horizon
        self.class_weight = class_weight
        self.calibration = calibration
        self.callbacks = callbacks
        self.warm_start = warm_start
        self.checkpoint = checkpoint
        self.device = device
        self.precision = precision
        self.torch_threads = torch_threads
        self.max_batch_tokens = max_batch_tokens
        self.inference_batch_size = inference_batch_size
        self.verbose = verbose
        self.random_state = random_state

    def _check_params(self):
        if self.learn_alpha and self.alpha == 0:
            raise ValueError(
                "alpha must be > 0 with learn_alpha=True (it is learned through its "
                "logit); got alpha=0."
            )

    def _build_core(self, input_size, n_classes):
        return FCSRModule(
            input_size,
            n_classes,
            hidden_size=self.hidden_size,
            alpha=self.alpha,
            learn_alpha=self.learn_alpha,
            dropout=self.dropout,
            pooling=self.pooling,
            window=self.context_window,
        )

    def _attention_row_labels(self):
        return ["attention"]

    def _extra_callbacks(self):
        if self.lr_schedule is None:
            return []
        return [
            LRScheduler(
                policy=LambdaLR,
                lr_lambda=partial(fcsr_lr_lambda, max_epochs=self.max_epochs),
            )
        ]
