"""
Which explanation to trust? (movie reviews)
===========================================

:mod:`sklearn_lama.inspection` explains a prediction three ways: the
classifier's attention weights, integrated gradients on the token vectors,
and occlusion (how much the predicted class falls when one token is
removed). They need not agree, and attention in particular shows where the
model pooled its word representations, not what its prediction rests on.

The deletion test settles which to trust on a given model: delete each
document's top-ranked tokens, one more at a time, and watch the predicted
class's probability. A faithful explanation ranks first the tokens the
prediction rests on, so their deletion hurts most; a random order is the
floor. The area over that curve (AOPC) scores each method.

Budget: a LAMA pipeline on 2,000 of the 7,108 MR training sentences, 4
epochs, 5 heads, explained on 120 test sentences; well under a minute of
CPU time (one torch thread). The :doc:`/user_guide/inspection` page has the
same test on the full corpora for all three classifiers.
"""

# %%
# Train a pipeline on a subsample
# -------------------------------
import numpy as np
from matplotlib import pyplot as plt
from sklearn.pipeline import make_pipeline

from sklearn_lama import LAMAClassifier, Word2VecVectorizer
from sklearn_lama.datasets import load_mr
from sklearn_lama.inspection import deletion_curve, plot_attention, top_attended_words

texts, labels = load_mr(return_X_y=True)
test_texts, test_labels = load_mr(subset="test", return_X_y=True)
names = {"0": "negative", "1": "positive"}
labels = np.array([names[label] for label in labels])
test_labels = np.array([names[label] for label in test_labels])

rng = np.random.default_rng(0)
train = rng.choice(len(texts), 2000, replace=False)
pipe = make_pipeline(
    Word2VecVectorizer(random_state=0),
    LAMAClassifier(n_heads=5, max_epochs=4, random_state=0),
)
pipe.fit([texts[i] for i in train], labels[train])
print(f"test accuracy {pipe.score(test_texts, test_labels):.3f}")

# %%
# One sentence, three explanations
# --------------------------------
# Attention gives one distribution per head (white: the uniform weight).
# Integrated gradients and occlusion give one row of attributions to the
# predicted class: red words raise it, blue words lower it.
sentence = "the acting is wooden and the plot is a mess , but the music is lovely"
methods = ["attention", "integrated_gradients", "occlusion"]
fig, axes = plt.subplots(3, 1, figsize=(9, 6.5), layout="constrained")
for ax, method in zip(axes, methods):
    plot_attention(pipe, sentence, ax=ax, method=method)
    ax.set_title(f"{method.replace('_', ' ')}: {ax.get_title(loc='left')}", loc="left")
    if ax is not axes[-1]:
        ax.set_xticks([])

# %%
# The deletion test
# -----------------
# For ``k = 1 ... 10``, the drop of the predicted class's probability once
# the ``k`` top-ranked tokens of each sentence are deleted (all of them from a
# shorter sentence), averaged over the sentences; random orders are averaged
# over three draws.
explained = [test_texts[i] for i in rng.choice(len(test_texts), 120, replace=False)]
curves = {method: deletion_curve(pipe, explained, method) for method in methods}
curves["random"] = np.mean(
    [deletion_curve(pipe, explained, "random", random_state=seed) for seed in range(3)], axis=0
)
fig, ax = plt.subplots(figsize=(6.5, 4), layout="constrained")
k = np.arange(1, 11)
for method, curve in curves.items():
    style = ":" if method == "random" else "-o"
    label = f"{method.replace('_', ' ')} (AOPC {curve.mean():.3f})"
    ax.plot(k, curve.mean(axis=0), style, markersize=3, label=label)
ax.set(xlabel="tokens deleted (k)", ylabel="drop of p(predicted class)")
ax.grid(alpha=0.3)
ax.legend()

# %%
# The methods whose curve climbs fastest are the ones to read: deleting the
# words they put first changes the model's mind. Where attention's curve stays
# near the random floor, its heat-maps are not evidence of what the model used.
for method, curve in curves.items():
    print(f"{method:>22s}: AOPC {curve.mean():.3f}")

# %%
# The words that count for each class
# -----------------------------------
# :func:`~sklearn_lama.inspection.top_attended_words` with integrated
# gradients ranks the words by their mean attribution to the class of the
# sentences they occur in: the words that raise that class's probability, not
# the words frequent in its sentences.
# (The corpus files are sorted by label: a random part of the test split
# holds both classes.)
part = rng.choice(len(test_texts), 600, replace=False)
top_attended_words(
    pipe,
    [test_texts[i] for i in part],
    test_labels[part],
    n_words=8,
    min_count=3,
    method="integrated_gradients",
)
