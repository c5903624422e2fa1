"""Reference models the benchmarks compare against (not part of the installed package)."""

import math

import numpy as np
import torch
from sklearn.base import BaseEstimator, ClassifierMixin
from torch import nn

from sklearn_lama.modules._masking import masked_mean

__all__ = ["NBSVM", "NBSVM_GRID", "TransformerEncoderClassifier", "WORDS", "WORDS_AND_MARKS"]

#: scikit-learn's tokens: words of two or more characters, punctuation dropped.
WORDS = r"(?u)\b\w\w+\b"
#: Every word, and each punctuation mark a token of its own ("!", "?", ":)"'s parts).
WORDS_AND_MARKS = r"(?u)\b\w+\b|[^\w\s]"
#: What the cross-validated NBSVM peer chooses among on a training split: the
#: SVM's regularisation, the interpolation and the tokens (the reference's
#: settings are one candidate).
NBSVM_GRID = {"C": [0.1, 1.0], "beta": [0.25, 1.0], "token_pattern": [WORDS, WORDS_AND_MARKS]}


class NBSVM(ClassifierMixin, BaseEstimator):
    """NBSVM: a linear SVM on binarised n-grams scaled by their Naive Bayes log-count ratios.

    For each class ``c`` (one problem, class 1 against class 0, for two
    classes; one against the rest otherwise), with ``x`` a document's
    binarised n-gram counts: ``r = log((p / |p|_1) / (q / |q|_1))``, where
    ``p = alpha + sum of x over the documents of c`` and ``q`` the same over
    the others (Eq. 1-2 of the reference); an L2-regularised linear SVM with
    the squared hinge loss (liblinear's, as the reference) on ``r * x``; its
    weights interpolated ``w' = (1 - beta) mean(|w|) + beta w`` (§2.3).
    The defaults are the reference's NBSVM-bi.

    Parameters
    ----------
    ngram_range : tuple of int, default=(1, 2)
        Word n-grams, as :class:`~sklearn.feature_extraction.text.CountVectorizer`'s.
    token_pattern : str, default=WORDS
        What a token is, as ``CountVectorizer``'s: :data:`WORDS` (scikit-learn's
        default, words of two or more characters) or :data:`WORDS_AND_MARKS`
        (every word, and each punctuation mark a token).
    alpha : float, default=1.0
        Smoothing of the counts.
    C : float, default=1.0
        The SVM's inverse regularisation.
    beta : float, default=0.25
        Weight of the SVM's own weights in the interpolation.
    random_state : int, default=0
        Seed of liblinear's coordinate order.

    References
    ----------
    Sida Wang and Christopher D. Manning. "Baselines and Bigrams: Simple, Good
    Sentiment and Topic Classification". ACL 2012.
    """

    def __init__(
        self, ngram_range=(1, 2), token_pattern=WORDS, alpha=1.0, C=1.0, beta=0.25, random_state=0
    ):
        self.ngram_range = ngram_range
        self.token_pattern = token_pattern
        self.alpha = alpha
        self.C = C
        self.beta = beta
        self.random_state = random_state

    def fit(self, X, y):
        from sklearn.feature_extraction.text import CountVectorizer
        from sklearn.svm import LinearSVC

        self.vectorizer_ = CountVectorizer(
            ngram_range=self.ngram_range, token_pattern=self.token_pattern, binary=True
        )
        counts = self.vectorizer_.fit_transform(X)
        self.classes_, codes = np.unique(np.asarray(y), return_inverse=True)
        problems = [1] if len(self.classes_) == 2 else range(len(self.classes_))
        ratios, weights, biases = [], [], []
        for c in problems:
            own = codes == c
            p = self.alpha + np.asarray(counts[own].sum(axis=0)).ravel()
            q = self.alpha + np.asarray(counts[~own].sum(axis=0)).ravel()
            r = np.log(p / p.sum()) - np.log(q / q.sum())
            svm = LinearSVC(C=self.C, random_state=self.random_state)
            svm.fit(counts.multiply(r).tocsr(), own)
            w = svm.coef_.ravel()
            ratios.append(r)
            weights.append((1 - self.beta) * np.abs(w).mean() + self.beta * w)
            biases.append(svm.intercept_[0])
        self.ratios_, self.coef_ = np.vstack(ratios), np.vstack(weights)
        self.intercept_ = np.asarray(biases)
        return self

    def decision_function(self, X):
        """Each problem's score, shape ``(n_documents,)`` for two classes, else one per class."""
        counts = self.vectorizer_.transform(X)
        scores = np.column_stack(
            [counts @ (r * w) + b for r, w, b in zip(self.ratios_, self.coef_, self.intercept_)]
        )
        return scores.ravel() if len(self.classes_) == 2 else scores

    def predict(self, X):
        scores = self.decision_function(X)
        index = (scores > 0).astype(int) if scores.ndim == 1 else scores.argmax(axis=1)
        return self.classes_[index]


class TransformerEncoderClassifier(nn.Module):
    """Transformer-encoder text classifier: the TE baseline of the LAMA paper.

    ``x`` (B, T, input_size) -> linear projection to ``d_model`` (only when the
    sizes differ) -> position encoding -> ``n_layers`` of
    :class:`torch.nn.TransformerEncoderLayer` with the padding mask -> masked
    mean over time -> MLP (``mlp_hidden`` ReLU units, dropout) -> logits.

    The word embeddings themselves live outside, in
    :class:`~sklearn_lama.modules.SequenceNetwork`, as for every other model of
    the package; give it ``embedding_dim=d_model`` to reproduce a Transformer
    with its own ``d_model``-wide embedding table (Table 5 of Mehta, Rangwala
    and Ramakrishnan, "Compact Multi-Head Self-Attention for Learning
    Supervised Text Representations").

    Parameters
    ----------
    input_size : int
        Width of the input word vectors.
    n_classes : int
        Number of output logits.
    d_model : int or None, default=None
        Width of the encoder; None uses ``input_size`` (no projection).
    n_heads : int, default=8
        Attention heads; must divide ``d_model`` (the paper's TE: 8 heads,
        ``d_model`` 512).
    dim_feedforward : int or None, default=None
        Width of the position-wise feed-forward layer; None is ``4 * d_model``
        (the original Transformer's ratio, 2048 for ``d_model`` 512).
    n_layers : int, default=1
        Encoder layers (the paper's TE has one).
    dropout : float, default=0.1
        Dropout inside the encoder layers (PyTorch's default).
    mlp_hidden : int, default=512
        Hidden units of the classifier MLP (LAMA's default; Table 5 uses 1024).
    mlp_dropout : float, default=0.4
        Dropout on the MLP's hidden layer (LAMA's default).
    max_length : int or None, default=None
        None: fixed sinusoidal position encoding (no parameters, any length).
        An int: a learned position table of that many rows, whose parameters
        count in the model's size as the paper counts them; longer documents
        are refused.

    Notes
    -----
    ``forward(x, mask)``: ``mask`` (B, T) bool, True on real tokens. Padded
    positions are excluded from attention (``src_key_padding_mask``) and from
    the mean, so a document's logits do not depend on the padding of its batch.
    A row without any real token gets logits from a zero representation
    instead of the NaN that attention over nothing would give.
    """

    def __init__(
        self,
        input_size,
        n_classes,
        d_model=None,
        n_heads=8,
        dim_feedforward=None,
        n_layers=1,
        dropout=0.1,
        mlp_hidden=512,
        mlp_dropout=0.4,
        max_length=None,
    ):
        super().__init__()
        d_model = input_size if d_model is None else d_model
        if d_model % n_heads:
            raise ValueError(f"n_heads={n_heads} must divide d_model={d_model}.")
        self.d_model = d_model
        self.max_length = max_length
        self.projection = nn.Linear(input_size, d_model) if input_size != d_model else None
        self.positions = nn.Embedding(max_length, d_model) if max_length is not None else None
        layer = nn.TransformerEncoderLayer(
            d_model,
            n_heads,
            dim_feedforward=4 * d_model if dim_feedforward is None else dim_feedforward,
            dropout=dropout,
            batch_first=True,
        )
        # Nested tensors would only change the eval-mode kernels; keeping the
        # padded path makes training and inference compute the same thing.
        self.encoder = nn.TransformerEncoder(layer, n_layers, enable_nested_tensor=False)
        self.classifier = nn.Sequential(
            nn.Linear(d_model, mlp_hidden),
            nn.ReLU(),
            nn.Dropout(mlp_dropout),
            nn.Linear(mlp_hidden, n_classes),
        )

    def _position_encoding(self, length, like):
        if self.positions is not None:
            if length > self.max_length:
                raise ValueError(
                    f"Documents of {length} tokens exceed max_length={self.max_length} "
                    "of the learned position table."
                )
            return self.positions.weight[:length]
        position = torch.arange(length, dtype=like.dtype, device=like.device).unsqueeze(1)
        frequency = torch.exp(
            torch.arange(0, self.d_model, 2, dtype=like.dtype, device=like.device)
            * (-math.log(10000.0) / self.d_model)
        )
        encoding = like.new_zeros(length, self.d_model)
        encoding[:, 0::2] = torch.sin(position * frequency)
        encoding[:, 1::2] = torch.cos(position * frequency[: self.d_model // 2])
        return encoding

    def forward(self, x, mask):
        """Return the logits (B, n_classes) for vectors ``x`` (B, T, d) and ``mask``."""
        h = x if self.projection is None else self.projection(x)
        h = h + self._position_encoding(h.shape[1], h)
        # An all-padding row would make attention NaN; let it attend to its
        # padding instead, then the masked mean below discards the result.
        empty = ~mask.any(1, keepdim=True)
        h = self.encoder(h, src_key_padding_mask=~(mask | empty))
        return self.classifier(masked_mean(h, mask))
