"""PyTorch modules of the models: pure functions of tensors and masks.

These are the building blocks behind the estimators, usable on their own in
torch code. Inputs are ``(B, T, d)`` float tensors with a ``(B, T)`` boolean
mask that is True on real tokens.
"""

from ._duo import DuoEncoderLayer, DuoLayerNorm, DuoModule, DuoMultiHeadAttention
from ._fcsr import FCSRCell, FCSRModule, FeatureAttention, fcsr_lr_lambda, fofe
from ._lama import BiGRUEncoder, LAMAAttention, LAMAModule
from ._network import SequenceNetwork

__all__ = [
    "BiGRUEncoder",
    "DuoEncoderLayer",
    "DuoLayerNorm",
    "DuoModule",
    "DuoMultiHeadAttention",
    "FCSRCell",
    "FCSRModule",
    "FeatureAttention",
    "LAMAAttention",
    "LAMAModule",
    "SequenceNetwork",
    "fcsr_lr_lambda",
    "fofe",
]
