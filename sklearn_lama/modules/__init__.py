"""PyTorch modules of the models: pure functions of tensors and masks.

These are the building blocks behind the estimators, usable on their own in
torch code. Inputs are ``(B, T, d)`` float tensors with a ``(B, T)`` boolean
mask that is True on real tokens.

Every classifier core (:class:`LAMAModule`, :class:`FCSRModule`,
:class:`DuoModule`) has ``token_attention(inputs, mask)``, which takes what
:meth:`SequenceNetwork.embed` returns for it and gives a ``(B, H, T)`` tensor:
for each document and each of its ``H`` heads or streams (LAMA: ``n_heads``;
FCSR: 1; Duo: 2), weights over its tokens that sum to 1 over the real tokens,
are exactly 0 on padding, and do not depend on the rest of the batch.
"""

from ._duo import (
    DuoEncoderLayer,
    DuoLayerNorm,
    DuoModule,
    DuoMultiHeadAttention,
    FoldedDuoHead,
)
from ._duo_translation import (
    DuoDecoderLayer,
    DuoTranslationModule,
    StreamAttention,
    causal_mask,
)
from ._fcsr import FCSRCell, FCSRModule, FeatureAttention, fcsr_lr_lambda, fofe
from ._lama import BiGRUEncoder, LAMAAttention, LAMAModule
from ._losses import LabelwiseBCE, TaskwiseCrossEntropy
from ._network import (
    ConcatenateTables,
    FoldedNetwork,
    NgramFeatures,
    PairFeatures,
    SequenceNetwork,
    TableStreams,
    TokenInputs,
    document_folds,
)

__all__ = [
    "BiGRUEncoder",
    "ConcatenateTables",
    "DuoDecoderLayer",
    "DuoEncoderLayer",
    "DuoLayerNorm",
    "DuoModule",
    "DuoMultiHeadAttention",
    "DuoTranslationModule",
    "FCSRCell",
    "FCSRModule",
    "FeatureAttention",
    "FoldedDuoHead",
    "FoldedNetwork",
    "LAMAAttention",
    "LAMAModule",
    "LabelwiseBCE",
    "NgramFeatures",
    "PairFeatures",
    "SequenceNetwork",
    "StreamAttention",
    "TableStreams",
    "TaskwiseCrossEntropy",
    "TokenInputs",
    "causal_mask",
    "document_folds",
    "fcsr_lr_lambda",
    "fofe",
]
