"""
Top attended words per topic on Reuters R8 (LAMA Table 6)
=========================================================

The LAMA paper lists, for Reuters R8, the words its model attends to most in
each topic (Table 6: "kuwait, gulf, tanker, cargo" for *ship*, "currencies,
monetary, fed" for *money-fx*). :func:`~sklearn_lama.inspection.top_attended_words`
builds that table for any fitted pipeline;
:func:`~sklearn_lama.inspection.plot_attention` shows the heads over one
newswire; :func:`~sklearn_lama.inspection.plot_training_curves` shows how the
training went.

Budget: 1,500 of the 5,485 training documents and 1,000 of the 2,189 test
documents, cut to their first 100 words, at most 12 epochs, 8 heads; about 30
seconds of CPU time (one torch thread). With the full corpus and
the defaults LAMA reaches about 0.96 test accuracy (see :doc:`/results`).
"""

# %%
# Train on a subsample
# --------------------
import numpy as np
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline

from sklearn_lama import LAMAClassifier, Word2VecVectorizer
from sklearn_lama.datasets import load_r8
from sklearn_lama.inspection import plot_attention, plot_training_curves, top_attended_words

texts, labels = load_r8(return_X_y=True)
test_texts, test_labels = load_r8(subset="test", return_X_y=True)
# Stratified subsamples keep the small topics (grain has 41 training documents).
texts, _, labels, _ = train_test_split(
    texts, labels, train_size=1500, stratify=labels, random_state=0
)
test_texts, _, test_labels, _ = train_test_split(
    test_texts, test_labels, train_size=1000, stratify=test_labels, random_state=0
)

pipe = make_pipeline(
    Word2VecVectorizer(max_len=100, random_state=0),
    LAMAClassifier(n_heads=8, max_epochs=12, random_state=0),
)
pipe.fit(texts, labels)
print(f"test accuracy {pipe.score(test_texts, test_labels):.3f}")

# %%
# Table 6, per topic
# ------------------
# Words ranked by their attention relative to a uniform distribution over
# their document, averaged over their occurrences in the test documents of
# each topic (at least 5 of them). As in the paper's table, the vocabulary of
# each beat comes up (rates and banks for money-fx, Japan and the European
# Community for trade), next to frequent words of no obvious meaning.
top_attended_words(pipe, test_texts, test_labels, n_words=10, method="attention")

# %%
# Eight heads over one newswire
# -----------------------------
# The first 45 words of a test document about shipping that the model
# classifies correctly. Each row is one head; white is the uniform weight.
predicted = pipe.predict(test_texts)
ship = next(
    text
    for text, label, guess in zip(test_texts, test_labels, predicted)
    if label == guess == "ship" and len(text.split()) > 45
)
ax = plot_attention(pipe, ship, max_tokens=45, method="attention")

# %%
# Training curves
# ---------------
# Training and validation loss per epoch, and the validation accuracy, from
# the fitted net's history (``net_.history``). Early stopping keeps the weights
# of the epoch with the lowest validation loss (dotted line). Fit with
# ``verbose=1`` to record the training accuracy too.
axes = plot_training_curves(pipe)
print(np.round(pipe[-1].net_.history[:, "valid_acc"], 3))
