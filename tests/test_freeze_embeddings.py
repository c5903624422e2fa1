"""Classifier defaults that depend on the word vectors: corpus-trained or pretrained ("auto")."""

import numpy as np
import pytest
from sklearn.pipeline import make_pipeline

from sklearn_lama import (
    DuoClassifier,
    LAMAClassifier,
    MetaEmbeddingTransformer,
    TokenSequences,
    Word2VecVectorizer,
    load_weights,
    save_weights,
)
from tests._tolerances import Exact, assert_identical


def _glove_file(tmp_path, texts):
    """A GloVe text file holding a random vector for every word of ``texts``."""
    rng = np.random.RandomState(0)
    words = sorted({w for text in texts for w in text.split()})
    path = tmp_path / "vectors.txt"
    path.write_text("".join(f"{w} {' '.join(map(str, rng.randn(6)))}\n" for w in words))
    return str(path)


def _frozen(classifier):
    tables = [p for n, p in classifier.net_.module_.named_parameters() if "lookup" in n]
    assert tables, "the network has no embedding table"
    return not any(p.requires_grad for p in tables)


@pytest.mark.parametrize(
    "pretrained, setting, frozen",
    [(True, "auto", True), (False, "auto", False), (True, False, False), (False, True, True)],
)
def test_lama_freezes_pretrained_vectors_by_default(
    tmp_path, toy_corpus, pretrained, setting, frozen
):
    texts, labels = toy_corpus
    vectors = (
        Word2VecVectorizer(pretrained=_glove_file(tmp_path, texts))
        if pretrained
        else Word2VecVectorizer(pretrained=None, vector_size=6, epochs=2, random_state=0)
    )
    clf = LAMAClassifier(freeze_embeddings=setting, max_epochs=1, random_state=0)
    pipe = make_pipeline(vectors, clf).fit(texts, labels)
    assert clf.input_adapter_.pretrained is pretrained
    assert _frozen(clf) is frozen
    # The fitted adapter keeps what "auto" resolved by, through saving and loading.
    save_weights(pipe, tmp_path / "pipe.safetensors")
    loaded = load_weights(tmp_path / "pipe.safetensors")
    assert loaded[-1].input_adapter_.pretrained is pretrained
    assert_identical(loaded.predict(texts), pipe.predict(texts), why=Exact.COPY)


def test_one_pretrained_table_of_several_makes_the_input_pretrained(tmp_path, toy_corpus):
    texts, labels = toy_corpus
    meta = MetaEmbeddingTransformer(
        [
            ("glove", Word2VecVectorizer(pretrained=_glove_file(tmp_path, texts))),
            (
                "corpus",
                Word2VecVectorizer(pretrained=None, vector_size=4, epochs=2, random_state=0),
            ),
        ]
    )
    clf = DuoClassifier(max_epochs=1, random_state=0)
    make_pipeline(meta, clf).fit(texts, labels)
    assert clf.input_adapter_.pretrained is True
    assert not _frozen(clf)  # Duo keeps fine-tuning: its default is no "auto"


def test_inputs_without_tables_resolve_as_corpus_vectors():
    ids = np.random.RandomState(0).randint(1, 20, size=(40, 6))
    clf = LAMAClassifier(max_epochs=1, random_state=0).fit(ids, np.arange(40) % 2)
    assert clf.input_adapter_.pretrained is False and not _frozen(clf)
    table = np.random.RandomState(0).randn(20, 3).astype(np.float32)
    sequences = TokenSequences(ids.ravel(), np.arange(41) * 6, (table,), "v", pretrained=[True])
    clf = LAMAClassifier(max_epochs=1, random_state=0).fit(sequences, np.arange(40) % 2)
    assert _frozen(clf)


def test_auto_is_refused_where_no_default_depends_on_the_vectors():
    with pytest.raises(ValueError, match="freeze_embeddings"):
        DuoClassifier(freeze_embeddings="auto").fit(np.ones((4, 3), int), [0, 1, 0, 1])
    with pytest.raises(ValueError, match="pretrained must say it of each of the 1 tables"):
        TokenSequences([2], [0, 1], (np.zeros((3, 2), np.float32),), "v", pretrained=[1, 0])
