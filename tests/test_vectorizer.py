import os
import pickle
import subprocess
import sys

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import FunctionTransformer

from sklearn_lama import TokenSequences, Word2VecVectorizer
from tests._tolerances import Exact, assert_differ, assert_identical


def _mean_vector(sequences):
    table = sequences.tables[0]
    return np.stack(
        [
            table[sequences.document(i)].mean(0)
            if sequences.lengths[i]
            else np.zeros(table.shape[1], np.float32)
            for i in range(len(sequences))
        ]
    )


def test_fit_transform_vocabulary_and_ids(toy_corpus):
    texts, _ = toy_corpus
    vec = Word2VecVectorizer(
        pretrained=None, vector_size=8, min_count=2, oov="discard", random_state=0
    ).fit(texts)
    assert min(vec.vocabulary_.values()) == 2
    assert vec.embedding_.shape == (len(vec.vocabulary_) + 2, 8)
    assert not vec.embedding_[:2].any()  # padding and OOV rows
    seqs = vec.transform(["Good MOVIE zzzunknown"])
    assert isinstance(seqs, TokenSequences)
    assert seqs.document(0).tolist() == [vec.vocabulary_["good"], vec.vocabulary_["movie"]]
    assert seqs.tables[0] is vec.embedding_  # shared, not copied


@pytest.mark.parametrize("oov, max_len", [("discard", None), ("token", 3)])
def test_fit_transform_gives_the_ids_of_fit_then_transform(toy_corpus, oov, max_len):
    texts, _ = toy_corpus
    texts = [*texts, "zzzunknown words only", ""]
    params = dict(pretrained=None, vector_size=4, min_count=2, oov=oov, max_len=max_len)
    fitted = Word2VecVectorizer(**params, random_state=0).fit(texts)
    expected = fitted.transform(texts)
    vec = Word2VecVectorizer(**params, random_state=0)
    sequences = vec.fit_transform(texts)
    assert vec.vocabulary_ == fitted.vocabulary_
    assert_identical(sequences.ids, expected.ids, why=Exact.DISCRETE)
    assert_identical(sequences.offsets, expected.offsets, why=Exact.DISCRETE)
    assert sequences.tables[0] is vec.embedding_
    assert sequences.vocabulary_id == expected.vocabulary_id


def test_oov_token_and_max_len(toy_corpus):
    texts, _ = toy_corpus
    vec = Word2VecVectorizer(
        pretrained=None, vector_size=4, min_count=1, oov="token", max_len=2, random_state=0
    ).fit(texts)
    seqs = vec.transform(["zzz good movie plot"])
    assert seqs.document(0).tolist() == [1, vec.vocabulary_["good"]]


def test_tokenizer_and_pattern_options():
    texts = ["A-B c", "a-b C"] * 5
    vec = Word2VecVectorizer(
        pretrained=None,
        vector_size=4,
        min_count=1,
        token_pattern=r"[^ ]+",
        lowercase=False,
        random_state=0,
    ).fit(texts)
    assert set(vec.vocabulary_) == {"A-B", "a-b", "c", "C"}
    vec = Word2VecVectorizer(
        pretrained=None, vector_size=4, min_count=1, tokenizer=str.split, random_state=0
    ).fit(texts)
    assert set(vec.vocabulary_) == {"a-b", "c"}


@pytest.mark.parametrize("algorithm", ["word2vec", "fasttext"])
def test_same_random_state_same_vectors_across_processes(toy_corpus, tmp_path, algorithm):
    texts, _ = toy_corpus
    params = {"pretrained": None, "vector_size": 8, "min_count": 2, "algorithm": algorithm}
    vec = Word2VecVectorizer(random_state=3, **params).fit(texts)
    again = Word2VecVectorizer(random_state=3, **params).fit(texts)
    assert_identical(vec.embedding_, again.embedding_, why=Exact.SAME_CALL)
    other = Word2VecVectorizer(random_state=4, **params).fit(texts)
    assert_differ(vec.embedding_, other.embedding_)

    # A different hash seed in a fresh interpreter must not change the vectors.
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(texts))
    code = (
        "import sys, numpy as np; from sklearn_lama import Word2VecVectorizer;"
        "t = open(sys.argv[1]).read().split('\\n');"
        "v = Word2VecVectorizer(pretrained=None, vector_size=8, min_count=2, random_state=3,"
        f"algorithm={algorithm!r}).fit(t);"
        "np.save(sys.argv[2], v.embedding_)"
    )
    out = tmp_path / "emb.npy"
    env = dict(os.environ, PYTHONHASHSEED="12345")
    subprocess.run([sys.executable, "-c", code, str(corpus), str(out)], check=True, env=env)
    assert_identical(np.load(out), vec.embedding_, why=Exact.SAME_CALL)


def test_clone_pickle_roundtrip(toy_corpus):
    texts, _ = toy_corpus
    vec = Word2VecVectorizer(pretrained=None, vector_size=8, min_count=2, random_state=0)
    assert clone(vec).get_params() == vec.get_params()
    vec.fit(texts)
    loaded = pickle.loads(pickle.dumps(vec))
    a, b = vec.transform(texts), loaded.transform(texts)
    assert_identical(a.ids, b.ids, why=Exact.DISCRETE)
    assert_identical(a.tables[0], b.tables[0], why=Exact.COPY)
    assert a.vocabulary_id == b.vocabulary_id


def test_pipeline_and_grid_search(toy_corpus):
    texts, labels = toy_corpus
    pipe = Pipeline(
        [
            (
                "emb",
                Word2VecVectorizer(pretrained=None, vector_size=8, min_count=1, random_state=0),
            ),
            ("mean", FunctionTransformer(_mean_vector)),
            ("clf", LogisticRegression()),
        ]
    )
    search = GridSearchCV(pipe, {"emb__vector_size": [4, 8]}, cv=2).fit(texts, labels)
    assert (
        search.best_estimator_.named_steps["emb"].embedding_.shape[1]
        == search.best_params_["emb__vector_size"]
    )


def test_a_cached_pipeline_fits_the_vectorizer_once_per_fold(toy_corpus, tmp_path, monkeypatch):
    # Pipeline(memory=...) as the README shows it: candidates that differ in the
    # classifier's parameters only share each fold's fitted vectorizer.
    texts, labels = toy_corpus
    fits = []
    # fit and fit_transform (which the pipeline calls) both learn through _fit_corpus.
    fit = Word2VecVectorizer._fit_corpus
    monkeypatch.setattr(
        Word2VecVectorizer,
        "_fit_corpus",
        lambda self, *a, **k: fits.append(1) or fit(self, *a, **k),
    )

    def search(memory):
        fits.clear()
        pipe = Pipeline(
            [
                (
                    "emb",
                    Word2VecVectorizer(
                        pretrained=None, vector_size=8, min_count=1, random_state=0
                    ),
                ),
                ("mean", FunctionTransformer(_mean_vector)),
                ("clf", LogisticRegression()),
            ],
            memory=memory,
        )
        grid = {"clf__C": [0.1, 1.0, 10.0]}
        return GridSearchCV(pipe, grid, cv=2).fit(texts, labels), len(fits)

    plain, plain_fits = search(None)
    cached, cached_fits = search(str(tmp_path))
    assert plain_fits == 3 * 2 + 1  # every candidate and fold, and the refit
    assert cached_fits == 2 + 1  # each fold once, and the refit
    assert cached.cv_results_["mean_test_score"].tolist() == (
        plain.cv_results_["mean_test_score"].tolist()
    )


def test_inverse_transform(toy_corpus):
    texts, _ = toy_corpus
    vec = Word2VecVectorizer(
        pretrained=None, vector_size=4, min_count=1, oov="token", random_state=0
    ).fit(texts)
    assert vec.inverse_transform(vec.transform(["good qqq movie"])) == [["good", "<oov>", "movie"]]


def test_transform_memory_is_linear_in_tokens(toy_corpus):
    texts, _ = toy_corpus
    vec = Word2VecVectorizer(pretrained=None, vector_size=50, min_count=1, random_state=0).fit(
        texts
    )
    seqs = vec.transform(texts * 50)
    n_tokens = seqs.lengths.sum()
    own = seqs.ids.nbytes + seqs.offsets.nbytes
    assert seqs.ids.dtype == np.int32
    assert own <= 4 * n_tokens + 8 * (len(seqs) + 1)
    assert seqs.tables[0] is vec.embedding_


@pytest.mark.parametrize(
    "docs, error, match",
    [
        ("a single string", TypeError, "single string"),
        (None, TypeError, "iterable of documents"),
        (["ok doc", None], TypeError, "Document 1"),
        (["ok doc", 3.5], TypeError, "Document 1 .* float"),
        ([b"\xff\xfe bad"], ValueError, "Document 0 .* cannot be decoded"),
        ([], ValueError, "empty"),
        (["each word once"], ValueError, "min_count=2"),
    ],
)
def test_bad_documents(docs, error, match):
    with pytest.raises(error, match=match):
        Word2VecVectorizer().fit(docs)


def test_accepts_numpy_array_and_generator(toy_corpus):
    texts, _ = toy_corpus
    vec = Word2VecVectorizer(pretrained=None, vector_size=4, min_count=1, random_state=0)
    a = vec.fit(np.array(texts, dtype=object)).transform(np.array(texts))
    b = vec.fit(t for t in texts).transform(iter(texts))
    assert_identical(a.ids, b.ids, why=Exact.DISCRETE)


@pytest.mark.parametrize(
    "params, match",
    [
        ({"vector_size": 0}, "vector_size"),
        ({"min_count": -1}, "min_count"),
        ({"oov": "drop"}, "oov"),
        ({"sg": 2}, "sg"),
        ({"tokenizer": "split"}, "tokenizer"),
        ({"pretrained_format": "txt"}, "pretrained_format"),
        ({"oov_vectors": "zero"}, "oov_vectors"),
        ({"algorithm": "glove"}, "algorithm"),
    ],
)
def test_bad_parameters(params, match):
    with pytest.raises(ValueError, match=match):
        Word2VecVectorizer(**params).fit(["a b c"] * 10)


def test_token_sequences_indexing():
    table = np.arange(12, dtype=np.float32).reshape(6, 2)
    seqs = TokenSequences([2, 3, 4, 5, 2, 3], [0, 2, 2, 6], (table,), "v")
    assert len(seqs) == 3 and seqs.shape == (3, 1)
    assert seqs[[2, 0]].document(0).tolist() == [4, 5, 2, 3]
    assert seqs[np.array([False, True, True])].lengths.tolist() == [0, 4]
    assert seqs[1:].lengths.tolist() == [0, 4]
    assert seqs[-1].lengths.tolist() == [4]
    assert seqs[np.array([0, 2]), ...].tables[0] is table
    restored = pickle.loads(pickle.dumps(seqs))
    assert_identical(restored.ids, seqs.ids, why=Exact.DISCRETE)
    with pytest.raises(ValueError, match="Token ids must lie in"):
        TokenSequences([7], [0, 1], (table,), "v")
    with pytest.raises(ValueError, match="share one vocabulary"):
        TokenSequences([1], [0, 1], (table, table[:3]), "v")


def test_scikit_learn_tokenisation_options():
    texts = ["Café au lait, THE best!", "the café is open"] * 3
    vec = Word2VecVectorizer(
        pretrained=None,
        vector_size=4,
        min_count=1,
        strip_accents="unicode",
        stop_words=["the", "is"],
        random_state=0,
    ).fit(texts)
    assert "cafe" in vec.vocabulary_ and "café" not in vec.vocabulary_
    assert "the" not in vec.vocabulary_
    # Tokens stay in document order; stop words and punctuation as configured.
    tokens = vec.inverse_transform(vec.transform(["The best café, open!"]))
    assert tokens == [["best", "cafe", ",", "open", "!"]]
    english = Word2VecVectorizer(
        pretrained=None, vector_size=4, min_count=1, stop_words="english", random_state=0
    ).fit(texts)
    assert {"the", "is"}.isdisjoint(english.vocabulary_) and "lait" in english.vocabulary_
    upper = Word2VecVectorizer(
        pretrained=None, vector_size=4, min_count=1, preprocessor=str.upper, random_state=0
    ).fit(texts)
    assert "CAFÉ" in upper.vocabulary_  # the preprocessor replaces lowercase


@pytest.mark.parametrize(
    "params, match",
    [
        ({"strip_accents": "latin"}, "strip_accents"),
        ({"stop_words": "french"}, "stop_words"),
        ({"preprocessor": "lower"}, "preprocessor"),
        ({"token_pattern": "(a)(b)"}, "token_pattern .*capturing group"),
        ({"token_pattern": "(unclosed"}, "token_pattern .*not a valid regular expression"),
    ],
)
def test_bad_tokenisation_parameters(params, match):
    with pytest.raises(ValueError, match=match):
        Word2VecVectorizer(**params).fit(["a b c"] * 10)


def test_tokenizer_with_default_pattern_does_not_warn(recwarn):
    Word2VecVectorizer(pretrained=None, vector_size=4, min_count=1, tokenizer=str.split).fit(
        ["a b"] * 3
    )
    assert not [w for w in recwarn if "token_pattern" in str(w.message)]


def test_oov_token_row_is_trained_on_rare_words(toy_corpus):
    texts, _ = toy_corpus
    texts = list(texts) + ["good rare1 movie", "bad rare2 film", "great rare3 plot"]
    token = Word2VecVectorizer(
        pretrained=None, vector_size=8, min_count=2, oov="token", random_state=0
    ).fit(texts)
    assert token.embedding_[1].any()
    assert "\0rare\0" not in token.vocabulary_ and "rare1" not in token.vocabulary_
    assert token.transform(["rare2 good"]).document(0).tolist() == [1, token.vocabulary_["good"]]
    discard = Word2VecVectorizer(
        pretrained=None, vector_size=8, min_count=2, oov="discard", random_state=0
    ).fit(texts)
    assert not discard.embedding_[:2].any()
    assert discard.vocabulary_ == token.vocabulary_


def test_fasttext_algorithm(toy_corpus):
    texts = list(toy_corpus[0]) + ["the terrrible plot"]  # a misspelling, seen once
    params = {"pretrained": None, "vector_size": 8, "min_count": 1, "random_state": 0}
    fast = Word2VecVectorizer(algorithm="fasttext", **params).fit(texts)
    word2vec = Word2VecVectorizer(**params).fit(texts)
    assert fast.vocabulary_ == word2vec.vocabulary_

    def similarity(vec, a, b):
        u, v = vec.embedding_[vec.vocabulary_[a]], vec.embedding_[vec.vocabulary_[b]]
        return u @ v / np.linalg.norm(u) / np.linalg.norm(v)

    # The rare misspelling shares the n-grams of the frequent word.
    assert similarity(fast, "terrrible", "terrible") > 0.5
    assert similarity(fast, "terrrible", "terrible") > similarity(
        word2vec, "terrrible", "terrible"
    )


def test_set_output_keeps_token_sequences_and_refuses_an_unknown_request(toy_corpus):
    # ColumnTransformer.set_output and Pipeline.set_output pass their request on.
    from sklearn.compose import ColumnTransformer

    from sklearn_lama import MetaEmbeddingTransformer

    texts, _ = toy_corpus
    for transformer in (Word2VecVectorizer(), MetaEmbeddingTransformer([])):
        for request in (None, "default", "pandas", "polars"):
            assert transformer.set_output(transform=request) is transformer
        with pytest.raises(ValueError, match="transform must be .*, got 'pandsa'"):
            transformer.set_output(transform="pandsa")
    vec = Word2VecVectorizer(pretrained=None, vector_size=4, epochs=1, random_state=0)
    columns = ColumnTransformer([("text", vec, 0)]).set_output(transform="default")
    assert isinstance(columns.fit_transform(np.asarray(texts, object)[:, None]), TokenSequences)
    with pytest.raises(ValueError, match="transform must be"):
        columns.set_output(transform="pandsa")
    pipe = Pipeline([("vec", vec)]).set_output(transform="pandas")
    assert isinstance(pipe.fit_transform(texts), TokenSequences)
