"""Run a fitted pipeline's classifier on raw documents and pair its explanations with the words."""

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
    proba: np.ndarray  # (n_documents, n_classes)
    classes: np.ndarray
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
    vectorizers = [step for _, step in pipeline.steps[:-1] if hasattr(step, "vocabulary_")]
    if not vectorizers:
        raise TypeError(
            "pipeline has no fitted step with a vocabulary_ before its classifier: the "
            "words cannot be recovered. Put a fitted Word2VecVectorizer or "
            "MetaEmbeddingTransformer before the classifier."
        )
    return pipeline[:-1], vectorizers[-1], classifier


def read_documents(pipeline, documents):
    """``(tokens, sequences, classifier)``: ``documents`` as the classifier reads them.

    ``tokens`` holds the words of each document that the vectorizer kept,
    ``"<oov>"`` for an out-of-vocabulary one.
    """
    if isinstance(documents, str):
        raise TypeError(
            "documents must be an iterable of str, not a single str; wrap one document in a list."
        )
    transform, vectorizer, classifier = split_pipeline(pipeline)
    sequences = transform.transform(documents)
    words = np.empty(max(vectorizer.vocabulary_.values(), default=OOV_ID) + 1, dtype=object)
    words[OOV_ID] = "<oov>"
    for word, i in vectorizer.vocabulary_.items():
        words[i] = word
    tokens = [[str(w) for w in words[sequences.document(i)]] for i in range(len(sequences))]
    return tokens, sequences, classifier


def class_indices(labels, classes, name):
    """The positions in ``classes`` of ``labels``, or a ValueError naming ``name``."""
    position = {c: i for i, c in enumerate(classes.tolist())}
    labels = np.asarray(labels, dtype=object).tolist()
    unknown = {label for label in labels if label not in position}
    if unknown:
        raise ValueError(
            f"{name} holds labels {sorted(unknown, key=repr)!r} that are not in the "
            f"classifier's classes_ {classes.tolist()!r}."
        )
    return np.array([position[label] for label in labels], dtype=np.intp)


def attend(pipeline, documents, method=None, targets=None, targets_name="y"):
    """Tokens, per-token values of ``method`` and probabilities of ``documents``.

    ``targets`` are the labels of the classes to explain: one per document,
    or one label for all of them; ``None`` explains each document's predicted
    class. ``targets_name`` names them in errors.
    """
    tokens, sequences, classifier = read_documents(pipeline, documents)
    method = resolve_method(method, classifier)
    proba = classifier.predict_proba(sequences)
    if targets is None:
        index = proba.argmax(axis=1)
    else:
        if np.ndim(targets) == 0:
            targets = [targets] * len(tokens)
        elif len(targets) != len(tokens):
            raise ValueError(
                f"{targets_name} has {len(targets)} labels but there are {len(tokens)} documents."
            )
        index = class_indices(targets, classifier.classes_, targets_name)
    weights = method.attribute(classifier, sequences, index)
    n_rows = max((w.shape[0] for w in weights), default=1)
    return Attended(
        tokens=tokens,
        weights=weights,
        proba=proba,
        classes=classifier.classes_,
        row_labels=method.row_labels(classifier, n_rows),
        method=method,
        targets=index,
    )
