"""Open-vocabulary subword units for translation, with format placeholders kept intact.

Subwords are byte-pair encoding (Sennrich, Haddow & Birch, 2016) learned by SentencePiece (Kudo &
Richardson, 2018) on the training text, offline. Characters never seen in training fall back to
their UTF-8 bytes, so any text can be encoded and decoded.

Software messages hold format placeholders (``%s``, ``%(name)s``, ``%1$d``, ``{name}``, Qt's
``%1``) that a translation must carry unchanged. Before subword segmentation each distinct
placeholder of a source is replaced by a numbered private-use character, one atomic token; the same
placeholder in the target becomes the same token, so the model learns to copy tokens, and decoding
puts the source's placeholder back in place of each token.
"""

import importlib
import io
import re

import numpy as np

from ..text._sequences import N_RESERVED, OOV_ID, PAD_ID

__all__ = [
    "BOS_ID",
    "EOS_ID",
    "PLACEHOLDER",
    "SubwordModel",
    "protect_placeholders",
    "restore_placeholders",
]

# Padding and unknown subwords take the ids they have in every token vocabulary of the package;
# the start and end of a sentence, which only translation needs, the next two.
BOS_ID, EOS_ID = N_RESERVED, N_RESERVED + 1

#: printf conversions (with ``%(name)``, ``%1$`` and length modifiers), Qt's ``%1``, ``{...}``.
#: A width does not start with 0 (a flag), so that flags and width split a run of digits one way
#: only: with ``\d+`` a ``%`` before a long run of zeros took time quadratic in its length.
PLACEHOLDER = re.compile(
    r"%(?:\(\w+\)|\d+\$)?[-+ #0']*(?:[1-9]\d*|\*)?(?:\.(?:\d+|\*))?(?:hh|h|ll|l|L|q|j|z|t)?"
    r"[diouxXeEfFgGaAcspnm%]"
    r"|%\d+"
    r"|\{[\w.\[\]]*(?:![rsa])?(?::[^{}]*)?\}"
)
#: One private-use character per placeholder slot: never in real text, one token each.
N_SLOTS = 16
SLOTS = tuple(chr(0xE000 + i) for i in range(N_SLOTS))
_SLOT = re.compile("[" + SLOTS[0] + "-" + SLOTS[-1] + "]")
_SPACES = re.compile(r"\s+")
_SURROGATE = re.compile("[\ud800-\udfff]")


def optional_import(name):
    """Import ``name``, an optional dependency of the translator, or say how to install it."""
    try:
        return importlib.import_module(name)
    except ImportError:
        raise ImportError(
            f"DuoTranslator needs the {name} package: pip install 'sklearn-lama[translation]'."
        ) from None


def _sentencepiece():
    return optional_import("sentencepiece")


def normalize_spaces(text):
    """One space for every run of white space, none at either end (what subwords preserve).

    A lone surrogate, which a Python string may hold but UTF-8 cannot encode, becomes U+FFFD
    (the replacement character), so that any string can be segmented.
    """
    return _SURROGATE.sub("\ufffd", _SPACES.sub(" ", text)).strip()


def protect_placeholders(text, placeholders=None):
    """Replace placeholders by slot characters.

    Parameters
    ----------
    text : str
    placeholders : list of str, optional
        The slots already assigned (a source's, when ``text`` is its translation): a placeholder
        among them takes its slot, another one stays as text. ``None``: assign slots to the
        distinct placeholders of ``text`` in order of appearance (at most ``N_SLOTS``).

    Returns
    -------
    masked : str
    placeholders : list of str
        Slot ``i`` stands for ``placeholders[i]``.
    """
    assign = placeholders is None
    placeholders = [] if assign else placeholders

    def slot(match):
        found = match.group(0)
        if found not in placeholders and assign and len(placeholders) < N_SLOTS:
            placeholders.append(found)
        return SLOTS[placeholders.index(found)] if found in placeholders else found

    return PLACEHOLDER.sub(slot, text), placeholders


def restore_placeholders(text, placeholders):
    """Put the placeholders back for their slots; a slot the source did not have is dropped."""

    def back(match):
        i = SLOTS.index(match.group(0))
        return placeholders[i] if i < len(placeholders) else ""

    return normalize_spaces(_SLOT.sub(back, text))


class SubwordModel:
    """A SentencePiece BPE model trained on ``texts``; ids 0-3: padding, unknown, BOS, EOS.

    Parameters
    ----------
    texts : list of str
        Training text.
    vocab_size : int
        Target number of subwords; fewer when the text cannot support that many (a soft limit).
    """

    def __init__(self, texts, vocab_size):
        proto = io.BytesIO()
        _sentencepiece().SentencePieceTrainer.train(
            sentence_iterator=iter(texts),
            model_writer=proto,
            model_type="bpe",
            vocab_size=vocab_size,
            hard_vocab_limit=False,
            character_coverage=1.0,
            byte_fallback=True,
            normalization_rule_name="identity",
            num_threads=1,
            pad_id=PAD_ID,
            unk_id=OOV_ID,
            bos_id=BOS_ID,
            eos_id=EOS_ID,
            user_defined_symbols=list(SLOTS),
            minloglevel=2,
        )
        self._load(proto.getvalue())

    def _load(self, proto):
        self.proto = bytes(proto)
        self.processor = _sentencepiece().SentencePieceProcessor(model_proto=self.proto)

    @classmethod
    def from_proto(cls, proto):
        """The model whose serialised form is ``proto`` (bytes)."""
        model = cls.__new__(cls)
        model._load(proto)
        return model

    def __getstate__(self):
        return {"proto": self.proto}

    def __setstate__(self, state):
        self._load(state["proto"])

    def __len__(self):
        return self.processor.get_piece_size()

    def encode(self, texts):
        """Subword ids of each text, as ``int64`` arrays."""
        return [np.asarray(ids, dtype=np.int64) for ids in self.processor.encode(list(texts))]

    def decode(self, ids):
        """Texts of lists of ids (special ids are skipped)."""
        return self.processor.decode([[int(i) for i in row] for row in ids])
