"""The package's main job: train Word2VecVectorizer → LAMAClassifier on a shipped corpus.

Run ``python -m sklearn_lama`` (``--help`` for options). It prints test accuracy
and fit time next to a TF-IDF + logistic-regression baseline, and the words the
model attends to most for each class (the LAMA paper's Table 6).
"""

import argparse
import time

from sklearn.pipeline import Pipeline

from . import LAMAClassifier, Word2VecVectorizer
from .datasets import load_mr, load_r8
from .inspection import top_attended_words

LOADERS = {"r8": load_r8, "mr": load_mr}


def _baseline(train_texts, train_labels, test_texts, test_labels):
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    start = time.perf_counter()
    # The tuned baseline a user would compare against: word bigrams, sublinear
    # tf, C=10 (the settings of the project's reference measurements).
    model = make_pipeline(
        TfidfVectorizer(sublinear_tf=True, ngram_range=(1, 2), min_df=2),
        LogisticRegression(C=10, max_iter=2000),
    )
    model.fit(train_texts, train_labels)
    return model.score(test_texts, test_labels), time.perf_counter() - start


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m sklearn_lama",
        description="Train Word2VecVectorizer → LAMAClassifier on a shipped corpus.",
    )
    parser.add_argument(
        "--dataset",
        choices=sorted(LOADERS),
        default="mr",
        help="mr (default: short movie-review sentences) or r8 (news articles, longer "
        "documents that take longer to train on)",
    )
    parser.add_argument("--n-heads", type=int, default=15)
    parser.add_argument("--max-epochs", type=int, default=20)
    parser.add_argument("--random-state", type=int, default=0)
    parser.add_argument("--verbose", type=int, default=1)
    args = parser.parse_args(argv)

    load = LOADERS[args.dataset]
    train_texts, train_labels = load(subset="train", return_X_y=True)
    test_texts, test_labels = load(subset="test", return_X_y=True)
    print(
        f"{args.dataset.upper()}: {len(train_texts)} training / {len(test_texts)} test "
        f"documents, {len(set(train_labels))} classes"
    )

    start = time.perf_counter()
    vectorizer = Word2VecVectorizer(random_state=args.random_state)
    train_seqs = vectorizer.fit_transform(train_texts)
    w2v_time = time.perf_counter() - start
    classifier = LAMAClassifier(
        n_heads=args.n_heads,
        max_epochs=args.max_epochs,
        random_state=args.random_state,
        verbose=args.verbose,
    )
    classifier.fit(train_seqs, train_labels)
    fit_time = time.perf_counter() - start

    start = time.perf_counter()
    accuracy = classifier.score(vectorizer.transform(test_texts), test_labels)
    predict_time = time.perf_counter() - start
    base_accuracy, base_time = _baseline(train_texts, train_labels, test_texts, test_labels)

    print()
    print(f"{'model':<32}{'test accuracy':>14}{'fit time':>11}")
    print(f"{'Word2Vec + LAMAClassifier':<32}{accuracy:>14.4f}{fit_time:>10.1f}s")
    print(f"{'TF-IDF + LogisticRegression *':<32}{base_accuracy:>14.4f}{base_time:>10.1f}s")
    print(
        f"(word2vec {w2v_time:.1f}s, {classifier.n_epochs_} epochs; prediction of "
        f"{len(test_texts)} documents {predict_time:.1f}s; * bigrams, sublinear tf, C=10)"
    )
    print("\nTop attended words per class (test set):")
    pipeline = Pipeline([("emb", vectorizer), ("clf", classifier)])
    table = top_attended_words(pipeline, test_texts, test_labels, n_words=8)
    # A DataFrame (pandas installed) or a dict: both map each class to its words.
    for label, words in table.items():
        print(f"  {label:>10}: {', '.join(w for w in words if w is not None)}")
    return accuracy


if __name__ == "__main__":  # pragma: no cover
    main()
