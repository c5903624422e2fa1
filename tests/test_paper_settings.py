"""Each classifier's ``paper_parameters`` switch the library's additions off."""

import pytest
import torch

from sklearn_lama.classification._parameters import ADDITIONS_OFF
from sklearn_lama.training._callbacks import WeightAveraging

from .conftest import make_pipeline


def _additions(pipe):
    """Which of the library's additions the fitted pipeline ``pipe`` trained with."""
    net = pipe[-1].net_
    network = net.module_
    return {
        "token ratios": network.token_features is not None,
        "pair ratios": network.pair_features is not None,
        "embedding dropout": network.embedding_dropout.p > 0,
        "weight average": any(isinstance(cb, WeightAveraging) for _, cb in net.callbacks_),
    }


def test_every_paper_setting_switches_a_shared_addition_off(kind):
    assert {k: v for k, v in _paper(kind).items() if k in ADDITIONS_OFF} == ADDITIONS_OFF


def _paper(kind):
    return make_pipeline(kind)[-1].paper_parameters


def test_paper_parameters_train_without_the_additions(kind, toy_corpus):
    texts, labels = toy_corpus
    defaults = make_pipeline(kind, max_epochs=2).fit(texts, labels)
    # The defaults use some of them (all but FCSR's token ratios and dropout).
    assert any(_additions(defaults).values())
    paper = make_pipeline(kind, max_epochs=2, **_paper(kind)).fit(texts, labels)
    assert not any(_additions(paper).values())


@pytest.mark.parametrize("kind", ["lama"])
def test_lama_paper_parameters_train_with_sgd(kind, toy_corpus):
    texts, labels = toy_corpus
    pipe = make_pipeline(kind, max_epochs=1, **_paper(kind)).fit(texts, labels)
    optimizer = pipe[-1].net_.optimizer_
    assert isinstance(optimizer, torch.optim.SGD)
    assert optimizer.param_groups[0]["momentum"] == 0.9


def test_duo_paper_parameters_drop_softmax_biases_and_positions(toy_corpus):
    texts, labels = toy_corpus
    pipe = make_pipeline("duo", max_epochs=1, **_paper("duo")).fit(texts, labels)
    core = pipe[-1].net_.module_.core
    assert not core.attention_softmax and core.positions is None
    assert core.fusion.bias is None and core.output.bias is None
