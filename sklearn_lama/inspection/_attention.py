"""Run a fitted pipeline's classifier on raw documents and pair its attention with the words."""

from typing import NamedTuple

import numpy as np
from sklearn.pipeline import Pipeline
from sklearn.utils.validation import check_is_fitted

from ..text._sequences import OOV_ID


class Attended(NamedTuple):
    """The tokens of each document, its attention rows and the class probabilities."""

    tokens: list  # list of list of str, one per document
    weights: list  # list of ndarray (n_rows, n_tokens_i)
    proba: np.ndarray  # (n_documents, n_classes)
    classes: np.ndarray
    row_labels: list  # one name per attention row


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


def row_labels(classifier, n_rows):
    """Names of the attention rows, as the classifier gives them (heads, streams).

    A classifier from outside this package, which has no names for its rows,
    gets ``"attention"`` for a single row and ``"row j"`` for several.
    """
    labels = getattr(classifier, "_attention_row_labels", None)
    if labels is not None:
        return list(labels())
    if n_rows == 1:
        return ["attention"]
    return [f"row {j + 1}" for j in range(n_rows)]


def attend(pipeline, documents):
    """Tokens, attention and probabilities of ``documents`` (an iterable of str)."""
    if isinstance(documents, str):
        raise TypeError(
            "documents must be an iterable of str, not a single str; wrap one document in a list."
        )
    transform, vectorizer, classifier = split_pipeline(pipeline)
    sequences = transform.transform(documents)
    weights = [np.asarray(w, dtype=np.float64) for w in classifier.attention_weights(sequences)]
    words = np.empty(max(vectorizer.vocabulary_.values(), default=OOV_ID) + 1, dtype=object)
    words[OOV_ID] = "<oov>"
    for word, i in vectorizer.vocabulary_.items():
        words[i] = word
    tokens = [[str(w) for w in words[sequences.document(i)]] for i in range(len(sequences))]
    n_rows = max((w.shape[0] for w in weights), default=1)
    return Attended(
        tokens=tokens,
        weights=weights,
        proba=classifier.predict_proba(sequences),
        classes=classifier.classes_,
        row_labels=row_labels(classifier, n_rows),
    )
