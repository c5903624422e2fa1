"""Loaders of the shipped corpora, in the style of ``sklearn.datasets.load_*``."""

import gzip
import json
from importlib import resources

import numpy as np
from sklearn.utils import Bunch

_DESCR = {
    "r8": (
        "Reuters-21578 R8\n----------------\n"
        "News articles of the 8 most frequent single-topic Reuters-21578 categories "
        "(acq, crude, earn, grain, interest, money-fx, ship, trade), in the R8 split "
        "of Ana Cardoso-Cachopo (2007): 5,485 training and 2,189 test documents, "
        "lower-cased with punctuation removed. Reuters-21578 is distributed by "
        "David D. Lewis for research use; cite the collection and the split."
    ),
    "mr": (
        "Movie Review sentence polarity (MR)\n-----------------------------------\n"
        "Sentence polarity dataset v1.0 of Bo Pang and Lillian Lee (ACL 2005): "
        "movie-review snippets labelled '0' (negative) or '1' (positive), split "
        "into 7,108 training and 3,554 test sentences as in Text GCN (Yao, Mao and "
        "Luo, AAAI 2019). Cite Pang & Lee (2005) when you use it."
    ),
}


def _load(name, subset, return_X_y):
    if subset not in ("train", "test", "all"):
        raise ValueError(f"subset must be 'train', 'test' or 'all', got {subset!r}.")
    parts = ["train", "test"] if subset == "all" else [subset]
    texts, labels = [], []
    folder = resources.files(__package__).joinpath("data", name)
    for part in parts:
        with folder.joinpath(f"{part}.jsonl.gz").open("rb") as raw:
            with gzip.open(raw, "rt", encoding="utf-8") as lines:
                for line in lines:
                    record = json.loads(line)
                    texts.append(record["text"])
                    labels.append(record["label"])
    target = np.asarray(labels, dtype=object)
    if return_X_y:
        return texts, target
    return Bunch(
        data=texts,
        target=target,
        target_names=np.unique(target),
        DESCR=_DESCR[name],
    )


def load_r8(*, subset="train", return_X_y=False):
    """Load the Reuters R8 news-topic corpus (8 classes).

    Parameters
    ----------
    subset : {"train", "test", "all"}, default="train"
        Which split to load: 5,485 training documents, 2,189 test documents,
        or both (training first).
    return_X_y : bool, default=False
        Return ``(data, target)`` instead of a Bunch.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        ``data`` (list of str), ``target`` (ndarray of str labels),
        ``target_names`` and ``DESCR``.
    (data, target) : tuple if ``return_X_y`` is True

    Examples
    --------
    >>> from sklearn_lama.datasets import load_r8
    >>> texts, labels = load_r8(subset="test", return_X_y=True)
    >>> len(texts), sorted(set(labels))[:3]
    (2189, ['acq', 'crude', 'earn'])
    """
    return _load("r8", subset, return_X_y)


def load_mr(*, subset="train", return_X_y=False):
    """Load the MR movie-review sentence-polarity corpus (2 classes).

    Parameters
    ----------
    subset : {"train", "test", "all"}, default="train"
        Which split to load: 7,108 training sentences, 3,554 test sentences,
        or both (training first).
    return_X_y : bool, default=False
        Return ``(data, target)`` instead of a Bunch.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        ``data`` (list of str), ``target`` (ndarray of labels ``'0'``/``'1'``),
        ``target_names`` and ``DESCR``.
    (data, target) : tuple if ``return_X_y`` is True

    Examples
    --------
    >>> from sklearn_lama.datasets import load_mr
    >>> texts, labels = load_mr(return_X_y=True)
    >>> len(texts), sorted(set(labels))
    (7108, ['0', '1'])
    """
    return _load("mr", subset, return_X_y)
