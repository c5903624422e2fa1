"""The sequence classifiers: their shared base, input adapters and Naive Bayes features."""

from ._duo import DuoClassifier
from ._fcsr import FCSRClassifier
from ._inputs import InputAdapter
from ._lama import LAMAClassifier

__all__ = ["DuoClassifier", "FCSRClassifier", "InputAdapter", "LAMAClassifier"]
