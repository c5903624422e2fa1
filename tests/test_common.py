"""scikit-learn's estimator checks, every one of them run, for every classifier."""

from sklearn.utils.estimator_checks import parametrize_with_checks

from sklearn_lama import DuoClassifier, FCSRClassifier, LAMAClassifier

# Word2VecVectorizer and MetaEmbeddingTransformer take raw text, for which
# scikit-learn runs no common checks; tests/test_vectorizer.py and
# tests/test_meta_embedding.py cover their clone, pickle, Pipeline and
# GridSearchCV behaviour instead.
ESTIMATORS = [LAMAClassifier(), FCSRClassifier(), DuoClassifier()]


@parametrize_with_checks(ESTIMATORS)
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)
