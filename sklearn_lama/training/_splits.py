"""The hold-out rule of every estimator: the validation rows, drawn once before training."""

import numpy as np
from sklearn.model_selection import ShuffleSplit, StratifiedShuffleSplit
from torch.utils.data import Subset

__all__ = ["HoldOut", "RowSplit", "hold_out"]


# A held-out set of fewer rows per class picks its "best" epoch by chance.
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

    def by_length(self, lengths):
        """The same split, its validation rows in order of ``lengths`` (tokens per row).

        Validation batches then hold rows of similar lengths, hence little
        padding; the loss and the scores are means over the rows, whatever
        their order.
        """
        valid = self.valid_rows[np.argsort(lengths[self.valid_rows], kind="stable")]
        return RowSplit(self.train_rows, valid)


class HoldOut(RowSplit):
    """A hold-out split of the training rows, drawn once, stratified on ``strata``.

    With ``strata``, the rows are those skorch's ``ValidSplit(fraction,
    stratified=True, random_state=seed)`` would hold out; ``strata=None``
    (several labels per document, or sentence pairs) draws them uniformly
    from ``n_rows`` rows. ``test_size`` is the share of the rows held out,
    rounded up as :class:`~sklearn.model_selection.ShuffleSplit` rounds it.
    Drawing them up front lets the training-set statistics (the Naive Bayes
    features, subword vocabularies) leave them out.
    """

    def __init__(self, strata, test_size, seed, n_rows=None):
        if strata is None:
            splitter = ShuffleSplit(test_size=test_size, random_state=seed)
            super().__init__(*next(splitter.split(np.zeros(n_rows))))
        else:
            splitter = StratifiedShuffleSplit(test_size=test_size, random_state=seed)
            super().__init__(*next(splitter.split(np.zeros(len(strata)), strata)))


def hold_out(config, n_rows, seed, strata=None):
    """The rows a fit holds out for early stopping: a :class:`HoldOut`, or ``None``.

    The one rule of every estimator. With ``config.early_stopping``,
    ``ceil(config.validation_fraction * n_rows)`` rows are held out, drawn
    with ``seed``: stratified on ``strata`` when given (one class per row),
    uniformly otherwise (several labels per document, sentence pairs). No
    rows are held out (``None``: no early stopping) without
    ``config.early_stopping``, or when the data are too small for a useful
    split: fewer than 5 held-out rows per class or fewer rows to train on
    than classes, where an unstratified split counts as two classes (at
    least 10 held-out rows and 2 to train on); stratified, also when a
    class has a single row.

    Parameters
    ----------
    config : TrainingConfig
        The fit's training parameters (``early_stopping``, ``validation_fraction``).
    n_rows : int
        Rows of the training data.
    seed : int
        The fit's seed.
    strata : ndarray of int of shape (n_rows,) or None, default=None
        The rows' classes to stratify on.

    Returns
    -------
    split : HoldOut or None
    """
    if not config.early_stopping:
        return None
    fraction = config.validation_fraction
    n_valid = int(np.ceil(fraction * n_rows))
    if strata is None:
        n_classes, splittable = 2, True
    else:
        counts = np.bincount(strata)
        n_classes = np.count_nonzero(counts)
        # Stratifying needs every class on both sides.
        splittable = counts[counts > 0].min() >= 2
    if (
        not splittable
        or n_valid < _MIN_VALID_PER_CLASS * n_classes
        or n_rows - n_valid < n_classes
    ):
        return None
    return HoldOut(strata, fraction, seed, n_rows)
