"""Hold-out splits of the training rows, drawn once before training."""

import numpy as np
from sklearn.model_selection import StratifiedShuffleSplit
from torch.utils.data import Subset

__all__ = ["HoldOut", "RowSplit", "train_split"]


_MIN_VALID_PER_CLASS = 5


class RowSplit:
    """skorch ``train_split`` holding out given rows of the training data.

    It keeps row numbers only (never the data), so a pickled net stays its
    size.

    Parameters
    ----------
    train_rows, valid_rows : ndarray of int
        Rows of the training data on each side; batches follow their order.
    """

    def __init__(self, train_rows, valid_rows):
        self.train_rows = train_rows
        self.valid_rows = valid_rows

    def __call__(self, dataset, y=None, groups=None):
        return Subset(dataset, self.train_rows), Subset(dataset, self.valid_rows)


class HoldOut(RowSplit):
    """A stratified hold-out split of the training rows, drawn once.

    The rows are those skorch's ``ValidSplit(fraction, stratified=True,
    random_state=seed)`` would hold out; drawing them up front lets the
    training-set statistics (the Naive Bayes features) leave them out.
    """

    def __init__(self, y, validation_fraction, seed):
        splitter = StratifiedShuffleSplit(test_size=validation_fraction, random_state=seed)
        super().__init__(*next(splitter.split(np.zeros(len(y)), y)))


def train_split(y, validation_fraction, seed):
    """The stratified :class:`HoldOut` split, or ``None`` when the data are too small."""
    n_valid = int(np.ceil(validation_fraction * len(y)))
    counts = np.bincount(y)
    n_classes = np.count_nonzero(counts)
    # A stratified split needs every class twice and room for each class on
    # both sides, and a held-out set of a few documents per class picks its
    # "best" epoch by chance; on smaller data early stopping is skipped
    # (documented).
    if (
        counts[counts > 0].min() < 2
        or n_valid < _MIN_VALID_PER_CLASS * n_classes
        or len(y) - n_valid < n_classes
    ):
        return None
    return HoldOut(y, validation_fraction, seed)
