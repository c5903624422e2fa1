"""
FCSR's forgetting factor: how far does the context reach?
=========================================================

:class:`~sklearn_lama.FCSRClassifier` compresses everything left and right of
each word with a fixed-size ordinally-forgetting encoding (FOFE, Eq. 2-3 of
the FCSR paper): a context word ``k`` positions away counts ``alpha**(k-1)``.
``alpha = 0`` keeps only the two neighbours; values near 1 let the whole
sentence count. The paper uses 0.2. This example sweeps ``alpha`` on movie
reviews, then shows the model's feature attention over one sentence.

Budget: 2,000 of the 7,108 MR training sentences, 4 epochs per fit, four
values of ``alpha``; about 40 seconds of CPU time (one torch thread). One subsample and one
seed: differences of a point or two are within noise here (on the full corpus
the default reaches about 0.75, see :doc:`/results`).
"""

# %%
# Sweep alpha
# -----------
import matplotlib.pyplot as plt
import numpy as np
from sklearn.base import clone
from sklearn.pipeline import make_pipeline

from sklearn_lama import FCSRClassifier, Word2VecVectorizer
from sklearn_lama.datasets import load_mr
from sklearn_lama.inspection import plot_attention

texts, labels = load_mr(return_X_y=True)
test_texts, test_labels = load_mr(subset="test", return_X_y=True)
names = {"0": "negative", "1": "positive"}
labels = np.array([names[label] for label in labels])
test_labels = np.array([names[label] for label in test_labels])
train = np.random.default_rng(0).choice(len(texts), 2000, replace=False)
train_texts = [texts[i] for i in train]

# The word vectors do not depend on alpha: train them once.
vectorizer = Word2VecVectorizer(random_state=0).fit(train_texts)
train_seqs = vectorizer.transform(train_texts)
test_seqs = vectorizer.transform(test_texts)

alphas = [0.0, 0.2, 0.5, 0.9]
base = FCSRClassifier(max_epochs=4, random_state=0)
accuracy, models = {}, {}
for alpha in alphas:
    models[alpha] = clone(base).set_params(alpha=alpha).fit(train_seqs, labels[train])
    accuracy[alpha] = models[alpha].score(test_seqs, test_labels)
    print(f"alpha={alpha:<5} test accuracy {accuracy[alpha]:.3f}")

fig, ax = plt.subplots(figsize=(5, 3.2), layout="constrained")
ax.plot(alphas, list(accuracy.values()), marker="o")
ax.axvline(0.2, color="0.5", linestyle=":", label="paper's alpha")
ax.set_xlabel("alpha (FOFE forgetting factor)")
ax.set_ylabel("MR test accuracy")
legend = ax.legend()

# %%
# Feature attention over one sentence
# -----------------------------------
# FCSR pools each of its ``4n`` features over time with its own softmax (Eq.
# 9). The heat-map shows those weights averaged over features: one row, which
# sums to one over the sentence. The average stays close to uniform (note the
# narrow colour scale): each feature picks its own words, and averaging over
# the features washes most of that out.
best = max(accuracy, key=accuracy.get)
pipe = make_pipeline(vectorizer, models[best])
ax = plot_attention(
    pipe,
    "the plot is thin and predictable , yet the performances are a joy to watch",
    method="attention",
)
