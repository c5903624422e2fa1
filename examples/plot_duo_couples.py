"""
Duo meta-embeddings: which couple of embeddings works best?
===========================================================

:class:`~sklearn_lama.DuoClassifier` reads two embeddings ``S`` and ``P`` of
the same words and lets each attend over the other: ``a^P = softmax(w^S Sᵀ) P``
and ``a^S = softmax(w^P Pᵀ) S`` (Eq. 1-2 of the Duo paper). The paper's Tables
2-4 compare every *couple* of embeddings (GloVe, fastText, CBOW, in two sizes):
the diagonal uses one embedding in both roles. This example draws the same
table as a heat-map for four word2vec embeddings trained on the corpus, then
shows the two attention directions over one sentence.

Budget: 2,000 of the 7,108 MR training sentences, 4 epochs per fit, 10 couples
(each trains its word vectors, under a second); about 25 seconds of CPU
time (one torch thread). One subsample and one seed: read the colours as trends, not rankings
(the paper averages ten runs on the full corpora with pretrained vectors).
"""

# %%
# Four embeddings, ten couples
# ----------------------------
import itertools

import matplotlib.pyplot as plt
import numpy as np
from sklearn.pipeline import make_pipeline

from sklearn_lama import DuoClassifier, MetaEmbeddingTransformer, Word2VecVectorizer
from sklearn_lama.datasets import load_mr
from sklearn_lama.inspection import plot_attention

texts, labels = load_mr(return_X_y=True)
test_texts, test_labels = load_mr(subset="test", return_X_y=True)
names = {"0": "negative", "1": "positive"}
labels = np.array([names[label] for label in labels])
test_labels = np.array([names[label] for label in test_labels])
train = np.random.default_rng(0).choice(len(texts), 2000, replace=False)
train_texts = [texts[i] for i in train]

embeddings = {
    "CBOW 50d": {"pretrained": None, "sg": 0, "vector_size": 50},
    "CBOW 100d": {"pretrained": None, "sg": 0, "vector_size": 100},
    "skip-gram 50d": {"pretrained": None, "sg": 1, "vector_size": 50},
    "skip-gram 100d": {"pretrained": None, "sg": 1, "vector_size": 100},
}
# The same settings and seed give the same vectors in every couple.
order = list(embeddings)
scores = np.full((len(order), len(order)), np.nan)
pipes = {}
for i, j in itertools.combinations_with_replacement(range(len(order)), 2):
    sources = [("S", Word2VecVectorizer(random_state=0, **embeddings[order[i]]))]
    if i != j:
        sources.append(("P", Word2VecVectorizer(random_state=0, **embeddings[order[j]])))
    pipe = make_pipeline(
        MetaEmbeddingTransformer(sources),
        DuoClassifier(max_epochs=4, random_state=0),
    ).fit(train_texts, labels[train])
    scores[i, j] = pipe.score(test_texts, test_labels)
    pipes[i, j] = pipe

# %%
# The couples table as a heat-map
# -------------------------------
# Rows are ``S``, columns ``P``; as in the paper only the upper triangle is
# filled (a couple and its mirror are the same model up to the order of the
# fused vector).
fig, ax = plt.subplots(figsize=(6, 4.6), layout="constrained")
image = ax.imshow(scores, cmap="viridis")
ax.set_xticks(range(len(order)), order, rotation=30, ha="right")
ax.set_yticks(range(len(order)), order)
for i, j in zip(*np.where(~np.isnan(scores))):
    light = image.norm(scores[i, j]) > 0.5
    ax.text(j, i, f"{scores[i, j]:.3f}", ha="center", va="center", color="k" if light else "w")
ax.set_xlabel("P")
ax.set_ylabel("S")
ax.set_title("MR test accuracy of each couple")
colorbar = fig.colorbar(image, ax=ax)

# %%
# The two attention directions
# ----------------------------
# For the best couple, the row ``a^P`` holds the weights scored on ``S`` that
# pool ``P`` (Eq. 1), the row ``a^S`` those scored on ``P`` that pool ``S``
# (Eq. 2). Each sums to one over the sentence.
best = np.unravel_index(np.nanargmax(scores), scores.shape)
print(f"best couple: S = {order[best[0]]}, P = {order[best[1]]} ({scores[best]:.3f})")
ax = plot_attention(
    pipes[best], "an uneven but often hilarious and touching comedy", method="attention"
)
