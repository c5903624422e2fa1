"""Hold-out splits of the training rows, drawn once before training."""

import numpy as np
from sklearn.model_selection import ShuffleSplit, StratifiedShuffleSplit
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
    """A hold-out split of the training rows, drawn once, stratified on ``strata``.

    With ``strata``, the rows are those skorch's ``ValidSplit(fraction,
    stratified=True, random_state=seed)`` would hold out; ``strata=None``
    (several labels per document, or sentence pairs) draws them uniformly
    from ``n_rows`` rows. ``test_size`` is a share of the rows or a number
    of rows, as in :class:`~sklearn.model_selection.ShuffleSplit`. Drawing
    them up front lets the training-set statistics (the Naive Bayes
    features, subword vocabularies) leave them out.
    """

    def __init__(self, strata, test_size, seed, n_rows=None):
        if strata is None:
            splitter = ShuffleSplit(test_size=test_size, random_state=seed)
            super().__init__(*next(splitter.split(np.zeros(n_rows))))
        else:
            splitter = StratifiedShuffleSplit(test_size=test_size, random_state=seed)
            super().__init__(*next(splitter.split(np.zeros(len(strata)), strata)))


def train_split(strata, validation_fraction, seed, n_rows=None):
    """The :class:`HoldOut` split, or ``None`` when the data are too small.

    ``strata`` are the rows' classes to stratify on, or ``None`` for an
    unstratified split of ``n_rows`` rows (then held out when there are at
    least ``2 * 5`` held-out rows).
    """
    if strata is None:
        n_valid = int(np.ceil(validation_fraction * n_rows))
        if n_valid < 2 * _MIN_VALID_PER_CLASS or n_rows - n_valid < 2:
            return None
        return HoldOut(None, validation_fraction, seed, n_rows)
    y = strata
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
