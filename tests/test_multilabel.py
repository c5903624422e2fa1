"""Several labels per document, several tasks per model, calibrated probabilities."""

import numpy as np
import pytest
import torch
from sklearn.metrics import f1_score
from sklearn.model_selection import GridSearchCV
from skorch.callbacks import Callback

from sklearn_lama import load_weights, save_weights
from sklearn_lama.classification._targets import MultiLabel, MultiOutput, learn_target
from sklearn_lama.inspection import explain, top_attended_words
from sklearn_lama.modules import TaskwiseCrossEntropy
from sklearn_lama.training._batching import MAX_BATCH_TOKENS, BatchBudget, BucketBatchSampler
from tests._tolerances import Exact, assert_identical

from .conftest import make_classifier, make_pipeline


def _token_data(n=240, seed=0):
    """Token ids whose first tokens decide the labels of a 2-D ``y``."""
    X = np.random.RandomState(seed).randint(1, 40, size=(n, 6))
    return X


def _indicator(X):
    # Label 1 is never on, label 2 always: learned as such, in their own columns.
    return np.stack(
        [X[:, 0] > 20, np.zeros(len(X), bool), np.ones(len(X), bool), X[:, 1] > 20], 1
    ).astype(int)


def _tasks(X, missing_every=3):
    """Two tasks, numeric, ``-1`` where a document has no label for the second."""
    first = (X[:, 0] > 20).astype(int)
    second = np.digitize(X[:, 1], [14, 27])
    second[::missing_every] = -1
    return np.stack([first, second], 1)


@pytest.fixture(scope="module")
def indicator_fits():
    X = _token_data()
    Y = _indicator(X)
    return (
        X,
        Y,
        {
            kind: make_classifier(kind, max_epochs=15, lr=0.01, patience=5).fit(X, Y)
            for kind in ("lama", "fcsr", "duo")
        },
    )


def test_indicator_matrix_round_trip(kind, indicator_fits):
    X, Y, fitted = indicator_fits
    clf = fitted[kind]
    assert_identical(clf.classes_, np.arange(4), why=Exact.DISCRETE)
    predicted = clf.predict(X)
    assert predicted.shape == Y.shape and predicted.dtype.kind == "i"
    proba = clf.predict_proba(X)
    assert proba.shape == Y.shape
    assert_identical(predicted, (proba > 0.5).astype(int), why=Exact.SAME_CALL)
    scores = clf.decision_function(X)
    assert scores.shape == Y.shape
    assert_identical(predicted, (scores > 0).astype(int), why=Exact.SAME_CALL)
    # Label order: the constant labels are learned in their own columns.
    assert proba[:, 1].max() < 0.5 < proba[:, 2].min()
    assert f1_score(Y, predicted, average="micro") > 0.8


def test_indicator_matrix_with_sklearn_metrics_and_grid_search(indicator_fits):
    X, Y, _ = indicator_fits
    search = GridSearchCV(
        make_classifier("fcsr", max_epochs=3), {"alpha": [0.1, 0.5]}, scoring="f1_samples", cv=2
    ).fit(X, Y)
    assert np.isfinite(search.best_score_)
    assert search.predict(X).shape == Y.shape


def test_multilabel_class_weights_are_per_label():
    target = MultiLabel(2)
    codes = np.array([[1, 0], [0, 0], [0, 0], [0, 1]])
    balanced = target.element_weights(codes, "balanced")
    # Label 0: one 1 in four documents, so its 1 weighs 4 / (2 * 1), its 0s 4 / (2 * 3).
    np.testing.assert_allclose(balanced[:, 0], [2.0, 2 / 3, 2 / 3, 2 / 3])
    explicit = target.element_weights(codes, [{0: 1.0, 1: 5.0}, {0: 2.0, 1: 1.0}])
    np.testing.assert_allclose(explicit, [[5, 2], [1, 2], [1, 2], [1, 1]])
    with pytest.raises(ValueError, match="list of one dict per label"):
        target.element_weights(codes, {0: 1.0})


def test_sample_weight_weighs_every_label_of_a_document():
    X = _token_data(60)
    Y = _indicator(X)
    weights = np.ones(60)
    weights[:30] = 2
    doubled = make_classifier("fcsr", max_epochs=2, early_stopping=False).fit(X, Y, weights)
    repeated = make_classifier("fcsr", max_epochs=2, early_stopping=False).fit(
        np.vstack([X, X[:30]]), np.vstack([Y, Y[:30]])
    )
    np.testing.assert_allclose(doubled.predict_proba(X), repeated.predict_proba(X), atol=1e-5)


def test_the_kind_of_y_is_kept_by_continued_training(indicator_fits):
    X, Y, _ = indicator_fits
    clf = make_classifier("fcsr", max_epochs=1, warm_start=True).fit(X, Y)
    with pytest.raises(ValueError, match="indicator matrix of 4 labels"):
        clf.fit(X, Y[:, 0])
    with pytest.raises(ValueError, match="0s and 1s"):
        clf.fit(X, Y * 2)


# ------------------------------------------------------------ multi-output
def test_multi_output_classes_and_outputs_per_task(kind):
    X = _token_data()
    y = _tasks(X)
    clf = make_classifier(kind, max_epochs=5).fit(X, y)
    assert [c.tolist() for c in clf.classes_] == [[0, 1], [0, 1, 2]]
    predicted = clf.predict(X)
    assert predicted.shape == (len(X), 2)
    proba = clf.predict_proba(X)
    assert [p.shape for p in proba] == [(len(X), 2), (len(X), 3)]
    for k, p in enumerate(proba):
        np.testing.assert_allclose(p.sum(axis=1), 1.0, rtol=1e-6)
        assert_identical(clf.classes_[k][p.argmax(axis=1)], predicted[:, k], why=Exact.SAME_CALL)
    scores = clf.decision_function(X)
    assert scores[0].shape == (len(X),) and scores[1].shape == (len(X), 3)


def test_multi_output_with_string_tasks_and_none_as_missing():
    X = _token_data()
    y = np.empty((len(X), 2), dtype=object)
    y[:, 0] = np.where(X[:, 0] > 20, "trade", "grain")
    y[:, 1] = np.where(X[:, 1] > 20, "pos", "neg")
    y[: len(X) // 2, 1] = None
    clf = make_classifier("fcsr", max_epochs=3).fit(X, y)
    assert [c.tolist() for c in clf.classes_] == [["grain", "trade"], ["neg", "pos"]]
    assert set(clf.predict(X)[:, 1]) <= {"neg", "pos"}


def test_a_task_without_any_label_is_refused():
    X = _token_data(40)
    y = _tasks(X)
    y[:, 1] = -1
    with pytest.raises(ValueError, match="y column 1 has no label"):
        make_classifier("fcsr").fit(X, y)
    y = y.astype(object)
    y[:, 1] = None
    with pytest.raises(ValueError, match="y column 1 has no label"):
        make_classifier("fcsr").fit(X, y)


def test_missing_labels_do_not_change_the_loss():
    loss = TaskwiseCrossEntropy([2, 3])
    logits = torch.randn(4, 5, requires_grad=True)
    targets = torch.tensor([[0, 2], [1, -1], [1, 0], [0, -1]])
    losses = loss(logits, targets)
    assert (losses[[1, 3], 1] == 0).all()
    losses.sum().backward()
    # The second task's logits of the documents without its label get no gradient.
    assert (logits.grad[[1, 3], 2:] == 0).all()
    assert (logits.grad[[0, 2], 2:] != 0).any()
    # Whatever those logits are, the loss is the same.
    moved = logits.detach().clone()
    moved[[1, 3], 2:] += 10.0
    np.testing.assert_allclose(loss(moved, targets).sum().item(), losses.sum().item(), rtol=1e-6)


def test_missing_labels_weigh_nothing_in_training():
    X = _token_data()
    y = _tasks(X)
    target = learn_target(y)
    codes = target.encode(y)
    weights = target.element_weights(codes, "balanced")
    assert (weights[::3, 1] == 0).all() and (weights[1::3, 1] > 0).all()
    # A missing label's value is not seen: fitting with another marker gives the same model.
    fitted = make_classifier("fcsr", max_epochs=2).fit(X, y)
    objects = y.astype(object)
    objects[::3, 1] = None
    again = make_classifier("fcsr", max_epochs=2).fit(X, objects)
    for a, b in zip(fitted.predict_proba(X), again.predict_proba(X)):
        np.testing.assert_allclose(a, b, atol=1e-6)


def test_one_shared_encoder_and_one_head_per_task():
    X = _token_data()
    y = _tasks(X)
    multi = make_classifier("lama", max_epochs=1).fit(X, y)
    # One task of 4 classes: as many Naive Bayes columns (1 + 3) and one output fewer.
    single = make_classifier("lama", max_epochs=1).fit(X, y[:, 1] + 1)
    multi_shapes = {k: v.shape for k, v in multi.net_.module_.state_dict().items()}
    single_shapes = {k: v.shape for k, v in single.net_.module_.state_dict().items()}
    assert multi_shapes.keys() == single_shapes.keys()
    # Only the output layer differs: 2 + 3 logits, the tasks' heads side by side on one encoder.
    differing = {k for k in multi_shapes if multi_shapes[k] != single_shapes[k]}
    assert {multi_shapes[k][0] for k in differing} == {5}
    assert {single_shapes[k][0] for k in differing} == {4}

    def grus(clf):
        return sum(isinstance(m, torch.nn.GRU) for m in clf.net_.module_.modules())

    assert grus(multi) == grus(single) > 0


def test_batch_groups_are_the_sets_of_labelled_tasks():
    codes = np.array([[0, -1], [1, -1], [-1, 2], [0, 1], [1, 0]])
    groups = MultiOutput([np.arange(2), np.arange(3)]).batch_groups(codes)
    assert groups.shape == (5,)
    assert groups[0] == groups[1] and groups[3] == groups[4]
    assert len({groups[0], groups[2], groups[3]}) == 3
    assert MultiLabel.learn(_indicator(_token_data(20))).batch_groups(codes) is None
    assert learn_target(np.array([0, 1, 1])).batch_groups(np.array([0, 1, 1])) is None


def test_bucketed_batches_never_mix_groups():
    rng = np.random.RandomState(0)
    lengths, groups = rng.randint(1, 200, 500), rng.randint(0, 3, 500)

    def draw(groups):
        torch.manual_seed(0)
        budget = BatchBudget(MAX_BATCH_TOKENS)
        return list(BucketBatchSampler(lengths, 16, budget, 4, groups=groups))

    batches = draw(groups)
    assert sorted(np.concatenate(batches).tolist()) == list(range(500))
    assert all(len(set(groups[b])) == 1 for b in batches)
    # Groups do not mix in the pools either: a group's batches are as tight
    # as when it is bucketed alone (at most one pool's remainder more padding).
    assert max(len(b) for b in batches) == 16
    # One group is no grouping: the same batches, drawn from the same generator.
    assert draw(np.zeros(500, int)) == draw(None)


class _LabelledTasksPerBatch(Callback):
    def initialize(self):
        self.patterns = []
        return self

    def on_batch_begin(self, net, batch=None, training=False, **kwargs):
        if training:
            self.patterns.append({tuple(row) for row in (batch[1].numpy() >= 0)})


def test_multi_task_training_batches_hold_one_corpus():
    X = _token_data(300)
    y = _tasks(X)
    # The documents without a second label are the shortest: length alone would mix them.
    X[::3, 3:] = 0
    seen = _LabelledTasksPerBatch()
    make_classifier("fcsr", max_epochs=2, callbacks=[seen]).fit(X, y)
    assert len(seen.patterns) > 2
    assert all(len(p) == 1 for p in seen.patterns)


def test_partial_fit_takes_the_classes_of_each_task():
    X = _token_data(60)
    y = _tasks(X)
    clf = make_classifier("fcsr")
    clf.partial_fit(X[:30], y[:30], classes=[[0, 1], [0, 1, 2]])
    clf.partial_fit(X[30:], y[30:])
    assert clf.predict(X).shape == (60, 2)


# ------------------------------------------------------------- calibration
@pytest.mark.parametrize("y_kind", ["single", "indicator", "tasks"])
def test_calibration_never_changes_predictions(y_kind):
    X = _token_data(300)
    y = {"single": X[:, 0] > 20, "indicator": _indicator(X), "tasks": _tasks(X)}[y_kind]
    plain = make_classifier("fcsr", max_epochs=4).fit(X, y)
    calibrated = make_classifier("fcsr", max_epochs=4, calibration="temperature").fit(X, y)
    assert plain.temperature_ is None
    assert calibrated.temperature_.shape == ((2,) if y_kind == "tasks" else (1,))
    assert (calibrated.temperature_ > 0).all()
    assert_identical(calibrated.predict(X), plain.predict(X), why=Exact.SAME_CALL)
    plain_scores, scores = plain.decision_function(X), calibrated.decision_function(X)
    if y_kind != "tasks":
        plain_scores, scores = [plain_scores], [scores]
    for a, b in zip(plain_scores, scores):
        assert_identical(a, b, why=Exact.SAME_CALL)
    proba, plain_proba = calibrated.predict_proba(X), plain.predict_proba(X)
    if y_kind != "tasks":
        proba, plain_proba = [proba], [plain_proba]
    for p, q, t in zip(proba, plain_proba, np.broadcast_to(calibrated.temperature_, len(proba))):
        if not np.isclose(t, 1.0):
            assert not np.allclose(p, q)


def test_calibration_lowers_the_held_out_log_loss():
    # An overconfident model (many epochs, no early stopping of the loss) gets T > 1.
    X = _token_data(400, seed=3)
    y = (X[:, 0] > 20) ^ (np.random.RandomState(1).rand(len(X)) < 0.2)
    clf = make_classifier(
        "lama",
        max_epochs=30,
        patience=30,
        lr=0.02,
        embedding_dropout=0.0,
        calibration="temperature",
    ).fit(X, y)
    assert clf.temperature_[0] > 1


def test_calibration_needs_the_held_out_split():
    X = _token_data(100)
    y = X[:, 0] > 20
    with pytest.raises(ValueError, match="early_stopping=True"):
        make_classifier("fcsr", calibration="temperature", early_stopping=False).fit(X, y)
    with pytest.raises(ValueError, match="early_stopping=True"):
        make_classifier("fcsr", calibration="temperature").fit(X[:20], y[:20])
    clf = make_classifier("fcsr", max_epochs=2, calibration="temperature").fit(X, y)
    assert clf.temperature_ is not None
    clf.partial_fit(X, y)
    assert clf.temperature_ is None


# ------------------------------------------------------------- persistence
@pytest.mark.parametrize("y_kind", ["indicator", "tasks", "strings"])
def test_persistence_of_targets_and_temperatures(tmp_path, y_kind):
    X = _token_data(200)
    if y_kind == "indicator":
        y = _indicator(X)
    else:
        y = _tasks(X)
        if y_kind == "strings":
            y = np.where(y == -1, None, y.astype(str).astype(object))
    clf = make_classifier("duo", max_epochs=2, calibration="temperature").fit(X, y)
    save_weights(clf, tmp_path / "model.pt")
    loaded = load_weights(tmp_path / "model.pt")
    assert_identical(loaded.temperature_, clf.temperature_, why=Exact.COPY)
    assert_identical(loaded.predict(X), clf.predict(X), why=Exact.COPY)
    for a, b in zip(loaded.predict_proba(X), clf.predict_proba(X)):
        assert_identical(a, b, why=Exact.COPY)
    if y_kind != "indicator":
        assert isinstance(loaded.target_encoder_, MultiOutput)
        for a, b in zip(loaded.classes_, clf.classes_):
            assert a.dtype == b.dtype
            assert_identical(a, b, why=Exact.COPY)


# ------------------------------------------------------------- inspection
def test_inspection_of_a_multilabel_pipeline(toy_corpus):
    texts, labels = toy_corpus
    Y = np.stack([np.asarray(labels) == "pos", [len(t) % 2 == 0 for t in texts]], 1).astype(int)
    pipe = make_pipeline("lama", max_epochs=3).fit(texts, Y)
    assert pipe.predict(texts).shape == Y.shape
    explained = explain(pipe, texts[:3])
    assert len(explained) == 3
    table = top_attended_words(pipe, texts, n_words=2, min_count=1)
    assert len(table) == 2
