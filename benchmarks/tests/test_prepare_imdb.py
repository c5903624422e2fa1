"""The IMDB preparation script on generated ``aclImdb`` folders (the real one is not here)."""

import gzip
import hashlib
import os

import pytest

from benchmarks._data import load
from benchmarks.data import prepare_imdb


def _source(root, per_label=3, rating=None):
    for split in prepare_imdb.SPLITS:
        for label in prepare_imdb.LABELS:
            folder = root / split / label
            folder.mkdir(parents=True)
            for i in range(per_label):
                stars = rating or (2 if label == "neg" else 9)
                (folder / f"{i}_{stars}.txt").write_text(f"{split} {label} review {i}<br />é")
    (root / "README").write_text("not a review")
    return root


def _digest(root):
    lines = []
    for dirpath, _, names in os.walk(root):
        for name in names:
            path = os.path.relpath(os.path.join(dirpath, name), root).replace(os.sep, "/")
            if path.count("/") == 2:
                data = open(os.path.join(dirpath, name), "rb").read()
                lines.append(f"{path}\t{hashlib.sha256(data).hexdigest()}\n")
    return hashlib.sha256("".join(sorted(lines)).encode()).hexdigest()


@pytest.fixture
def small(monkeypatch):
    monkeypatch.setattr(prepare_imdb, "PER_LABEL", 3)


def test_writes_both_splits_reproducibly(tmp_path, small, monkeypatch):
    source = _source(tmp_path / "aclImdb")
    monkeypatch.setattr(prepare_imdb, "SOURCE_SHA256", _digest(source))
    prepare_imdb.main([str(source), str(tmp_path / "out")])
    X, y, X_test, y_test = load(str(tmp_path / "out"))
    assert X[0] == "train neg review 0<br />é" and list(y) == ["neg"] * 3 + ["pos"] * 3
    assert len(X_test) == 6 and X_test[-1] == "test pos review 2<br />é"
    first = gzip.open(tmp_path / "out" / "train.jsonl.gz").read()
    again = tmp_path / "again"
    prepare_imdb.main([str(source), str(again)])
    assert (again / "train.jsonl.gz").read_bytes() == (
        tmp_path / "out" / "train.jsonl.gz"
    ).read_bytes()
    assert first.count(b"\n") == 6


def test_refuses_another_source(tmp_path, small):
    with pytest.raises(ValueError, match="checksum"):
        prepare_imdb.read_source(str(_source(tmp_path / "a")))
    with pytest.raises(ValueError, match="holds 2 reviews"):
        prepare_imdb.read_source(str(_source(tmp_path / "b", per_label=2)))
    with pytest.raises(ValueError, match="does not fit"):
        prepare_imdb.read_source(str(_source(tmp_path / "c", rating=5)))
    with pytest.raises(ValueError, match="is missing"):
        prepare_imdb.read_source(str(tmp_path / "nothing"))
