import pickle

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import FunctionTransformer

from sklearn_lama import MetaEmbeddingTransformer, TokenSequences, Word2VecVectorizer
from tests._tolerances import Exact, assert_identical


def _meta(**params):
    return MetaEmbeddingTransformer(
        [
            (
                "cbow",
                Word2VecVectorizer(
                    pretrained=None, vector_size=4, sg=0, min_count=1, random_state=0
                ),
            ),
            (
                "sg",
                Word2VecVectorizer(
                    pretrained=None, vector_size=6, sg=1, min_count=3, random_state=0
                ),
            ),
        ],
        min_count=1,
        **params,
    )


def _first_table_mean(seqs):
    table = seqs.tables[0]
    return np.stack([table[seqs.document(i)].sum(0) for i in range(len(seqs))])


def test_one_table_per_source_over_one_vocabulary(toy_corpus):
    texts, _ = toy_corpus
    meta = _meta().fit(texts)
    seqs = meta.transform(texts)
    assert isinstance(seqs, TokenSequences)
    assert [t.shape for t in seqs.tables] == [
        (len(meta.vocabulary_) + 2, 4),
        (len(meta.vocabulary_) + 2, 6),
    ]
    assert seqs.tables[0] is meta.embeddings_[0]
    cbow = Word2VecVectorizer(
        pretrained=None, vector_size=4, sg=0, min_count=1, random_state=0
    ).fit(texts)
    for word in ("good", "movie"):
        assert_identical(
            meta.embeddings_[0][meta.vocabulary_[word]],
            cbow.embedding_[cbow.vocabulary_[word]],
            why=Exact.SAME_CALL,
        )


@pytest.mark.parametrize("max_len", [None, 2])
def test_fit_transform_gives_the_ids_of_fit_then_transform(toy_corpus, max_len):
    texts, _ = toy_corpus
    texts = [*texts, "zzzunknown words only", ""]
    fitted = _meta(max_len=max_len).fit(texts)
    expected = fitted.transform(texts)
    meta = _meta(max_len=max_len)
    sequences = meta.fit_transform(texts)
    assert meta.vocabulary_ == fitted.vocabulary_
    assert_identical(sequences.ids, expected.ids, why=Exact.DISCRETE)
    assert_identical(sequences.offsets, expected.offsets, why=Exact.DISCRETE)
    assert all(a is b for a, b in zip(sequences.tables, meta.embeddings_))
    assert sequences.vocabulary_id == expected.vocabulary_id


def test_missing_words_get_zero_fallback_rows():
    docs = ["common common common rare"] * 1 + ["common word word word"] * 2
    meta = MetaEmbeddingTransformer(
        [
            (
                "all",
                Word2VecVectorizer(pretrained=None, vector_size=3, min_count=1, random_state=0),
            ),
            (
                "frequent",
                Word2VecVectorizer(pretrained=None, vector_size=3, min_count=3, random_state=0),
            ),
        ],
        min_count=1,
    ).fit(docs)
    rare = meta.vocabulary_["rare"]
    assert meta.embeddings_[0][rare].any()
    assert not meta.embeddings_[1][rare].any()
    assert meta.coverage_ == {"all": 1.0, "frequent": pytest.approx(2 / 3)}


def test_params_are_exposed_like_feature_union(toy_corpus):
    meta = _meta()
    params = meta.get_params(deep=True)
    assert params["cbow__vector_size"] == 4 and params["sg__sg"] == 1
    meta.set_params(cbow__vector_size=5)
    assert meta.sources[0][1].vector_size == 5
    cloned = clone(meta)
    assert cloned.get_params()["cbow__vector_size"] == 5
    assert cloned.sources[0][1] is not meta.sources[0][1]


def test_pickle_pipeline_and_grid_search(toy_corpus):
    texts, labels = toy_corpus
    meta = _meta().fit(texts)
    restored = pickle.loads(pickle.dumps(meta))
    assert_identical(restored.transform(texts).ids, meta.transform(texts).ids, why=Exact.DISCRETE)
    pipe = Pipeline(
        [
            ("emb", _meta()),
            ("sum", FunctionTransformer(_first_table_mean)),
            ("clf", LogisticRegression()),
        ]
    )
    search = GridSearchCV(pipe, {"emb__cbow__vector_size": [3, 4]}, cv=2).fit(texts, labels)
    best = search.best_params_["emb__cbow__vector_size"]
    assert search.best_estimator_["emb"].embeddings_[0].shape[1] == best


@pytest.mark.parametrize(
    "sources, error, match",
    [
        ([], ValueError, "at least one"),
        ([Word2VecVectorizer()], TypeError, r"\(name, transformer\) tuple"),
        ([("a", "vectors.txt")], TypeError, "no fit method"),
        ([("a", Word2VecVectorizer()), ("a", Word2VecVectorizer())], ValueError, "unique"),
        ([("a", FunctionTransformer())], TypeError, "vocabulary_ and embedding_"),
    ],
)
def test_bad_sources(toy_corpus, sources, error, match):
    texts, _ = toy_corpus
    with pytest.raises(error, match=match):
        MetaEmbeddingTransformer(sources, min_count=1).fit(texts)


def test_shared_vocabulary_uses_scikit_learn_tokenisation():
    docs = ["Él vio el café", "el café y el té"] * 3
    meta = MetaEmbeddingTransformer(
        [
            (
                "plain",
                Word2VecVectorizer(pretrained=None, vector_size=3, min_count=1, random_state=0),
            ),
            (
                "ascii",
                Word2VecVectorizer(
                    pretrained=None,
                    vector_size=3,
                    min_count=1,
                    strip_accents="ascii",
                    random_state=0,
                ),
            ),
        ],
        min_count=1,
        strip_accents="ascii",
        stop_words=["el", "y"],
    ).fit(docs)
    assert set(meta.vocabulary_) == {"vio", "cafe", "te"}
    # Each source tokenises for itself: only "vio" is spelt alike without strip_accents.
    assert meta.coverage_ == {"plain": pytest.approx(1 / 3), "ascii": 1.0}


def test_oov_row_comes_from_each_source(toy_corpus):
    texts, _ = toy_corpus
    texts = list(texts) + ["good rare1 movie", "bad rare2 film"]
    meta = MetaEmbeddingTransformer(
        [
            (
                "token",
                Word2VecVectorizer(
                    pretrained=None, vector_size=3, min_count=2, oov="token", random_state=0
                ),
            ),
            (
                "discard",
                Word2VecVectorizer(
                    pretrained=None, vector_size=3, min_count=2, oov="discard", random_state=0
                ),
            ),
        ],
        min_count=2,
        oov="token",
    ).fit(texts)
    source = meta.sources[0][1].fit(texts)
    assert_identical(meta.embeddings_[0][1], source.embedding_[1], why=Exact.SAME_CALL)
    assert meta.embeddings_[0][1].any() and not meta.embeddings_[1][1].any()


def test_verbose_reports_each_source(toy_corpus, capsys):
    texts, _ = toy_corpus
    _meta().fit(texts)
    assert capsys.readouterr().out == ""
    meta = _meta(verbose=1).set_params(sg__verbose=1, sg__epochs=3).fit(texts)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == (
        f"[MetaEmbeddingTransformer] {len(meta.vocabulary_)} words seen at least min_count=1 times"
    )
    # The second source reports its own training (its verbose) while it fits,
    # then the transformer reports each source and the whole.
    epochs = [line.partition(" done")[0] for line in lines if " epoch " in line]
    assert epochs == [f"[Word2VecVectorizer] word2vec epoch {i} of 3" for i in (1, 2, 3)]
    assert lines[-3].startswith("[MetaEmbeddingTransformer] source 'cbow' (1 of 2) fitted in ")
    assert lines[-2].startswith("[MetaEmbeddingTransformer] source 'sg' (2 of 2) fitted in ")
    assert lines[-2].endswith(f"it covers {meta.coverage_['sg']:.1%} of the vocabulary")
    assert lines[-1].startswith("[MetaEmbeddingTransformer] all sources fitted in ")


@pytest.mark.parametrize("n_jobs", [2, -1])
def test_sources_fitted_in_parallel_give_the_same_tables(toy_corpus, n_jobs):
    texts, _ = toy_corpus
    one = _meta().fit(texts)
    several = _meta(n_jobs=n_jobs).fit(texts)
    assert several.vocabulary_ == one.vocabulary_
    for a, b in zip(several.embeddings_, one.embeddings_):
        assert_identical(a, b, why=Exact.SAME_CALL)


def test_n_jobs_is_validated(toy_corpus):
    texts, _ = toy_corpus
    with pytest.raises(ValueError, match="n_jobs"):
        _meta(n_jobs="all").fit(texts)
