"""Validation and tokenisation of raw documents, shared by the text transformers."""

import re
from collections.abc import Iterable
from itertools import chain, islice, repeat

import numpy as np
from sklearn.feature_extraction.text import CountVectorizer

from ._sequences import OOV_ID


def check_documents(raw_documents, encoding="utf-8", param="raw_documents"):
    """Return ``raw_documents`` as a list of ``str``, refusing what is not a corpus.

    Accepts any iterable of ``str`` (lists, tuples, numpy arrays, pandas or
    polars Series, generators), a one-column table (a pandas or polars
    DataFrame, a 2-D array: what a ``ColumnTransformer`` hands a
    transformer given a list of one column) and ``bytes`` documents,
    decoded with ``encoding``. Messages name the column when it has a name.
    """
    return list(iter_documents(raw_documents, encoding, param))


def iter_documents(raw_documents, encoding="utf-8", param="raw_documents"):
    """Check that ``raw_documents`` is a corpus and yield its documents as ``str``.

    The corpus itself is checked at once; each document is checked and decoded
    when it is reached, so a stream is read once and never held in memory.
    """
    raw_documents, param = _text_column(raw_documents, param)
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
            f"{param} must be one-dimensional (one document per entry) or one column, "
            f"got an array of shape {raw_documents.shape}."
        )
    return _decoded(raw_documents, encoding, param)


def _text_column(raw_documents, param):
    """The documents of a one-column table (or ``raw_documents`` itself), and how to name them.

    A named column (a Series, a frame's column) is named in the messages:
    ``param`` becomes ``"column 'body'"``.
    """
    shape = getattr(raw_documents, "shape", None)
    if shape is not None and len(shape) == 2 and not isinstance(raw_documents, np.ndarray):
        columns = list(getattr(raw_documents, "columns", range(shape[1])))
        if shape[1] != 1:
            raise ValueError(
                f"{param} must be one column of documents, got a table of {shape[1]} "
                f"columns {columns[:10]}: select the text column, e.g. by its name "
                "alone ('body', not ['body', ...]) in a ColumnTransformer."
            )
        # pandas' and polars' DataFrames: their one column, as a Series.
        raw_documents = raw_documents[columns[0]]
    elif isinstance(raw_documents, np.ndarray) and raw_documents.shape[1:] == (1,):
        # Other shapes are refused by the caller's one-dimensional check.
        raw_documents = raw_documents[:, 0]
    name = getattr(raw_documents, "name", None)
    if name is not None:
        param = f"column {name!r}"
    return raw_documents, param


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


# Documents tokenised and encoded at a time: bounds the memory a stream of
# documents takes, while each batch's tokens are looked up in one pass.
BATCH_DOCUMENTS = 1024


def build_list_analyzer(transformer):
    """Return the function mapping a list of documents to the list of their tokens.

    :func:`build_analyzer`'s function applied to each document of the list:
    the one tokenisation of the text transformers, which read documents in
    lists of :data:`BATCH_DOCUMENTS` (:func:`iter_token_lists`,
    :func:`encode_documents`).
    """
    analyze = build_analyzer(transformer)

    def split(documents):
        return [analyze(document) for document in documents]

    return split


def _batches(documents):
    """Lists of at most :data:`BATCH_DOCUMENTS` consecutive documents of ``documents``."""
    documents = iter(documents)
    while batch := list(islice(documents, BATCH_DOCUMENTS)):
        yield batch


def iter_token_lists(documents, split):
    """Yield the tokens of each document of ``documents``, split in batches by ``split``.

    ``split`` is a function of :func:`build_list_analyzer`; documents are
    read :data:`BATCH_DOCUMENTS` at a time.
    """
    for batch in _batches(documents):
        yield from split(batch)


def encode_documents(documents, split, vocabulary, discard_oov, max_len):
    """Map documents to ragged token ids: one flat ``int32`` array plus offsets.

    ``split`` tokenises a list of documents (:func:`build_list_analyzer`);
    words outside ``vocabulary`` become the OOV id, or are dropped with
    ``discard_oov``; documents are cut to ``max_len`` ids. Documents are read
    :data:`BATCH_DOCUMENTS` at a time and each batch is looked up in one
    pass, so memory is linear in the number of tokens.
    """
    ids, lengths = [np.zeros(0, np.int32)], [np.zeros(0, np.int64)]
    get = vocabulary.get
    for batch in _batches(documents):
        tokens = split(batch)
        counts = np.fromiter(map(len, tokens), np.int64, len(tokens))
        flat = np.fromiter(
            map(get, chain.from_iterable(tokens), repeat(OOV_ID)), np.int32, int(counts.sum())
        )
        owner = np.repeat(np.arange(len(tokens)), counts)
        if discard_oov:
            keep = flat != OOV_ID
            flat, owner = flat[keep], owner[keep]
            counts = np.bincount(owner, minlength=len(tokens)).astype(np.int64)
        if max_len is not None:
            starts = np.cumsum(counts) - counts
            keep = np.arange(len(flat)) - starts[owner] < max_len
            flat = flat[keep]
            counts = np.minimum(counts, max_len)
        ids.append(flat)
        lengths.append(counts)
    offsets = np.zeros(sum(map(len, lengths)) + 1, np.int64)
    np.cumsum(np.concatenate(lengths), out=offsets[1:])
    return np.concatenate(ids), offsets
