"""The main job, ``python -m sklearn_lama``: its options, the user's own file, clear errors."""

import csv
import gzip
import json

import numpy as np
import pytest

from sklearn_lama import Word2VecVectorizer
from sklearn_lama._main import main
from sklearn_lama._main._files import read_labelled_file
from sklearn_lama._main._pipelines import GLOVE, MODELS, default_pipeline
from sklearn_lama.text._pretrained import DEFAULT, PRETRAINED, NumpyPackage, PretrainedVectors
from tests._tolerances import Exact, assert_identical


def _write_csv(path, texts, labels, text="text", label="label"):
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow([text, label])
        writer.writerows(zip(texts, labels))
    return path


def _write_jsonl(path, records, compress=False):
    lines = "".join(json.dumps(r) + "\n" for r in records)
    if compress:
        with gzip.open(path, "wt", encoding="utf-8") as fh:
            fh.write(lines)
    else:
        path.write_text(lines, encoding="utf-8")
    return path


def test_csv_and_jsonl_read_the_same_documents(tmp_path, toy_corpus):
    texts, labels = toy_corpus
    from_csv = read_labelled_file(_write_csv(tmp_path / "d.csv", texts, labels))
    records = [
        {"text": t, "label": str(y), "id": i} for i, (t, y) in enumerate(zip(texts, labels))
    ]
    from_jsonl = read_labelled_file(_write_jsonl(tmp_path / "d.jsonl.gz", records, compress=True))
    assert from_csv == from_jsonl == (list(texts), [str(y) for y in labels])


def test_other_column_names(tmp_path):
    path = _write_csv(tmp_path / "d.csv", ["a b", "c d"], ["x", "y"], text="body", label="tag")
    assert read_labelled_file(path, "body", "tag") == (["a b", "c d"], ["x", "y"])


@pytest.mark.parametrize(
    "name, content, message",
    [
        ("d.csv", "body,label\nhello,a\nworld,b\n", "no column --text-column 'text'.*'body'"),
        ("d.csv", "text,tag\nhello,a\nworld,b\n", "no column --label-column 'label'"),
        ("d.csv", "text,label\nhello,a\nworld,a\n", "one class only"),
        ("d.csv", "text,label\nhello,a\nworld,\n", "line 3 has no --label-column"),
        ("d.csv", "", "no documents"),
        ("d.jsonl", '{"text": "a", "label": 1}\n[1, 2]\n', "line 2 holds a list"),
        ("d.jsonl", '{"text": "a", "label": 1}\n{"text": \n', "line 2 is not valid JSON"),
        ("d.jsonl", '{"text": "a", "label": 1}\n{"text": "b"}\n', "line 2 has no --label"),
        ("d.jsonl", '{"text": 3, "label": 1}\n', "not a string"),
        ("d.jsonl", '{"text": "a", "label": 1}\n{"text": "b", "label": "x"}\n', "mix strings"),
        ("d.txt", "text,label\n", "must end in .csv"),
    ],
)
def test_bad_files_are_refused_clearly(tmp_path, name, content, message):
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        read_labelled_file(path)


def test_undecodable_and_missing_files(tmp_path):
    path = tmp_path / "d.csv"
    path.write_bytes(b"text,label\n\xff\xfe,a\n")
    with pytest.raises(ValueError, match="not UTF-8"):
        read_labelled_file(path)
    with pytest.raises(ValueError, match="is not a file"):
        read_labelled_file(tmp_path / "missing.csv")
    truncated = tmp_path / "d.jsonl.gz"
    truncated.write_bytes(gzip.compress(b'{"text": "a", "label": 1}\n' * 50)[:-12])
    with pytest.raises(ValueError, match="cannot be read"):
        read_labelled_file(truncated)


def test_default_pipelines_differ_only_where_documented():
    for name in MODELS:
        pipe = default_pipeline(name, random_state=3, verbose=0, max_epochs=2)
        assert pipe.named_steps["clf"].get_params()["random_state"] == 3
        assert pipe.named_steps["clf"].max_epochs == 2
    # Every model reads the shipped GloVe table, one table (Duo gives it both roles) ...
    for name in MODELS:
        emb = default_pipeline(name).named_steps["emb"]
        assert isinstance(emb, Word2VecVectorizer) and emb.pretrained == DEFAULT
    # ... and corpus word2vec is one argument away: Duo then couples CBOW 50 with skip-gram 100.
    duo = default_pipeline("duo", pretrained=None).named_steps["emb"]
    assert [(s.pretrained, s.sg) for _, s in duo.sources] == [(None, 0), (None, 1)]
    assert default_pipeline("lama", pretrained=None).named_steps["emb"].pretrained is None
    with pytest.raises(ValueError, match="model must be one of"):
        default_pipeline("bert")


def test_main_job_on_a_user_file(tmp_path, toy_corpus, capsys):
    texts, labels = toy_corpus
    path = _write_csv(tmp_path / "mine.csv", texts, labels)
    scores = main(
        ["--data", str(path), "--model", "lama", "--max-epochs", "2", "--verbose", "0"]
        + ["--vectors", "corpus"]
    )
    out = capsys.readouterr().out
    assert "a stratified held-out split of 25% (random_state=0): 90 training / 30 test" in out
    assert set(scores) >= {"Word2Vec + LAMAClassifier", "TF-IDF + LogisticRegression *"}
    assert all(0 <= s <= 1 for s in scores.values())
    assert "top attended words per class" in out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--model", "bert"], "invalid choice: 'bert'"),
        (["--data", "{path}", "--label-column", "tag"], "no column --label-column 'tag'"),
        (["--data", "{path}", "--test-size", "1.5"], "--test-size must be between 0 and 1"),
        (["--dataset", "mr", "--data", "{path}"], "not allowed with argument"),
        (["--max-epochs", "0"], "--max-epochs must be at least 1"),
    ],
)
def test_main_job_refuses_bad_options_before_any_work(tmp_path, toy_corpus, capsys, argv, message):
    texts, labels = toy_corpus
    path = _write_csv(tmp_path / "mine.csv", texts, labels)
    with pytest.raises(SystemExit) as exit_info:
        main([a.replace("{path}", str(path)) for a in argv])
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_main_job_needs_every_class_twice(tmp_path, capsys):
    texts = ["good film", "bad film", "great film", "awful film", "odd film"]
    path = _write_csv(tmp_path / "mine.csv", texts, ["p", "n", "p", "n", "o"])
    with pytest.raises(SystemExit):
        main(["--data", str(path)])
    assert "labels ['o'] occur once" in capsys.readouterr().err


def test_json_labels_keep_their_type(tmp_path):
    records = [{"text": f"doc {i}", "label": i % 2} for i in range(6)]
    texts, labels = read_labelled_file(_write_jsonl(tmp_path / "d.jsonl", records))
    assert_identical(labels, [0, 1, 0, 1, 0, 1], why=Exact.DISCRETE)


@pytest.fixture
def no_glove(monkeypatch, tmp_path):
    """GloVe installed nowhere: an empty gensim-data folder, no package found."""
    monkeypatch.setenv("GENSIM_DATA_DIR", str(tmp_path / "empty"))
    monkeypatch.setattr(NumpyPackage, "find", lambda self, fmt="auto": None)


@pytest.fixture
def fake_glove(monkeypatch, tmp_path, toy_corpus):
    """A GloVe package holding the toy corpus's words, found in place of the real one."""
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    words = sorted({w for text in toy_corpus[0] for w in text.split()})
    folder = tmp_path / "site" / "fake_glove" / "data"
    folder.mkdir(parents=True)
    rows = np.random.RandomState(0).randn(len(words), 4).astype(np.float32)
    np.save(folder / "emb.npy", rows)
    pq.write_table(pa.table({"index": words}), folder / "index.parquet")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.setenv("GENSIM_DATA_DIR", str(tmp_path / "empty"))
    package = NumpyPackage("fake-glove", "fake_glove", "data/emb.npy", "data/index.parquet", "")
    monkeypatch.setitem(PRETRAINED, GLOVE, PretrainedVectors(GLOVE, (package,)))


def _run(tmp_path, toy_corpus, *extra):
    path = _write_csv(tmp_path / "mine.csv", *toy_corpus)
    argv = ["--data", str(path), "--model", "lama", "--max-epochs", "1", "--verbose", "0"]
    return main(argv + list(extra))


def test_main_job_reads_the_shipped_glove_by_default(tmp_path, toy_corpus, no_glove, capsys):
    scores = _run(tmp_path, toy_corpus)
    out = capsys.readouterr().out
    assert "word vectors: pretrained, GloVe 6B 50d's 100,000 most frequent words" in out
    assert "GloVe 50 + LAMAClassifier" in scores
    scores = _run(tmp_path, toy_corpus, "--vectors", "corpus")
    assert "Word2Vec + LAMAClassifier" in scores


def test_main_job_reads_the_full_glove_when_asked(tmp_path, toy_corpus, fake_glove, capsys):
    scores = _run(tmp_path, toy_corpus, "--vectors", "glove-400k")
    out = capsys.readouterr().out
    assert "word vectors: pretrained, the package fake-glove" in out
    assert "GloVe 50 (400k words) + LAMAClassifier" in scores


def test_main_job_without_the_full_glove_says_how_to_install_it(
    tmp_path, toy_corpus, no_glove, capsys
):
    with pytest.raises(SystemExit) as exit_info:
        _run(tmp_path, toy_corpus, "--vectors", "glove-400k")
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "--vectors glove-400k: pretrained='glove-wiki-gigaword-50' is not installed" in err
    assert 'pip install "sklearn-lama[glove]"' in err
