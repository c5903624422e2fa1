"""Matplotlib figures: explanation heat-maps and training curves (matplotlib imported lazily)."""

import warnings
from numbers import Integral

import numpy as np
from sklearn.pipeline import Pipeline
from sklearn.utils.validation import check_is_fitted

from ..training._callbacks import SCORES
from ._attention import attend

# The tokens max_tokens="auto" shows: beyond them the tick labels overlap, and
# matplotlib lays out each one (seconds per thousand).
_AUTO_TOKENS = 100


def _pyplot():
    """``matplotlib.pyplot``, or an ImportError that says how to install it."""
    try:
        from matplotlib import pyplot
    except ImportError as exc:
        raise ImportError(
            "sklearn_lama.inspection's plots need matplotlib, an optional dependency: "
            'install it with pip install "sklearn-lama[plot]" (or pip install matplotlib).'
        ) from exc
    return pyplot


def plot_attention(
    pipeline, document, ax=None, *, max_tokens="auto", cmap="RdBu_r", method=None, task=None
):
    """Heat-map of a document's explanation: one column per token, one row per head or stream.

    With ``method="attention"``, row ``j`` is the attention distribution of
    head ``j`` (LAMA's ``A``, Eq. 13), of one direction of the Duo head
    (``a^P``'s weights, scored on ``S``, Eq. 1, and ``a^S``'s, scored on
    ``P``, Eq. 2) or FCSR's feature attention averaged over features (one
    row), over the tokens the vectorizer kept; each row sums to 1, and the
    colours are centred on the uniform weight ``1 / n_tokens`` (white, marked
    on the colour bar): red tokens get more attention than a uniform average
    would give them, blue ones less, and the ends of the scale are the
    document's extreme weights. With ``"integrated_gradients"`` or
    ``"occlusion"``, the one row holds the tokens' attributions to the
    predicted class, on a scale symmetric about 0 (white): red tokens raise
    the class, blue ones lower it. The title gives the predicted class and
    its probability. For a multi-label classifier the explained class is
    the document's most probable label; for a multi-output one, the
    predicted class of ``task``.

    Parameters
    ----------
    pipeline : Pipeline
        A fitted pipeline: a :class:`~sklearn_lama.Word2VecVectorizer` or
        :class:`~sklearn_lama.MetaEmbeddingTransformer`, then a classifier of
        this package.
    document : str
        One raw document.
    ax : matplotlib.axes.Axes, default=None
        Where to draw; ``None`` makes a new figure sized to the document.
    max_tokens : int, None or "auto", default="auto"
        Show only the first ``max_tokens`` tokens (the values are those of the
        whole document); ``None`` shows all of them. ``"auto"`` shows the
        first 100, with a ``UserWarning`` when the document has more: each
        token is a tick label, which matplotlib lays out one by one, so a
        document of thousands of tokens would take minutes to draw, and
        beyond a hundred the labels overlap. When tokens are left out, the
        horizontal axis says how many are shown.

        .. versionchanged:: 0.11.0
           The default was ``None`` (every token).
    cmap : str or matplotlib colormap, default="RdBu_r"
        Colours of the values; a diverging map suits the centring.
    method : {"attention", "integrated_gradients", "occlusion"}, \
            TokenExplainer or None, default=None
        What to show; ``None`` is the classifier's default explanation, the
        most faithful one in the deletion benchmark (see the user guide).
    task : int, default=None
        For a classifier fitted on a multi-output ``y`` (one column per task,
        ``classes_`` a list), the task (column of ``y``) whose prediction is
        explained; it must be given there, and left ``None`` for any other
        classifier.

    Returns
    -------
    ax : matplotlib.axes.Axes
        The axes drawn on, one image row per head, stream or attribution.

    See Also
    --------
    explain : The same values as highlighted text, for notebooks.

    References
    ----------
    .. [1] S. Mehta, H. Rangwala and N. Ramakrishnan, "Compact Multi-Head
       Self-Attention for Learning Supervised Text Representations".
    .. [2] Q. Li, X. Jiang, J. Xia and J. Li, "Meta-Embeddings Based on
       Self-Attention".

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn_lama import LAMAClassifier, Word2VecVectorizer
    >>> from sklearn_lama.inspection import plot_attention
    >>> docs = ["a good great film", "a bad awful film"] * 20
    >>> labels = ["pos", "neg"] * 20
    >>> pipe = make_pipeline(
    ...     Word2VecVectorizer(vector_size=8, min_count=1, random_state=0),
    ...     LAMAClassifier(n_heads=3, hidden_size=4, max_epochs=3, random_state=0),
    ... ).fit(docs, labels)
    >>> ax = plot_attention(pipe, "a great film", method="attention")
    >>> ax.images[0].get_array().shape
    (3, 3)
    >>> ax = plot_attention(pipe, "a great film", method="occlusion")
    >>> ax.images[0].get_array().shape
    (1, 3)
    """
    if not isinstance(document, str):
        raise TypeError(f"document must be one str; got {type(document).__name__}.")
    shown = _AUTO_TOKENS if isinstance(max_tokens, str) and max_tokens == "auto" else max_tokens
    if shown is not None and (
        not isinstance(shown, Integral) or isinstance(shown, bool) or shown < 1
    ):
        raise ValueError(f"max_tokens must be a positive int, None or 'auto'; got {max_tokens!r}.")
    plt = _pyplot()
    from matplotlib.colors import TwoSlopeNorm

    attended = attend(pipeline, [document], method, task=task)
    tokens, weights, method = attended.tokens[0], attended.weights[0], attended.method
    if not tokens:
        raise ValueError(
            "document has no token left after the vectorizer (empty, or every word "
            "discarded): there is nothing to plot."
        )
    centre = method.centre(len(tokens))
    if method.signed:
        # Equal sizes get equal shades on either side of 0.
        top = max(float(np.abs(weights - centre).max()), np.finfo(np.float32).tiny)
        norm = TwoSlopeNorm(vcenter=centre, vmin=centre - top, vmax=centre + top)
    else:
        # White is the uniform weight; the ends of the scale are the document's
        # extreme weights, so that near-uniform heads still show their structure.
        norm = TwoSlopeNorm(
            vcenter=centre,
            vmin=min(weights.min(), 0.99 * centre),
            vmax=max(weights.max(), 1.01 * centre),
        )
    n_tokens = len(tokens)
    if shown is not None and n_tokens > shown:
        if shown is not max_tokens:
            warnings.warn(
                f"document has {n_tokens:,} tokens: plot_attention shows its first {shown} "
                "(max_tokens='auto'); pass max_tokens=None to show all of them, or an int.",
                UserWarning,
                stacklevel=2,
            )
        tokens, weights = tokens[:shown], weights[:, :shown]
    if ax is None:
        # Room for the row labels, the colour bar and the rotated tokens.
        width = min(max(6.0, 0.32 * len(tokens) + 3.0), 20.0)
        height = min(0.3 * weights.shape[0] + 2.2, 10.0)
        _, ax = plt.subplots(figsize=(width, height), layout="constrained")
    image = ax.imshow(weights, aspect="auto", cmap=cmap, norm=norm, interpolation="nearest")
    ax.set_xticks(range(len(tokens)), tokens, rotation=90)
    ax.set_yticks(range(weights.shape[0]), attended.row_labels[: weights.shape[0]])
    ax.tick_params(length=0)
    if len(tokens) < n_tokens:
        ax.set_xlabel(f"first {len(tokens):,} of {n_tokens:,} tokens")
    best = attended.targets[0]
    ax.set_title(
        f"predicted {attended.classes[best]} (p = {attended.proba[0, best]:.2f})", loc="left"
    )
    colorbar = ax.figure.colorbar(image, ax=ax, label=method.value_label, pad=0.01)
    colorbar.ax.axhline(centre, color="0.3", linewidth=0.8)
    return ax


def _fitted_classifier(estimator_or_pipeline):
    estimator = estimator_or_pipeline
    if isinstance(estimator, Pipeline):
        estimator = estimator[-1]
    check_is_fitted(estimator)
    if not hasattr(estimator, "net_"):
        raise TypeError(
            "estimator_or_pipeline must be a fitted classifier of sklearn_lama or a "
            f"Pipeline ending in one; got {type(estimator).__name__}."
        )
    return estimator


def plot_training_curves(estimator_or_pipeline, axes=None):
    """Loss and accuracy per epoch, training against validation.

    Reads the fitted net's history (``net_.history``). The validation curves
    exist when the classifier held out data for early stopping
    (``early_stopping=True`` and data large enough to split). A dotted line
    marks the epoch whose weights were kept (the best validation loss, or
    accuracy with ``scoring="accuracy"``).

    Parameters
    ----------
    estimator_or_pipeline : classifier or Pipeline
        A fitted classifier of this package, or a pipeline ending in one.
    axes : sequence of two matplotlib.axes.Axes, default=None
        Where to draw the loss and the accuracy; ``None`` makes a new figure
        with two panels side by side.

    Returns
    -------
    axes : ndarray of two matplotlib.axes.Axes
        The loss panel and the accuracy panel.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn_lama import FCSRClassifier, Word2VecVectorizer
    >>> from sklearn_lama.inspection import plot_training_curves
    >>> docs = ["a good great film", "a bad awful film"] * 20
    >>> labels = ["pos", "neg"] * 20
    >>> pipe = make_pipeline(
    ...     Word2VecVectorizer(vector_size=8, min_count=1, random_state=0),
    ...     FCSRClassifier(max_epochs=3, validation_fraction=0.25, random_state=0),
    ... ).fit(docs, labels)
    >>> loss_ax, acc_ax = plot_training_curves(pipe)
    >>> [line.get_label() for line in loss_ax.get_lines()][:2]
    ['train', 'validation']
    """
    estimator = _fitted_classifier(estimator_or_pipeline)
    history = estimator.net_.history
    plt = _pyplot()
    if axes is None:
        _, axes = plt.subplots(1, 2, figsize=(9, 3.4), layout="constrained")
    axes = np.asarray(axes, dtype=object).ravel()
    if axes.shape != (2,):
        raise ValueError(f"axes must hold two Axes (loss, accuracy); got {axes.size}.")
    epochs = np.asarray(history[:, "epoch"])
    panels = (
        (axes[0], "loss", (("train_loss", "train"), ("valid_loss", "validation"))),
        (axes[1], "accuracy", (("train_acc", "train"), ("valid_acc", "validation"))),
    )
    for ax, name, keys in panels:
        for key, label in keys:
            values = [row.get(key) for row in history]
            if any(v is None for v in values):
                continue
            style = "-" if label == "train" else "--"
            ax.plot(epochs, values, style, marker="o", markersize=3, label=label)
        ax.set_xlabel("epoch")
        ax.set_ylabel(name)
        ax.grid(alpha=0.3)
    monitor, _ = SCORES[estimator.scoring]
    best = [row["epoch"] for row in history if row.get(f"{monitor}_best")]
    if best:
        for ax in axes:
            ax.axvline(best[-1], color="0.4", linestyle=":", linewidth=1)
    for ax in axes:
        if ax.get_lines()[:1]:
            ax.legend(loc="best")
    return axes
