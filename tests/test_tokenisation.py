"""The text transformers' tokens are those of scikit-learn's word analyzer, read in batches."""

import numpy as np
import pytest
from sklearn.feature_extraction.text import CountVectorizer

from sklearn_lama import MetaEmbeddingTransformer, Word2VecVectorizer
from sklearn_lama.text import _text
from sklearn_lama.text._text import (
    build_analyzer,
    build_list_analyzer,
    encode_documents,
    iter_token_lists,
)

# Characters of every kind the default pattern tells apart: ASCII letters,
# digits and punctuation, NUL, accented and
# Greek letters (final sigma lower-cases by context), combining marks,
# numerals outside 0-9, Unicode spaces and control characters read as spaces,
# symbols, CJK and an astral character.
ALPHABET = list(
    "aZ09_ .,!?'\"-()[]{}#\n\t\r\x0b\x0c\x1c\x1f\x00\x85"
    "éÉßİıΣσςΑ\u0301\u0308²½Ⅻ٣\u00a0\u2003\u2028\u200b\u200d€©→中文\U0001f600"
)


def _random_documents(seed, n=300):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(0, 40, n)
    # Indices, not rng.choice(ALPHABET): NumPy's strings drop the NUL character.
    return ["".join(ALPHABET[i] for i in rng.integers(0, len(ALPHABET), size)) for size in lengths]


def _sklearn_tokens(documents, **params):
    """The tokens of scikit-learn's word analyzer, with the transformers' default pattern."""
    params = {"token_pattern": Word2VecVectorizer().token_pattern, **params}
    analyze = CountVectorizer(**params).build_analyzer()
    return [analyze(doc) for doc in documents]


@pytest.mark.parametrize("transformer", [Word2VecVectorizer, MetaEmbeddingTransformer])
@pytest.mark.parametrize("lowercase", [True, False])
@pytest.mark.parametrize("seed", range(3))
def test_tokens_are_those_of_the_sklearn_analyzer(seed, lowercase, transformer):
    documents = _random_documents(seed)
    expected = _sklearn_tokens(documents, lowercase=lowercase)
    # Upper-case sigma lower-cases to the final form at a word's end.
    documents += ["ΟΔΟΣ", "ΣΑ", "x ΣΣ"]
    expected += _sklearn_tokens(documents[-3:], lowercase=lowercase)
    sources = ([],) if transformer is MetaEmbeddingTransformer else ()
    split = build_list_analyzer(transformer(*sources, lowercase=lowercase))
    assert split(documents) == expected
    assert list(iter_token_lists(iter(documents), split)) == expected


def test_other_tokenisation_settings_are_those_of_the_sklearn_analyzer():
    documents = ["The Cat's hat, the CAT!", "an a-b c_d", "café naïve"]
    for params in (
        {"token_pattern": r"(?u)\b\w\w+\b"},
        {"stop_words": "english"},
        {"strip_accents": "ascii"},
        {"tokenizer": str.split, "token_pattern": None},
        {"preprocessor": str.upper},
    ):
        vectorizer = Word2VecVectorizer(**{k: v for k, v in params.items() if v is not None})
        assert build_list_analyzer(vectorizer)(documents) == _sklearn_tokens(documents, **params)


@pytest.mark.parametrize("discard_oov", [False, True])
@pytest.mark.parametrize("max_len", [None, 1, 3])
def test_encode_documents_across_batches(monkeypatch, discard_oov, max_len):
    # Batches of 7 documents: the ids and offsets must not depend on where batches end.
    monkeypatch.setattr(_text, "BATCH_DOCUMENTS", 7)
    documents = _random_documents(7, n=50)
    vectorizer = Word2VecVectorizer()
    analyze = build_analyzer(vectorizer)
    vocabulary = {token: 2 + i for i, token in enumerate(sorted({*analyze("".join(ALPHABET))}))}
    ids, offsets = encode_documents(
        iter(documents), build_list_analyzer(vectorizer), vocabulary, discard_oov, max_len
    )
    expected = []
    for doc in documents:
        doc_ids = [vocabulary.get(t, 1) for t in analyze(doc)]
        if discard_oov:
            doc_ids = [i for i in doc_ids if i != 1]
        expected.append(doc_ids[:max_len])
    assert ids.dtype == np.int32 and offsets.dtype == np.int64
    assert [ids[a:b].tolist() for a, b in zip(offsets[:-1], offsets[1:])] == expected


def test_encode_no_documents():
    ids, offsets = encode_documents(iter([]), lambda docs: [], {}, False, None)
    assert ids.shape == (0,) and offsets.tolist() == [0]
