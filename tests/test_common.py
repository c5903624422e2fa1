"""scikit-learn's estimator checks, every one of them run, for every classifier."""

from sklearn.utils.estimator_checks import parametrize_with_checks

from sklearn_lama import DuoClassifier, FCSRClassifier, LAMAClassifier

# Word2VecVectorizer and MetaEmbeddingTransformer take raw text, for which
# scikit-learn runs no common checks; tests/test_vectorizer.py and
# tests/test_meta_embedding.py cover their clone, pickle, Pipeline and
# GridSearchCV behaviour instead.
ESTIMATORS = [LAMAClassifier(), FCSRClassifier(), DuoClassifier()]


# The check compares each row's scores predicted alone with those of the whole batch
# within 1e-7, absolute and relative: below one float32 unit in the last place of a
# score above 1, while a one-row product and a many-row one are different float32
# computations (CPU kernels block a product by its rows). Inference pads no batch to
# hide that (a lone document costs one row, not 16); tests/test_classifiers.py's
# test_scores_alone_are_those_in_a_batch holds the same comparison to the rounding
# bound of the computation.
SUBSET_INVARIANCE = (
    "float32 scores of a row alone and in a batch differ by rounding, beyond the check's 1e-7"
)


def _expected_failures(estimator):
    """Checks that hold only up to what they cannot allow for, with why."""
    failures = {"check_methods_subset_invariance": SUBSET_INVARIANCE}
    if isinstance(estimator, DuoClassifier):
        # Duo's default embedding dropout (0.5) drops each of the blobs' two dense
        # features half of the time: over seeds 0-13, 2 to 3 fits end below the
        # check's 0.83 training accuracy (with nn.Dropout's stream shifted too), and
        # random_state=0's stream is one of them.
        failures["check_classifiers_train"] = "training accuracy on blobs depends on the seed"
    return failures


@parametrize_with_checks(ESTIMATORS, expected_failed_checks=_expected_failures)
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)
