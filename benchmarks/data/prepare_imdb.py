"""Write the IMDB Large Movie Review Dataset as ``train.jsonl.gz`` and ``test.jsonl.gz``.

The dataset is that of Maas, Daly, Pham, Huang, Ng and Potts, "Learning Word
Vectors for Sentiment Analysis" (ACL 2011): 25,000 training and 25,000 test
reviews, each split 12,500 positive and 12,500 negative. The source is its
``aclImdb`` folder as released (``aclImdb_v1.tar.gz``), read from the copy in
the public GitHub repository ``steven-66/NaiveBayes``, commit
``796126bc21f7ef431e10864abe854867aa9b64cb``, folder ``data/aclImdb``::

    git clone https://github.com/steven-66/NaiveBayes
    git -C NaiveBayes checkout 796126bc21f7ef431e10864abe854867aa9b64cb
    python -m benchmarks.data.prepare_imdb NaiveBayes/data/aclImdb OUT

``SOURCE`` is the ``aclImdb`` folder (the one holding ``train/`` and
``test/``); ``OUT``, made if missing, receives ``train.jsonl.gz`` and
``test.jsonl.gz`` (existing files replaced). Only the review files
``{train,test}/{pos,neg}/<id>_<rating>.txt`` are read; everything else in the
folder (``train/unsup``, the ``.feat`` files, the URL lists) is ignored.
Nothing is downloaded. A source that differs from the one checked here
raises ``ValueError`` (see :func:`read_source`).

Notes
-----
The checksum of the source is the SHA-256 of the UTF-8 bytes of the lines
``"<path>\\t<sha256 of the file's bytes, lowercase hex>\\n"``, one for each
of the 50,000 review files, ``<path>`` relative to ``SOURCE`` with ``/``
separators (``train/pos/0_9.txt``), the lines sorted by ``<path>`` (code-point order).

Each output line is ``{"text": ..., "label": "pos" | "neg"}``, the text
exactly as in the file (``<br />`` tags kept). Within a split the negative
reviews come first, then the positive ones, each by increasing id. The gzip
files carry no name and mtime 0, so the same zlib writes them byte for byte
the same.
"""

import argparse
import gzip
import hashlib
import json
import os
import re

SOURCE_SHA256 = "4b0bfdfe140012ba264b743f2f135941b854bb46af27666f7613982147fe8a1a"
SPLITS = ("train", "test")
LABELS = ("neg", "pos")
PER_LABEL = 12_500
RATINGS = {"neg": range(1, 5), "pos": range(7, 11)}
_NAME = re.compile(r"(\d+)_(\d+)\.txt")


def _reviews(source, split, label):
    """Return ``[(path, bytes)]`` of one review folder, by increasing id."""
    folder = os.path.join(source, split, label)
    if not os.path.isdir(folder):
        raise ValueError(f"{folder} is missing: SOURCE must be the aclImdb folder")
    found = {}
    for name in os.listdir(folder):
        match = _NAME.fullmatch(name)
        if match is None:
            continue
        review_id, rating = int(match[1]), int(match[2])
        if rating not in RATINGS[label]:
            raise ValueError(f"{split}/{label}/{name}: rating {rating} does not fit {label!r}")
        if review_id in found:
            raise ValueError(f"{split}/{label}: id {review_id} appears twice")
        with open(os.path.join(folder, name), "rb") as fh:
            found[review_id] = (f"{split}/{label}/{name}", fh.read())
    if sorted(found) != list(range(PER_LABEL)):
        raise ValueError(
            f"{split}/{label} holds {len(found)} reviews; expected {PER_LABEL:,} with ids "
            f"0 to {PER_LABEL - 1:,}"
        )
    return [found[review_id] for review_id in range(PER_LABEL)]


def read_source(source):
    """Read and check the review files of ``source``.

    Parameters
    ----------
    source : str
        The ``aclImdb`` folder.

    Returns
    -------
    dict
        ``{split: [(text, label), ...]}`` for ``"train"`` and ``"test"``, in the
        order they are written.

    Raises
    ------
    ValueError
        If a review folder is missing, does not hold exactly 12,500 reviews
        with ids 0 to 12,499 or holds a rating on the wrong side of its label
        (negative: 1 to 4, positive: 7 to 10), if the checksum of the review
        files is not :data:`SOURCE_SHA256`, or if a review is not UTF-8.
    """
    files = {
        split: {label: _reviews(source, split, label) for label in LABELS} for split in SPLITS
    }
    listing = sorted(
        (path, hashlib.sha256(data).hexdigest())
        for by_label in files.values()
        for reviews in by_label.values()
        for path, data in reviews
    )
    digest = hashlib.sha256(
        "".join(f"{path}\t{sha}\n" for path, sha in listing).encode("utf-8")
    ).hexdigest()
    if digest != SOURCE_SHA256:
        raise ValueError(
            f"checksum of the review files of {source} is {digest}, expected {SOURCE_SHA256}: "
            "not the aclImdb release this script was written for"
        )
    records = {}
    for split, by_label in files.items():
        records[split] = []
        for label, reviews in by_label.items():
            for path, data in reviews:
                try:
                    records[split].append((data.decode("utf-8"), label))
                except UnicodeDecodeError as exc:
                    raise ValueError(f"{path} is not UTF-8: {exc}") from None
    return records


def write_jsonl_gz(path, records):
    """Write ``records`` (``(text, label)`` pairs) to ``path`` as gzipped JSON lines."""
    partial = path + ".partial"
    with open(partial, "wb") as raw:
        with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as fh:
            for text, label in records:
                line = json.dumps({"text": text, "label": label}, ensure_ascii=False)
                fh.write((line + "\n").encode("utf-8"))
    os.replace(partial, path)


def main(argv=None):
    """Run the command line: ``python -m benchmarks.data.prepare_imdb SOURCE OUT``.

    Parameters
    ----------
    argv : list of str, optional
        The arguments, ``sys.argv[1:]`` when None.
    """
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.data.prepare_imdb",
        description="Write the IMDB reviews (aclImdb) as train.jsonl.gz and test.jsonl.gz.",
    )
    parser.add_argument("source", metavar="SOURCE", help="the aclImdb folder")
    parser.add_argument("out", metavar="OUT", help="folder to write the two files into")
    args = parser.parse_args(argv)
    records = read_source(args.source)
    os.makedirs(args.out, exist_ok=True)
    for split in SPLITS:
        path = os.path.join(args.out, f"{split}.jsonl.gz")
        write_jsonl_gz(path, records[split])
        print(f"{path}: {len(records[split]):,} reviews")


if __name__ == "__main__":
    main()
