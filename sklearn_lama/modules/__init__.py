"""PyTorch modules of the models: pure functions of tensors and masks.

These are the building blocks behind the estimators, usable on their own in
torch code. Inputs are ``(B, T, d)`` float tensors with a ``(B, T)`` boolean
mask that is True on real tokens.
"""

from ._baselines import TransformerEncoderClassifier
from ._duo import DuoEncoderLayer, DuoLayerNorm, DuoModule, DuoMultiHeadAttention
from ._duo_translation import (
    DuoDecoderLayer,
    DuoTranslationModule,
    StreamAttention,
    causal_mask,
)
from ._fcsr import FCSRCell, FCSRModule, FeatureAttention, fcsr_lr_lambda, fofe
from ._lama import BiGRUEncoder, LAMAAttention, LAMAModule
from ._network import SequenceNetwork

__all__ = [
    "BiGRUEncoder",
    "DuoDecoderLayer",
    "DuoEncoderLayer",
    "DuoLayerNorm",
    "DuoModule",
    "DuoMultiHeadAttention",
    "DuoTranslationModule",
    "FCSRCell",
    "FCSRModule",
    "FeatureAttention",
    "LAMAAttention",
    "LAMAModule",
    "SequenceNetwork",
    "StreamAttention",
    "TransformerEncoderClassifier",
    "causal_mask",
    "fcsr_lr_lambda",
    "fofe",
]
