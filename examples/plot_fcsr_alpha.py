"""
Tune FCSR's forgetting factor on movie-review polarity
======================================================

FCSRClassifier compresses each word's whole left and right context with a
forgetting factor ``alpha`` (FOFE). Small values keep the context local, values
near 1 let distant words count. GridSearchCV picks it like any other
hyper-parameter.
"""

from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline

from sklearn_lama import FCSRClassifier, Word2VecVectorizer
from sklearn_lama.datasets import load_mr

texts, labels = load_mr(return_X_y=True)
test_texts, test_labels = load_mr(subset="test", return_X_y=True)

pipe = Pipeline([
    ("emb", Word2VecVectorizer(random_state=0)),
    ("clf", FCSRClassifier(random_state=0, max_epochs=5)),
])
search = GridSearchCV(pipe, {"clf__alpha": [0.0, 0.2, 0.5, 0.8]}, cv=3).fit(texts, labels)
for alpha, score in zip(search.cv_results_["param_clf__alpha"],
                        search.cv_results_["mean_test_score"]):
    print(f"alpha={alpha:.1f}  cv accuracy {score:.4f}")
print(f"best alpha {search.best_params_['clf__alpha']}, "
      f"test accuracy {search.score(test_texts, test_labels):.4f}")
