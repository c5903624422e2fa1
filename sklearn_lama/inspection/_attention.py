"""Run a fitted pipeline's classifier on raw documents and pair its explanations with the words."""

from numbers import Integral
from typing import NamedTuple

import numpy as np
from sklearn.pipeline import Pipeline
from sklearn.utils.validation import check_is_fitted

from ..text._sequences import OOV_ID
from ._methods import resolve_method


class Attended(NamedTuple):
    """The tokens of each document, their rows of a method and the class probabilities."""

    tokens: list  # list of list of str, one per document
    weights: list  # list of ndarray (n_rows, n_tokens_i), the method's values
    proba: np.ndarray  # (n_documents, n_classes), of the task explained
    classes: np.ndarray  # of the task explained
    row_labels: list  # one name per row
    method: object  # the TokenExplainer that gave the weights
    targets: np.ndarray  # (n_documents,) index in classes of the class each row explains


def split_pipeline(pipeline):
    """Return ``(text_to_sequences, vectorizer, classifier)`` of a fitted pipeline."""
    if not isinstance(pipeline, Pipeline) or len(pipeline) < 2:
        raise TypeError(
            "pipeline must be a fitted sklearn Pipeline of a text vectorizer "
            "(Word2VecVectorizer or MetaEmbeddingTransformer) followed by a classifier "
            f"of sklearn_lama; got {type(pipeline).__name__}."
        )
    classifier = pipeline[-1]
    if not hasattr(classifier, "attention_weights"):
        raise TypeError(
            "the last step of pipeline must be a classifier with attention_weights "
            f"(LAMAClassifier, FCSRClassifier, DuoClassifier); got {type(classifier).__name__}."
        )
    check_is_fitted(classifier)
    vectorizers = [text for _, step in pipeline.steps[:-1] for text in text_steps(step)]
    if not vectorizers:
        raise TypeError(
            "pipeline has no fitted step with a vocabulary_ before its classifier: the "
            "words cannot be recovered. Put a fitted Word2VecVectorizer or "
            "MetaEmbeddingTransformer before the classifier (or in its ColumnTransformer)."
        )
    return pipeline[:-1], vectorizers[-1], classifier


def text_steps(step):
    """The text steps (with a ``vocabulary_``) that ``step`` is or holds as a ColumnTransformer."""
    if hasattr(step, "vocabulary_"):
        return [step]
    named = getattr(step, "named_transformers_", None)
    return [] if named is None else [t for t in named.values() if hasattr(t, "vocabulary_")]


def check_task(classifier, task):
    """``task`` checked against ``classifier``: a task's index for a multi-output one, else None.

    A classifier fitted on a multi-output ``y`` (one column per task,
    ``classes_`` a list) predicts one class per task, so every explanation
    names its task; any other classifier has one set of ``classes_``.
    """
    classes = classifier.classes_
    if isinstance(classes, list):
        if task is None:
            raise ValueError(
                f"the classifier was fitted on a multi-output y ({len(classes)} tasks, "
                "classes_ a list): pass task=k, the index of the task (column of y) to "
                f"explain, 0 <= k < {len(classes)}."
            )
        if not isinstance(task, Integral) or isinstance(task, bool):
            raise ValueError(f"task must be an int (a column of y); got {task!r}.")
        if not 0 <= task < len(classes):
            raise ValueError(
                f"task must be in [0, {len(classes)}), the classifier's {len(classes)} "
                f"tasks; got {task!r}."
            )
        return int(task)
    if task is not None:
        raise ValueError(
            f"task={task!r} applies to a classifier fitted on a multi-output y (one column "
            "per task, classes_ a list); this one has one set of classes_: leave task=None."
        )
    return None


def task_classes(classifier, task):
    """The classes of ``task`` (every class for ``task=None``)."""
    return classifier.classes_ if task is None else classifier.classes_[task]


def task_proba(classifier, X, task):
    """The ``(n_documents, n_classes)`` probabilities of ``task``'s classes on ``X``.

    Each label's own probability for a multi-label classifier.
    """
    proba = classifier.predict_proba(X)
    return proba if task is None else proba[task]


def read_documents(pipeline, documents, task=None):
    """``(tokens, sequences, classifier, task)``: ``documents`` as the classifier reads them.

    ``tokens`` holds the words of each document that the vectorizer kept,
    ``"<oov>"`` for an out-of-vocabulary one; ``task`` is checked
    (:func:`check_task`) before any document is read.
    """
    if isinstance(documents, str):
        raise TypeError(
            "documents must be an iterable of str (or, for a pipeline that starts with a "
            "ColumnTransformer, its DataFrame), not a single str; wrap one document in a list."
        )
    transform, vectorizer, classifier = split_pipeline(pipeline)
    task = check_task(classifier, task)
    sequences = transform.transform(documents)
    words = np.empty(max(vectorizer.vocabulary_.values(), default=OOV_ID) + 1, dtype=object)
    words[OOV_ID] = "<oov>"
    for word, i in vectorizer.vocabulary_.items():
        words[i] = word
    tokens = [[str(w) for w in words[sequences.document(i)]] for i in range(len(sequences))]
    return tokens, sequences, classifier, task


def class_indices(labels, classes, name):
    """The positions in ``classes`` of ``labels``, or a ValueError naming ``name``."""
    position = {c: i for i, c in enumerate(classes.tolist())}
    labels = np.asarray(labels, dtype=object).tolist()
    unknown = {label for label in labels if label not in position}
    if unknown:
        raise ValueError(
            f"{name} holds labels {sorted(unknown, key=repr)!r} that are not in the "
            f"classifier's classes {classes.tolist()!r}."
        )
    return np.array([position[label] for label in labels], dtype=np.intp)


def attend(pipeline, documents, method=None, targets=None, targets_name="y", task=None):
    """Tokens, per-token values of ``method`` and probabilities of ``documents``.

    ``targets`` are the labels of the classes to explain (of ``task``'s
    classes for a multi-output classifier, label columns for a multi-label
    one): one per document, or one label for all of them; ``None`` explains
    each document's most probable class, which for a multi-label classifier
    is its most probable label. ``targets_name`` names them in errors.
    """
    tokens, sequences, classifier, task = read_documents(pipeline, documents, task)
    method = resolve_method(method, classifier)
    # Before any prediction: a method refuses documents too long for it at once.
    method._check_documents(classifier, sequences)
    classes = task_classes(classifier, task)
    if targets is not None:
        if np.ndim(targets) == 0:
            targets = [targets] * len(tokens)
        elif len(targets) != len(tokens):
            raise ValueError(
                f"{targets_name} has {len(targets)} labels but there are {len(tokens)} documents."
            )
        index = class_indices(targets, classes, targets_name)
    proba = task_proba(classifier, sequences, task)
    if targets is None:
        index = proba.argmax(axis=1)
    weights = method.attribute(classifier, sequences, index, task=task)
    n_rows = max((w.shape[0] for w in weights), default=1)
    return Attended(
        tokens=tokens,
        weights=weights,
        proba=proba,
        classes=classes,
        row_labels=method.row_labels(classifier, n_rows),
        method=method,
        targets=index,
    )
