"""The Duo Transformer translator: subwords, their start vectors, decoding."""

from ._translator import DuoTranslator

__all__ = ["DuoTranslator"]
