"""
Text beside tabular columns
===========================

A review comes with a star rating, the reviewer's age and the item's
department and class. A :class:`~sklearn.compose.ColumnTransformer` puts the
review text through :class:`~sklearn_lama.Word2VecVectorizer` and the other
columns through :class:`~sklearn.preprocessing.StandardScaler` and
:class:`~sklearn.preprocessing.OneHotEncoder`; :class:`~sklearn_lama.FCSRClassifier`
then reads the text and the side features together (they add a linear term
to its logits, see :doc:`/user_guide/side_features`).

The data are the clothing reviews of the ``side`` benchmark (Women's
E-Commerce Clothing Reviews, CC0, shipped in ``benchmarks/data``): does the
reviewer recommend the item?

Budget: 1,500 training reviews and a few epochs, so that the example runs in
seconds on a CPU; the benchmark fits 4,000 reviews at the defaults, three
seeds, all three classifiers.
"""

# %%
# The data: one text column and five side columns
# -----------------------------------------------
import gzip
import json
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from sklearn.compose import ColumnTransformer
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

from sklearn_lama import FCSRClassifier, Word2VecVectorizer

# The gallery runs each example from its folder, where ``__file__`` is not set.
here = Path(globals().get("__file__", "plot_side_features.py")).resolve().parent
path = here.parent / "benchmarks" / "data" / "clothing_reviews.jsonl.gz"
with gzip.open(path, "rt", encoding="utf-8") as file:
    reviews = pd.DataFrame([json.loads(line) for line in file])
train, test = train_test_split(
    reviews, train_size=1500, test_size=1500, random_state=0, stratify=reviews["recommended"]
)
y, y_test = train["recommended"], test["recommended"]
train.head(3)

# %%
# Text alone, and text with the side columns
# ------------------------------------------
# The side columns go through the usual encoders. For our text step,
# ``sparse_threshold=0`` keeps the joined output dense, the one form that can
# carry documents; TF-IDF's stays sparse.
numeric, categorical = ["rating", "age", "feedback"], ["department", "class_name"]


def with_side(text_step, sparse_threshold):
    return ColumnTransformer(
        [
            ("text", text_step, "review"),
            ("num", StandardScaler(), numeric),
            ("cat", OneHotEncoder(handle_unknown="ignore"), categorical),
        ],
        sparse_threshold=sparse_threshold,
    )


def ours():
    return Word2VecVectorizer(random_state=0), FCSRClassifier(max_epochs=4, random_state=0)


def tfidf():
    return TfidfVectorizer(sublinear_tf=True, ngram_range=(1, 2), min_df=2), LogisticRegression(
        C=10, max_iter=2000
    )


scores = {}
for name, make, sparse_threshold in (("FCSR", ours, 0.0), ("TF-IDF+LR", tfidf, 0.3)):
    text_step, clf = make()
    alone = Pipeline([("text", text_step), ("clf", clf)]).fit(train["review"], y)
    scores[name, "text alone"] = alone.score(test["review"], y_test)
    text_step, clf = make()
    columns = with_side(text_step, sparse_threshold)
    side = Pipeline([("columns", columns), ("clf", clf)]).fit(train, y)
    scores[name, "text + side"] = side.score(test, y_test)
    if name == "FCSR":
        fcsr = side
pd.Series(scores).unstack()

# %%
# What each side feature adds to the logits
# -----------------------------------------
# The classifier's side weights ``W_s`` (``n_outputs x n_side``): with two
# classes, the difference of the two rows is what one unit of each feature
# adds to the log-odds of "recommended". The star rating dominates; the text
# decides among the three-star reviews.
names = fcsr[0].get_feature_names_out()[1:]
weights = fcsr[-1].net_.module_.side.weight.detach().numpy()
log_odds = weights[1] - weights[0]

fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.5), width_ratios=[1, 2])
table = pd.Series(scores).unstack()
table.plot.bar(ax=left, rot=0, ylim=(0.8, 1.0), ylabel="test accuracy")
left.set_title("recommended? (1,500 test reviews)")
order = np.argsort(log_odds)
right.barh(np.arange(len(order)), log_odds[order])
right.set_yticks(np.arange(len(order)), [names[i].split("__")[1] for i in order], fontsize=7)
right.set_title("FCSR: log-odds added per unit of each side feature")
fig.tight_layout()
plt.show()
