"""scikit-learn's estimator checks, every one of them run, for every classifier."""

from sklearn.utils.estimator_checks import parametrize_with_checks

from sklearn_lama import DuoClassifier, FCSRClassifier, LAMAClassifier

# Word2VecVectorizer and MetaEmbeddingTransformer take raw text, for which
# scikit-learn runs no common checks; tests/test_vectorizer.py and
# tests/test_meta_embedding.py cover their clone, pickle, Pipeline and
# GridSearchCV behaviour instead.
ESTIMATORS = [LAMAClassifier(), FCSRClassifier(), DuoClassifier()]


def _expected_failures_with_reasons(estimator):
    if isinstance(estimator, DuoClassifier):
        return {
            "check_classifiers_train": (
                "The Duo head (Eq. 1-3) pools a bag of token embeddings and is "
                "invariant to token order by design; a 2-D float array is read as a "
                "sequence of scalars, so Duo cannot tell its columns apart and cannot "
                "separate the check's blobs well enough (0.77 training accuracy measured, "
                "0.83 required). "
                "Token-order-aware models (LAMA, FCSR) pass."
            ),
        }
    return {}


@parametrize_with_checks(ESTIMATORS, expected_failed_checks=_expected_failures_with_reasons)
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)
