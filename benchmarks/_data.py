"""Corpora for the benchmarks: the shipped ones, a user's files, and grown copies.

A corpus is named ``"r8"`` or ``"mr"`` (shipped with the package), ``"r8-long"``
(R8's documents joined into long ones, :func:`long_documents`), or given by a
path: a directory holding ``train.jsonl`` and ``test.jsonl`` (optionally
gzipped; the layout of the shipped corpora), or a single ``.jsonl[.gz]`` file
split 80/20 (stratified, seed 0). Each line is ``{"text": ..., "label": ...}``.
"""

import gzip
import json
import os

import numpy as np

SHIPPED = ("r8", "mr")
# Long documents built from R8: about 5 million training words in documents of
# newsgroup-like lengths (mean about 500 words, 99th percentile about 3,200).
LONG = {"r8-long": {"train_words": 5_000_000, "test_words": 1_000_000}}


def _read_jsonl(path):
    opener = gzip.open if path.endswith(".gz") else open
    texts, labels = [], []
    with opener(path, "rt", encoding="utf-8") as fh:
        for number, line in enumerate(fh, 1):
            if line.strip():
                record = json.loads(line)
                try:
                    texts.append(str(record["text"]))
                    labels.append(str(record["label"]))
                except KeyError as exc:
                    raise ValueError(
                        f"{path}:{number}: each line needs 'text' and 'label', missing {exc}"
                    ) from None
    return texts, np.asarray(labels, dtype=object)


def _find(directory, stem):
    for name in (f"{stem}.jsonl", f"{stem}.jsonl.gz"):
        if os.path.exists(os.path.join(directory, name)):
            return os.path.join(directory, name)
    raise FileNotFoundError(f"{directory} has no {stem}.jsonl or {stem}.jsonl.gz")


def corpus_name(spec):
    """Short name of a corpus for file names and tables."""
    if spec in SHIPPED or spec in LONG:
        return spec
    base = os.path.basename(os.path.normpath(spec))
    for suffix in (".gz", ".jsonl"):
        base = base[: -len(suffix)] if base.endswith(suffix) else base
    return base


def load(spec):
    """Return ``(train_texts, train_labels, test_texts, test_labels)`` of a corpus."""
    if spec in SHIPPED:
        from sklearn_lama import datasets

        loader = getattr(datasets, f"load_{spec}")
        return (*loader(subset="train", return_X_y=True), *loader(subset="test", return_X_y=True))
    if spec in LONG:
        X, y, X_test, y_test = load("r8")
        sizes = LONG[spec]
        return (
            *long_documents(X, y, sizes["train_words"], seed=0),
            *long_documents(X_test, y_test, sizes["test_words"], seed=1),
        )
    if os.path.isdir(spec):
        return (*_read_jsonl(_find(spec, "train")), *_read_jsonl(_find(spec, "test")))
    if not os.path.isfile(spec):
        raise FileNotFoundError(
            f"corpus {spec!r} is neither {' nor '.join(SHIPPED)} nor an existing path"
        )
    from sklearn.model_selection import train_test_split

    texts, labels = _read_jsonl(spec)
    a, b, ya, yb = train_test_split(
        texts, labels, test_size=0.2, random_state=0, stratify=_stratify(labels)
    )
    return a, ya, b, yb


def _stratify(labels):
    # Stratification needs two documents per class; without them, split plainly.
    _, counts = np.unique(labels, return_counts=True)
    return labels if counts.min() >= 2 else None


def head(texts, labels, n):
    """A stratified subset of ``n`` documents (all of them when ``n`` is None or too large)."""
    if n is None or n >= len(texts):
        return list(texts), labels
    from sklearn.model_selection import train_test_split

    a, _, ya, _ = train_test_split(
        list(texts), labels, train_size=n, random_state=0, stratify=_stratify(labels)
    )
    return a, ya


def grow(texts, labels, n, seed=0):
    """``n`` documents cycling through ``texts`` in a random order, later copies shuffled.

    Copies after the first have their words shuffled.

    Vocabulary and document lengths stay those of the corpus, so fit cost
    should follow the total number of tokens only. The random order keeps
    every prefix's label mix that of the corpus (the shipped files are sorted
    by label).
    """
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(texts))
    out, out_labels = [], []
    for i in range(n):
        j = order[i % len(texts)]
        words = texts[j].split()
        if i >= len(texts):
            rng.shuffle(words)
        out.append(" ".join(words))
        out_labels.append(labels[j])
    return out, np.asarray(out_labels, dtype=object)


def long_documents(texts, labels, n_words, seed=0, mean=500, p99=3200, longest=40_000):
    """Documents of one label each, joined from ``texts``, of long-tailed lengths.

    Lengths (in whitespace words) are drawn from the log-normal distribution
    with the given ``mean`` and 99th percentile, clipped to ``[10, longest]``,
    until they add up to ``n_words``; the longest document drawn is then
    stretched to ``longest`` words, so that the tail reaches it. Each
    document takes a label with the corpus's label frequencies and is filled
    with whole documents of that label (drawn with replacement, in a random
    order, the last one cut) up to its length.

    Returns
    -------
    texts : list of str
    labels : ndarray of object
    """
    rng = np.random.default_rng(seed)
    # Log-normal with mean exp(mu + s^2 / 2) and 99th percentile exp(mu + z s).
    z = 2.3263
    gap = np.log(p99) - np.log(mean)
    sigma = z - np.sqrt(z * z - 2 * gap)
    mu = np.log(mean) - sigma**2 / 2
    lengths = []
    while sum(lengths) < n_words:
        lengths.append(int(np.clip(rng.lognormal(mu, sigma), 10, longest)))
    lengths[int(np.argmax(lengths))] = longest
    labels = np.asarray(labels, dtype=object)
    words = [t.split() for t in texts]
    by_label = {c: np.flatnonzero(labels == c) for c in np.unique(labels)}
    classes = list(by_label)
    share = np.array([len(by_label[c]) for c in classes], dtype=float)
    out, out_labels = [], []
    for length in lengths:
        c = classes[rng.choice(len(classes), p=share / share.sum())]
        joined = []
        while len(joined) < length:
            joined.extend(words[rng.choice(by_label[c])])
        out.append(" ".join(joined[:length]))
        out_labels.append(c)
    return out, np.asarray(out_labels, dtype=object)
