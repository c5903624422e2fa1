"""The path of ``X``: one adapter class per input kind, batches, the training view."""

import numpy as np
import pytest
import torch

from sklearn_lama import TokenSequences
from sklearn_lama.classification._inputs import (
    ScalarFeatureInput,
    TokenIdInput,
    TokenSequencesInput,
    VectorInput,
    restore_adapter,
)
from sklearn_lama.training._batching import SequenceBatches, WeightedBatch, training_view
from tests._tolerances import Exact, assert_identical

from .conftest import make_classifier

RNG = np.random.RandomState(0)
Y = np.arange(30) % 2
TABLE = RNG.randn(12, 5).astype(np.float32)
OFFSETS = np.arange(0, 181, 6)
INPUTS = {
    TokenSequencesInput: TokenSequences(RNG.randint(2, 12, 180), OFFSETS, (TABLE,), "toy"),
    TokenIdInput: RNG.randint(0, 12, size=(30, 6)),
    ScalarFeatureInput: RNG.randn(30, 6),
    VectorInput: RNG.randn(30, 6, 3).astype(np.float32),
}


@pytest.mark.parametrize("kind", list(INPUTS), ids=lambda kind: kind.__name__)
def test_each_input_kind_has_its_adapter_which_survives_export(kind):
    clf = make_classifier("fcsr", max_epochs=1, early_stopping=False).fit(INPUTS[kind], Y)
    adapter = clf.input_adapter_
    assert type(adapter) is kind
    restored = restore_adapter(adapter.export())
    assert type(restored) is kind and repr(restored) == repr(adapter)
    assert restored.export() == adapter.export()


@pytest.mark.parametrize("fitted", list(INPUTS), ids=lambda kind: kind.__name__)
def test_input_of_another_kind_is_refused_naming_both(fitted):
    clf = make_classifier("fcsr", max_epochs=1, early_stopping=False).fit(INPUTS[fitted], Y)
    for other, X in INPUTS.items():
        if other is fitted:
            continue
        message = f"fitted on {fitted.description}, but X is {other.description}"
        with pytest.raises(ValueError, match=message):
            clf.predict(X)


def test_only_token_sequences_get_naive_bayes_columns():
    widths = {}
    for kind, X in INPUTS.items():
        clf = make_classifier("lama", max_epochs=1, nb_unigram_weight=1.0, nb_bigram_weight=1.0)
        clf.fit(X, Y)
        network = clf.net_.module_
        widths[kind] = [lookup.weight.shape[1] for lookup in network.lookups]
        assert (network.token_features is not None) == (kind is TokenSequencesInput)
        assert (network.pair_features is not None) == (kind is TokenSequencesInput)
    # The tables keep their width: the ratio columns join at lookup time.
    assert widths == {
        TokenSequencesInput: [TABLE.shape[1]],
        TokenIdInput: [clf.embedding_dim],
        ScalarFeatureInput: [],
        VectorInput: [],
    }


def test_training_batches_carry_their_loss_weights():
    batches = SequenceBatches(
        ids=np.array([3, 4, 5, 6, 7], np.int32), offsets=np.array([0, 2, 3, 5])
    )
    y = np.array([0, 1, 1])
    # Weight 1.5: the document once whole, then once at half its loss.
    view = training_view(batches, y, np.array([1.5, 0.0, 1.0]), label_weight=np.ones(3))
    X, target = view.__getitems__(np.arange(len(view)))
    assert isinstance(X, WeightedBatch)
    assert set(X.inputs) == {"ids", "lengths"} and len(X.inputs["ids"]) == 3
    assert sorted(X.weights.tolist()) == [0.5, 1.0, 1.0]
    assert_identical(target, torch.from_numpy(view.y), why=Exact.COPY)
    assert 1 not in view.index  # weight 0: left out
