"""
Tune and save a LAMA text classifier on Reuters R8
==================================================

Word2VecVectorizer trains word vectors on the corpus, LAMAClassifier learns
multi-head attention over them; GridSearchCV picks the number of heads and
the fitted pipeline is saved with joblib.
"""

import joblib
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline

from sklearn_lama import LAMAClassifier, Word2VecVectorizer
from sklearn_lama.datasets import load_r8

texts, labels = load_r8(return_X_y=True)
test_texts, test_labels = load_r8(subset="test", return_X_y=True)

pipe = Pipeline([
    ("emb", Word2VecVectorizer(random_state=0)),
    ("clf", LAMAClassifier(random_state=0, max_epochs=10)),
])
search = GridSearchCV(pipe, {"clf__n_heads": [5, 15]}, cv=2).fit(texts, labels)
print("best:", search.best_params_, f"cv accuracy {search.best_score_:.4f}")
print(f"test accuracy {search.score(test_texts, test_labels):.4f}")

joblib.dump(search.best_estimator_, "r8-lama.joblib")
model = joblib.load("r8-lama.joblib")
print(model.predict(["opec agreed to cut crude oil output", "the company reported net profit"]))
