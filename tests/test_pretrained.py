"""Word2VecVectorizer(pretrained=...): file forms, gensim-data names, uncovered words."""

import bz2
import gzip
import os
from pathlib import Path

import gensim
import numpy as np
import pytest
from gensim.models import KeyedVectors

from sklearn_lama import Word2VecVectorizer
from sklearn_lama.text import _vector_files
from sklearn_lama.text._vectorizer import procrustes
from tests._tolerances import Exact, assert_identical

GENSIM_GLOVE = Path(gensim.__file__).parent / "test" / "test_data" / "test_glove.txt"

ROWS = {"cat": [1, 0, 0], "dog": [0, 1, 0], "bird": [0, 0, 1], "zebra": [1, 1, 1]}
DOCS = ["cat dog", "dog bird", "cat bird fish"] * 3


def _write(path, data):
    Path(path).write_bytes(data if isinstance(data, bytes) else data.encode())
    return str(path)


def _glove_text(rows=ROWS):
    return "".join(f"{w} {' '.join(map(str, v))}\n" for w, v in rows.items())


def _word2vec_text(rows=ROWS):
    return f"{len(rows)} {len(next(iter(rows.values())))}\n" + _glove_text(rows)


def _word2vec_binary(rows=ROWS):
    dim = len(next(iter(rows.values())))
    return f"{len(rows)} {dim}\n".encode() + b"".join(
        w.encode() + b" " + np.asarray(v, "<f4").tobytes() + b"\n" for w, v in rows.items()
    )


FORMS = {"glove": _glove_text, "word2vec": _word2vec_text, "binary": _word2vec_binary}
COMPRESS = {"": lambda b: b, ".gz": gzip.compress, ".bz2": bz2.compress}


def _as_bytes(data):
    return data if isinstance(data, bytes) else data.encode()


@pytest.mark.parametrize("suffix", list(COMPRESS))
@pytest.mark.parametrize("form", list(FORMS))
@pytest.mark.parametrize("fmt", ["auto", "explicit"])
def test_every_form_plain_and_compressed(tmp_path, form, suffix, fmt):
    path = _write(tmp_path / f"vectors{suffix}", COMPRESS[suffix](_as_bytes(FORMS[form]())))
    vec = Word2VecVectorizer(
        pretrained=path,
        min_count=1,
        oov_vectors="drop",
        pretrained_format="auto" if fmt == "auto" else form,
    ).fit(DOCS)
    assert set(vec.vocabulary_) == {"cat", "dog", "bird"}  # fish has no vector here
    for word in ("cat", "dog", "bird"):
        assert_identical(vec.embedding_[vec.vocabulary_[word]], ROWS[word], why=Exact.COPY)
    assert vec.coverage_ == 1.0


def test_compression_is_recognised_by_content(tmp_path):
    path = _write(tmp_path / "vectors.txt", gzip.compress(_word2vec_text().encode()))
    vec = Word2VecVectorizer(pretrained=path, min_count=1, oov_vectors="drop").fit(DOCS)
    assert_identical(vec.embedding_[vec.vocabulary_["dog"]], ROWS["dog"], why=Exact.COPY)


@pytest.mark.parametrize("binary", [False, True])
def test_files_written_by_gensim_read_across_block_boundaries(tmp_path, monkeypatch, binary):
    rng = np.random.RandomState(0)
    words = [f"w{i}" for i in range(50)] + ["naïve", "x"]
    kv = KeyedVectors(vector_size=7)
    kv.add_vectors(words, rng.randn(len(words), 7).astype(np.float32))
    path = str(tmp_path / ("v.bin.gz" if binary else "v.txt.bz2"))
    kv.save_word2vec_format(path, binary=binary)
    monkeypatch.setattr(_vector_files, "_BLOCK", 5)  # records straddle every block
    read, vectors = _vector_files.load_vectors(path, keep=set(words[::3]))
    assert read == words[::3]
    np.testing.assert_allclose(vectors, kv[read], rtol=1e-6)


def test_real_glove_sample_shipped_with_gensim():
    docs = ["the of and a for", "- that on is (was) said"] * 2
    vec = Word2VecVectorizer(pretrained=GENSIM_GLOVE, min_count=1, random_state=0).fit(docs)
    assert vec.embedding_.shape[1] == 50
    reference = KeyedVectors.load_word2vec_format(GENSIM_GLOVE, no_header=True)
    for word in ("the", "of", "that"):
        np.testing.assert_allclose(
            vec.embedding_[vec.vocabulary_[word]], reference[word], rtol=1e-6
        )
    assert vec.coverage_ == 1.0


@pytest.mark.parametrize(
    "damage, match",
    [
        (lambda b: b[: len(b) // 2], "damaged gz file"),
        (lambda b: b[:20] + bytes(x ^ 0xFF for x in b[20:30]) + b[30:], "damaged gz file"),
        (lambda b: bz2.compress(gzip.decompress(b))[:-10], "damaged bz2 file"),
        (lambda b: b"BZh9" + b[4:], "damaged bz2 file"),
        (lambda b: gzip.decompress(b), "named .gz but does not hold gz-compressed data"),
    ],
)
def test_damaged_compressed_file(tmp_path, damage, match):
    rows = {f"w{i}": np.random.RandomState(i).randn(20).round(4).tolist() for i in range(200)}
    data = damage(gzip.compress(_word2vec_text(rows).encode()))
    path = _write(tmp_path / "vectors.gz", data)
    with pytest.raises(ValueError, match=match) as info:
        Word2VecVectorizer(pretrained=path, min_count=1).fit(["w1 w2 w3"] * 3)
    assert "vectors.gz" in str(info.value)


def test_truncated_or_nan_binary(tmp_path):
    path = _write(tmp_path / "t.bin", _word2vec_binary()[:-6])
    with pytest.raises(ValueError, match="truncated after 3 of 4"):
        Word2VecVectorizer(pretrained=path, min_count=1).fit(["cat dog"] * 2)
    path = _write(tmp_path / "nan.bin", _word2vec_binary({**ROWS, "dog": [0, np.nan, 0]}))
    with pytest.raises(ValueError, match="nan.bin: vector 2 holds NaN"):
        Word2VecVectorizer(pretrained=path, min_count=1).fit(["cat dog"] * 2)


@pytest.mark.parametrize(
    "content, match",
    [
        ("", "holds no vectors"),
        ("cat 1 2\ndog 1\n", "line 2: expected a word and 2 numbers"),
        ("cat 1 2\ndog 1 x\n", "line 2: 'x' is not a number"),
        ("3 2\ncat 1 2\ndog 1 2\n", "announces 3 vectors but the file holds 2"),
        ("cat 1 nan\n", "line 1: the vector holds NaN"),
    ],
)
def test_bad_pretrained_files(tmp_path, content, match):
    path = _write(tmp_path / "bad.txt", content)
    with pytest.raises(ValueError, match=match) as info:
        Word2VecVectorizer(pretrained=path, min_count=1).fit(["cat dog"] * 2)
    assert "bad.txt" in str(info.value)


def test_no_corpus_word_in_file(tmp_path):
    path = _write(tmp_path / "g.txt", _glove_text())
    with pytest.raises(ValueError, match="None of the 2 corpus words"):
        Word2VecVectorizer(pretrained=path, min_count=1).fit(["emu yak"] * 2)


@pytest.mark.parametrize("oov_vectors", ["train", "random"])
def test_uncovered_words_keep_their_place(tmp_path, oov_vectors):
    path = _write(tmp_path / "g.txt", _glove_text())
    docs = ["cat dog fish", "dog bird fish", "cat bird fish eel"] * 4
    vec = Word2VecVectorizer(
        pretrained=path, min_count=1, oov_vectors=oov_vectors, random_state=0
    ).fit(docs)
    assert set(vec.vocabulary_) == {"cat", "dog", "bird", "fish", "eel"}
    assert vec.coverage_ == pytest.approx(3 / 5)
    for word in ("fish", "eel"):
        row = vec.embedding_[vec.vocabulary_[word]]
        assert row.any() and not any(np.allclose(row, v) for v in ROWS.values())
    assert_identical(vec.embedding_[vec.vocabulary_["cat"]], ROWS["cat"], why=Exact.COPY)
    again = Word2VecVectorizer(
        pretrained=path, min_count=1, oov_vectors=oov_vectors, random_state=0
    ).fit(docs)
    assert_identical(again.embedding_, vec.embedding_, why=Exact.SAME_CALL)
    assert vec.transform(["eel"]).document(0).tolist() == [vec.vocabulary_["eel"]]


def test_procrustes_recovers_rotation_scale_and_shift():
    rng = np.random.RandomState(0)
    source = rng.randn(40, 5)
    rotation = np.linalg.qr(rng.randn(5, 5))[0]
    target = 2.5 * source @ rotation + rng.randn(5)
    mapping = procrustes(source[:30], target[:30])
    np.testing.assert_allclose(mapping(source[30:]), target[30:], atol=1e-10)


def test_trained_uncovered_vectors_land_near_their_neighbours(tmp_path):
    """Aligned corpus vectors of words absent from the file sit in the file's space."""
    rng = np.random.RandomState(0)
    topics = [[f"a{i}" for i in range(12)], [f"b{i}" for i in range(12)]]
    docs = [" ".join(rng.choice(topics[i % 2], 8)) for i in range(400)]
    full = Word2VecVectorizer(
        pretrained=None, vector_size=10, min_count=1, epochs=20, random_state=0
    ).fit(docs)
    held_out = {"a0", "b0"}
    rows = {
        w: full.embedding_[i].tolist() for w, i in full.vocabulary_.items() if w not in held_out
    }
    path = _write(tmp_path / "g.txt", _glove_text(rows))
    vec = Word2VecVectorizer(
        pretrained=path, oov_vectors="train", min_count=1, epochs=20, random_state=1
    ).fit(docs)

    def topic_similarity(word, topic):
        table = vec.embedding_ / np.linalg.norm(vec.embedding_, axis=1, keepdims=True).clip(1e-9)
        return np.mean(
            [table[vec.vocabulary_[word]] @ table[vec.vocabulary_[w]] for w in topic[1:]]
        )

    assert topic_similarity("a0", topics[0]) > topic_similarity("a0", topics[1]) + 0.2
    assert topic_similarity("b0", topics[1]) > topic_similarity("b0", topics[0]) + 0.2


def test_oov_row_is_mean_of_rare_pretrained_vectors(tmp_path):
    path = _write(tmp_path / "g.txt", _glove_text())
    docs = ["cat cat dog", "dog cat dog bird"] * 3 + ["zebra"]  # bird: 3, zebra: 1
    vec = Word2VecVectorizer(pretrained=path, min_count=4, oov="token").fit(docs)
    assert set(vec.vocabulary_) == {"cat", "dog"}
    np.testing.assert_allclose(vec.embedding_[1], (3 * np.array([0, 0, 1]) + [1, 1, 1]) / 4)
    discard = Word2VecVectorizer(pretrained=path, min_count=4, oov="discard").fit(docs)
    assert not discard.embedding_[1].any()


def test_coverage_survives_save_and_load(tmp_path):
    from sklearn_lama import load_weights, save_weights

    path = _write(tmp_path / "g.txt", _glove_text())
    vec = Word2VecVectorizer(pretrained=path, min_count=1, random_state=0).fit(DOCS)
    save_weights(vec, tmp_path / "vec.pt")
    loaded = load_weights(tmp_path / "vec.pt")
    assert loaded.coverage_ == vec.coverage_ == pytest.approx(3 / 4)
    assert_identical(loaded.embedding_, vec.embedding_, why=Exact.COPY)
    assert os.fspath(loaded.pretrained) == path


def _frozen_pipeline(unlabeled):
    from sklearn.frozen import FrozenEstimator
    from sklearn.pipeline import Pipeline

    from sklearn_lama import LAMAClassifier

    vectors = Word2VecVectorizer(pretrained=None, vector_size=8, min_count=1, random_state=0).fit(
        unlabeled
    )
    clf = LAMAClassifier(n_heads=2, hidden_size=4, mlp_hidden=8, max_epochs=2, random_state=0)
    return vectors, Pipeline([("emb", FrozenEstimator(vectors)), ("clf", clf)])


@pytest.fixture
def unlabeled(toy_corpus):
    texts, _ = toy_corpus
    return list(texts) + ["an unlabeled sentence only", "more unlabeled text only"] * 3


def test_frozen_vectors_in_pipeline_and_grid_search(toy_corpus, unlabeled):
    from sklearn.model_selection import GridSearchCV

    texts, labels = toy_corpus
    vectors, pipe = _frozen_pipeline(unlabeled)
    table = vectors.embedding_.copy()
    pipe.fit(texts, labels)
    assert "unlabeled" in pipe["emb"].vocabulary_  # fitted on the unlabeled text, not refitted
    assert_identical(pipe["emb"].embedding_, table, why=Exact.COPY)
    search = GridSearchCV(pipe, {"clf__hidden_size": [2, 4]}, cv=2).fit(texts, labels)
    assert search.best_estimator_["emb"].estimator is vectors
    assert_identical(vectors.embedding_, table, why=Exact.COPY)
    assert search.predict(texts[:3]).shape == (3,)


def test_frozen_vectors_save_and_load_weights(toy_corpus, unlabeled, tmp_path):
    from sklearn_lama import load_weights, save_weights

    texts, labels = toy_corpus
    _, pipe = _frozen_pipeline(unlabeled)
    pipe.fit(texts, labels)
    save_weights(pipe, tmp_path / "pipe.pt")
    loaded = load_weights(tmp_path / "pipe.pt")
    assert_identical(loaded.predict_proba(texts), pipe.predict_proba(texts), why=Exact.COPY)
    loaded.fit(texts, labels)  # still frozen after loading
    assert "unlabeled" in loaded["emb"].vocabulary_


@pytest.mark.parametrize("fmt", ["word2vec", "binary"])
def test_explicit_format_needs_its_header(tmp_path, fmt):
    path = _write(tmp_path / "g.txt", _glove_text())
    with pytest.raises(ValueError, match="g.txt, line 1: expected a 'count dimension' header"):
        Word2VecVectorizer(pretrained=path, pretrained_format=fmt, min_count=1).fit(DOCS)


def test_verbose_reports_the_reading_and_training(tmp_path, monkeypatch, capsys):
    rows = {f"w{i}": [float(i), 1.0] for i in range(100)}
    path = _write(tmp_path / "v.txt", _word2vec_text(rows))
    # Five blocks: the file is reported as read once per block, by tenths.
    monkeypatch.setattr(_vector_files, "_BLOCK", os.path.getsize(path) // 5 + 1)
    vec = Word2VecVectorizer(
        pretrained=path, min_count=1, verbose=1, oov_vectors="train", epochs=2, random_state=0
    )
    vec.fit(["w1 w2 w3 unknown"] * 3)
    lines = capsys.readouterr().out.splitlines()
    assert all(line.startswith("[Word2VecVectorizer] ") for line in lines)
    assert "4 of 4 distinct words seen at least min_count=1 times" in lines[0]
    reading = [line for line in lines if "reading v.txt" in line]
    assert len(reading) == 5 and "reading v.txt: 100%" in reading[-1]
    assert any("read 100 vectors of dimension 2 from v.txt" in line for line in lines)
    assert any(line.endswith("kept 3") for line in lines)
    # "unknown" has no vector: trained with word2vec, two epochs.
    assert sum("word2vec epoch" in line for line in lines) == 2
    Word2VecVectorizer(pretrained=path, min_count=1, oov_vectors="drop").fit(["w1 w2"] * 2)
    assert capsys.readouterr().out == ""
