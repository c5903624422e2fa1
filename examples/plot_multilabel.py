"""
Several labels per document, and calibrated probabilities
==========================================================

A classifier fitted on a binary indicator matrix ``Y`` (what
:class:`~sklearn.preprocessing.MultiLabelBinarizer` makes) learns one sigmoid
output per label: :meth:`~sklearn_lama.FCSRClassifier.predict` returns the
indicator matrix of the labels of probability above 0.5 and
:meth:`~sklearn_lama.FCSRClassifier.predict_proba` each label's probability,
as :class:`~sklearn.neural_network.MLPClassifier` does.

The corpus is the one of the ``multilabel`` benchmark: each R8 news story
keeps its topic and gets a second label, the topic's sector (``economy``,
``commodities`` or ``corporate``), so every document has two of 11 labels.
``calibration="temperature"`` divides the scores by one temperature fitted on
the validation split that ``fit`` holds out for early stopping; the
reliability diagram shows the probabilities before and after it.

Budget: a small subset of R8 and a few epochs, so that the example runs in
seconds on a CPU; read the scores as an illustration, not as the model's
accuracy (the benchmark results in the user guide fit the whole corpus).
"""

# %%
# Two labels per document
# -----------------------
import matplotlib.pyplot as plt
import numpy as np
from scipy.special import expit
from sklearn.calibration import calibration_curve
from sklearn.metrics import f1_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import MultiLabelBinarizer

from sklearn_lama import FCSRClassifier, Word2VecVectorizer
from sklearn_lama.datasets import load_r8

sectors = {
    "interest": "economy",
    "money-fx": "economy",
    "trade": "economy",
    "crude": "commodities",
    "grain": "commodities",
    "ship": "commodities",
    "acq": "corporate",
    "earn": "corporate",
}
texts, topics = load_r8(return_X_y=True)
test_texts, test_topics = load_r8(subset="test", return_X_y=True)
rng = np.random.default_rng(0)
train = rng.choice(len(texts), 400, replace=False)
test = rng.choice(len(test_texts), 500, replace=False)
# Every topic and sector is a column, whether or not the subset holds it.
binarizer = MultiLabelBinarizer().fit(sectors.items())
Y = binarizer.transform([(topics[i], sectors[topics[i]]) for i in train])
Y_test = binarizer.transform([(test_topics[i], sectors[test_topics[i]]) for i in test])
train_texts = [texts[i] for i in train]
test_texts = [test_texts[i] for i in test]
print(f"{len(binarizer.classes_)} labels: {', '.join(binarizer.classes_)}")

# %%
# Fit, predict, score
# -------------------
# ``predict`` gives the indicator matrix; the binarizer turns it back into
# label names. The F1 scores of :mod:`sklearn.metrics` take it as it is.
pipe = make_pipeline(
    Word2VecVectorizer(random_state=0),
    FCSRClassifier(max_epochs=3, calibration="temperature", random_state=0),
).fit(train_texts, Y)
predicted = pipe.predict(test_texts)
print("first test document:", binarizer.inverse_transform(predicted[:1]))
for average in ("micro", "macro", "samples"):
    score = f1_score(Y_test, predicted, average=average, zero_division=0)
    print(f"{average}-averaged F1: {score:.3f}")

# %%
# Per-label F1 and reliability
# ----------------------------
# Left: the F1 score of each label; the sectors pool several topics and have
# more documents than the rarest topics. Right: the reliability diagram of all
# (document, label) probabilities, in bins of predicted probability: the
# fraction of them that are on, against their mean probability. The raw
# probabilities are the sigmoid of
# :meth:`~sklearn_lama.FCSRClassifier.decision_function` (temperature 1); the
# calibrated ones are ``predict_proba``, the same scores divided by
# ``temperature_`` (the labels of probability above 0.5 do not change).
per_label = f1_score(Y_test, predicted, average=None, zero_division=0)
raw = expit(pipe.decision_function(test_texts))
calibrated = pipe.predict_proba(test_texts)

fig, (ax_f1, ax_rel) = plt.subplots(1, 2, figsize=(11, 4.5))
order = np.argsort(per_label)
ax_f1.barh(np.asarray(binarizer.classes_)[order], per_label[order])
ax_f1.set(xlabel="F1 on the test subset", xlim=(0, 1), title="F1 per label")
ax_rel.plot([0, 1], [0, 1], color="gray", linestyle=":", label="perfectly calibrated")
for name, proba in (
    ("temperature 1", raw),
    (f"temperature {pipe[-1].temperature_[0]:.2f}", calibrated),
):
    on, mean = calibration_curve(Y_test.ravel(), proba.ravel(), n_bins=8, strategy="quantile")
    ax_rel.plot(mean, on, marker="o", label=name)
ax_rel.set(
    xlabel="mean predicted probability",
    ylabel="fraction of labels on",
    title="Reliability of the label probabilities",
)
ax_rel.legend()
fig.tight_layout()
plt.show()
