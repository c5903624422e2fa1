"""Validation and tokenisation of raw documents, shared by the text transformers."""

import re
from array import array
from collections.abc import Iterable

import numpy as np
from sklearn.feature_extraction.text import CountVectorizer

from ._sequences import OOV_ID


def check_documents(raw_documents, encoding="utf-8", param="raw_documents"):
    """Return ``raw_documents`` as a list of ``str``, refusing what is not a corpus.

    Accepts any iterable of ``str`` (lists, tuples, numpy arrays, pandas Series,
    generators) and ``bytes`` documents, decoded with ``encoding``.
    """
    return list(iter_documents(raw_documents, encoding, param))


def iter_documents(raw_documents, encoding="utf-8", param="raw_documents"):
    """Check that ``raw_documents`` is a corpus and yield its documents as ``str``.

    The corpus itself is checked at once; each document is checked and decoded
    when it is reached, so a stream is read once and never held in memory.
    """
    if isinstance(raw_documents, (str, bytes)):
        raise TypeError(
            f"{param} must be an iterable of documents (e.g. a list of str), got a "
            "single string. Wrap it in a list: [document]."
        )
    if raw_documents is None or not isinstance(raw_documents, Iterable):
        raise TypeError(
            f"{param} must be an iterable of documents (e.g. a list of str), got "
            f"{type(raw_documents).__name__}."
        )
    if isinstance(raw_documents, np.ndarray) and raw_documents.ndim != 1:
        raise ValueError(
            f"{param} must be one-dimensional (one document per entry), got an array "
            f"of shape {raw_documents.shape}."
        )
    return _decoded(raw_documents, encoding, param)


def _decoded(raw_documents, encoding, param):
    for i, doc in enumerate(raw_documents):
        if isinstance(doc, bytes):
            try:
                doc = doc.decode(encoding)
            except UnicodeDecodeError as exc:
                raise ValueError(
                    f"Document {i} of {param} cannot be decoded with "
                    f"encoding={encoding!r}: {exc.reason} at byte {exc.start}."
                ) from None
        elif not isinstance(doc, str):
            raise TypeError(
                f"Document {i} of {param} is {type(doc).__name__}, expected str. "
                "Missing documents (None/NaN) must be replaced, e.g. by ''."
            )
        yield doc


def build_analyzer(transformer):
    """Return the function mapping one document to its tokens, in document order.

    scikit-learn's own word analyzer (that of
    :class:`~sklearn.feature_extraction.text.CountVectorizer` with unigrams),
    configured from the ``preprocessor``, ``strip_accents``, ``lowercase``,
    ``tokenizer``, ``token_pattern`` and ``stop_words`` parameters of
    ``transformer``, with their meaning there.
    """
    uses_pattern = transformer.tokenizer is None
    words = CountVectorizer(
        analyzer="word",
        ngram_range=(1, 1),
        preprocessor=transformer.preprocessor,
        strip_accents=transformer.strip_accents,
        lowercase=transformer.lowercase,
        tokenizer=transformer.tokenizer,
        # None when unused, so that a tokenizer does not warn about our default pattern.
        token_pattern=transformer.token_pattern if uses_pattern else None,
        stop_words=transformer.stop_words,
    )
    try:
        return words.build_analyzer()
    except re.error as exc:
        raise ValueError(
            f"token_pattern {transformer.token_pattern!r} is not a valid regular "
            f"expression: {exc}."
        ) from None
    except ValueError as exc:
        raise ValueError(f"token_pattern {transformer.token_pattern!r}: {exc}") from None


def encode_documents(documents, tokenize, vocabulary, discard_oov, max_len):
    """Map documents to ragged token ids: one flat ``int32`` array plus offsets.

    Words outside ``vocabulary`` become the OOV id, or are dropped with
    ``discard_oov``; documents are cut to ``max_len`` ids. Memory is linear in
    the number of tokens.
    """
    ids = array("i")
    offsets = array("q", [0])
    for doc in documents:
        doc_ids = [vocabulary.get(token, OOV_ID) for token in tokenize(doc)]
        if discard_oov:
            doc_ids = [i for i in doc_ids if i != OOV_ID]
        ids.extend(doc_ids[:max_len])
        offsets.append(len(ids))
    flat = np.frombuffer(ids, dtype=np.int32) if ids else np.zeros(0, np.int32)
    return flat, np.frombuffer(offsets, dtype=np.int64)
