"""What each side feature (a tabular column beside the text) adds to a prediction."""

from typing import NamedTuple

import numpy as np

from ._attention import check_task, class_indices, split_pipeline, task_classes, task_proba


class SideContributions(NamedTuple):
    """The side features' terms of the logit of each document's explained class.

    Attributes
    ----------
    names : ndarray of str, shape (n_side,)
        The side features, named as the ColumnTransformer names its outputs.
    values : ndarray of shape (n_documents, n_side)
        ``side[i, j] * W[c_i, j]``: what feature ``j`` adds to the logit of
        document ``i``'s explained class ``c_i``. With the text's logit they
        sum to the class's logit.
    classes : ndarray of shape (n_documents,)
        The explained class of each document.
    """

    names: np.ndarray
    values: np.ndarray
    classes: np.ndarray


def side_contributions(pipeline, X, targets=None, *, task=None):
    """What each side feature adds to the logit of each document's explained class.

    A classifier fitted with side features (see the user guide's page on
    text beside tabular columns) adds a linear term ``W s`` of them to its
    logits; this splits that term by feature. The text's part is explained
    by :func:`token_attributions` and :func:`explain`, which take the same
    pipeline and ``X``.

    Parameters
    ----------
    pipeline : Pipeline
        A fitted pipeline: a :class:`~sklearn.compose.ColumnTransformer`
        holding a :class:`~sklearn_lama.Word2VecVectorizer` or
        :class:`~sklearn_lama.MetaEmbeddingTransformer` and the side
        columns' encoders, then a classifier of this package.
    X : DataFrame
        The rows to explain, with the columns the pipeline was fitted on.
    targets : label or array-like of labels, default=None
        The class to explain, one for all rows or one per row (of ``task``'s
        classes for a multi-output classifier, a label column for a
        multi-label one); ``None``: each row's most probable class.
    task : int, default=None
        For a classifier fitted on a multi-output ``y``, the task explained.

    Returns
    -------
    contributions : SideContributions
        The features' names, their terms ``(n_documents, n_side)`` and the
        explained classes.
    """
    transform, _, classifier = split_pipeline(pipeline)
    task = check_task(classifier, task)
    sequences = transform.transform(X)
    network = classifier.net_.module_
    if network.side is None:
        raise ValueError(
            "the classifier was fitted without side features: put the text step in a "
            "ColumnTransformer beside the other columns' encoders."
        )
    classes = task_classes(classifier, task)
    if targets is None:
        index = task_proba(classifier, sequences, task).argmax(axis=1)
    else:
        targets = [targets] * len(sequences) if np.ndim(targets) == 0 else targets
        index = class_indices(targets, classes, "targets")
    # A multi-output classifier's logits hold the tasks' blocks side by side.
    offset = 0 if task is None else sum(classifier.target_encoder_.sizes[:task])
    weights = network.side.weight.detach().cpu().numpy().astype(np.float64)
    values = sequences.side * weights[offset + index]
    return SideContributions(_side_names(pipeline, sequences), values, classes[index])


def _side_names(pipeline, sequences):
    """The side features' names: the ColumnTransformer's output names but the text's."""
    for _, step in pipeline.steps[:-1]:
        indices = getattr(step, "output_indices_", None)
        if indices is None:
            continue
        text = [name for name, t in step.named_transformers_.items() if hasattr(t, "vocabulary_")]
        try:
            names = step.get_feature_names_out()
        except (AttributeError, ValueError):
            break
        keep = np.ones(len(names), dtype=bool)
        keep[indices[text[0]]] = False
        return names[keep]
    if sequences.side_names is not None:
        return np.asarray(sequences.side_names, dtype=object)
    return np.asarray([f"side{j}" for j in range(sequences.n_side)], dtype=object)
