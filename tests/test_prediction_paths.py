"""Prediction runs the module the estimator built for it; training and inspection the network.

Duo's head folds (``SequenceNetwork.fold``): the estimator builds the folded
form at the end of ``fit``, ``partial_fit`` and loading (``inference_module_``)
and predicts with it; the network's forward is one path, in every mode.
"""

import copy
import math
import pickle

import numpy as np
import pytest
import torch

from sklearn_lama import (
    DuoClassifier,
    FCSRClassifier,
    LAMAClassifier,
    MetaEmbeddingTransformer,
    Word2VecVectorizer,
    load_weights,
    save_weights,
)
from sklearn_lama.classification import _base
from sklearn_lama.modules import (
    DuoModule,
    FoldedDuoHead,
    FoldedNetwork,
    LAMAModule,
    NgramFeatures,
    PairFeatures,
    SequenceNetwork,
    TableStreams,
)
from sklearn_lama.utils._threads import resolve_threads, torch_threads
from tests._tolerances import Exact, assert_differ, assert_identical, assert_within

# float32's unit roundoff.
U = 2.0**-24


def _gamma(n):
    """Higham's gamma_n = n u / (1 - n u): the relative error bound of n roundings."""
    return n * U / (1 - n * U)


def _three_classes(toy_corpus):
    texts, labels = toy_corpus
    labels = np.where(np.arange(len(labels)) % 3 == 0, "mid", labels)
    # An empty document, an unknown word only, and long documents.
    texts = list(texts) + ["", "zzz", " ".join(texts[:20]), " ".join(texts[20:60])]
    return texts, np.concatenate([labels, ["neg", "pos", "mid", "pos"]])


def _tables(texts, n_tables):
    sources = [
        (
            "a",
            Word2VecVectorizer(pretrained=None, vector_size=6, sg=0, min_count=1, random_state=0),
        ),
        ("b", Word2VecVectorizer(pretrained=None, vector_size=10, min_count=1, random_state=0)),
    ]
    if n_tables == 1:
        return sources[1][1].fit(texts)
    return MetaEmbeddingTransformer(sources, min_count=1).fit(texts)


def _recorded_batches(monkeypatch):
    """The ``(inputs, output)`` of every batch the estimators' inference computes."""
    seen = []
    run_sorted = _base.run_sorted

    def recording(net, batches, compute, budget, **kwargs):
        def keep(network, inputs):
            output = compute(network, inputs)
            seen.append((inputs, output))
            return output

        return run_sorted(net, batches, keep, budget, **kwargs)

    monkeypatch.setattr(_base, "run_sorted", recording)
    return seen


def _rounding_bound(network, lengths, ids):
    """Bound on ``|folded - plain|`` for each logit of a batch, both computed in float32.

    Both computations evaluate, in another order, the same sum of products:
    without encoder layers a logit is ``b_c + sum_j W^C_cj b^O_j + sum_j
    sum_k sum_t W^C_cj W^O_jk alpha_t v_tk`` (Eq. 1-3; ``v_t`` a token's
    vector of the stream that ``alpha`` pools, its feature columns products
    ``f * scale``). Evaluated in float32 in any order with weights
    ``alpha_hat``, a sum of products, each formed and accumulated through at
    most ``n`` roundings, is within ``gamma_n * sum |products|`` of its exact
    value (Higham, "Accuracy and Stability of Numerical Algorithms", §3.1):
    a blocked or reordered sum (another CPU's kernels) changes which
    roundings happen, not how many a product passes through. Here ``n = T +
    W + d_ff + 10``: 4 products, ``T`` tokens pooled, ``W`` columns fused,
    ``d_ff`` summed by the output layer, and a few sums of parts (table,
    features, positions, biases) in the folded head.

    The weights each computation uses differ from the exact ``alpha`` too.
    A score ``w . v_t`` is a sum of ``W_stream + 8`` roundings at most, so it
    is off by ``E_t <= gamma * sum_k |w_k v_tk|``. Without the softmax,
    ``alpha_hat_t`` is the score itself: ``|alpha_hat_t - alpha_t| <= E_t``.
    With it, a shift of every score by at most ``E`` moves each weight by a
    factor within ``exp(+-2E)``, and float32's softmax adds, to first order
    in ``u``, ``u Z`` (rounding the scores shifted by their maximum, ``Z``
    the largest shift), ``2u`` (exp, one ulp) for a weight and for the
    terms of its denominator, ``gamma_T`` (summing ``T`` positive terms) and
    ``u`` (the division): ``|alpha_hat_t - alpha_t| <= rho alpha_t`` with
    ``rho = (1 + eta) exp(2E) - 1``, ``eta = 2 (u Z + 2u) + gamma_(T+1) + u``.

    Each computation is therefore within ``gamma_n sum_t (|alpha_t| +
    d_t) R_tc + sum_t d_t R_tc + gamma_n B_c`` of the exact logit, with
    ``d_t`` the bound on the weight's error, ``R_tc = sum_jk |W^C_cj|
    |W^O_jk| |v_tk|`` and ``B_c = |b_c| + sum_j |W^C_cj| |b^O_j|``, all
    computed here in float64 from the same weights; the two differ by at
    most twice that.
    """
    network = copy.deepcopy(network).double().eval()
    core = network.core
    with torch.no_grad():
        streams, mask = network.embed(lengths, ids=ids)
        s, p = core._encode(streams[0], streams[-1], mask)
        keep = mask.double()
        n_tokens = ids.shape[1]
        n = n_tokens + s.shape[-1] + p.shape[-1] + core.output.weight.shape[1] + 10
        w_out, w_fusion = core.output.weight.abs(), core.fusion.weight.abs()
        magnitude = w_out @ w_fusion  # (C, W_P + W_S), columns [a^P, a^S]
        bias = torch.zeros(core.n_classes, dtype=torch.float64)
        if core.fusion.bias is not None:
            bias = bias + w_out @ core.fusion.bias.abs()
        if core.output.bias is not None:
            bias = bias + core.output.bias.abs()
        bound = 2 * _gamma(n) * bias.expand(len(ids), -1)
        # Eq. 1: scores on S pool P; Eq. 2: scores on P pool S.
        for w, scored, pooled, columns in (
            (core.w_s, s, p, magnitude[:, : p.shape[-1]]),
            (core.w_p, p, s, magnitude[:, p.shape[-1] :]),
        ):
            scores = scored @ w
            errors = _gamma(scored.shape[-1] + 8) * (scored.abs() @ w.abs()) * keep
            terms = pooled.abs() @ columns.T  # R_tc, (B, T, C)
            if core.attention_softmax:
                alpha = torch.softmax(scores.masked_fill(~mask, -math.inf), -1).nan_to_num(0.0)
                shift = (
                    ((scores.masked_fill(~mask, -math.inf).amax(-1, keepdim=True) - scores) * keep)
                    .nan_to_num(0.0)
                    .amax(-1, keepdim=True)
                )
                eta = 2 * (U * shift + 2 * U) + _gamma(n_tokens + 1) + U
                rho = (1 + eta) * torch.exp(2 * errors.amax(-1, keepdim=True)) - 1
                weight_errors = rho * alpha
            else:
                alpha = scores * keep
                weight_errors = errors
            per_token = _gamma(n) * (alpha.abs() + weight_errors) + weight_errors
            bound = bound + 2 * (per_token.unsqueeze(-1) * terms).sum(1)
    return bound.float()


@pytest.mark.parametrize(
    "n_tables, params",
    [
        (2, {}),
        (1, {}),
        (2, {"positions": None, "bias": False}),
        (2, {"attention_softmax": False, "nb_unigram_weight": 0.0}),
        (1, {"nb_unigram_weight": 0.0, "nb_bigram_weight": 0.0, "position_dim": 3}),
    ],
)
def test_folded_duo_gives_the_network_logits(toy_corpus, monkeypatch, n_tables, params):
    # The estimator predicts through the folded head; DuoModule.forward on the token vectors
    # gives the same function of the weights, summed in another order: they agree within the
    # float32 rounding bound of _rounding_bound, whatever order a CPU's kernels sum in.
    texts, labels = _three_classes(toy_corpus)
    X = _tables(texts, n_tables).transform(texts)
    clf = DuoClassifier(d_ff=16, max_epochs=3, random_state=0, **params).fit(X, labels)
    network = clf.net_.module_
    assert isinstance(clf.inference_module_, FoldedNetwork)
    assert isinstance(clf.inference_module_.head, FoldedDuoHead)
    batches = _recorded_batches(monkeypatch)
    logits = clf.decision_function(X)
    assert len(batches) > 0
    for inputs, folded in batches:
        with torch.no_grad():
            plain = network.classify(*network.embed(**inputs))[0]
        bound = _rounding_bound(network, **inputs)
        excess = (folded - plain).abs() - bound
        assert (excess <= 0).all(), f"beyond the rounding bound by {excess.max().item():.3g}"
    assert np.isfinite(logits).all()


def _duo_network(n_tables=2, side_features=0, **core):
    """A SequenceNetwork over a random Duo core, with token and pair features of 3 folds."""
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    vocabulary, n_classes, folds = 30, 3, 3
    tables = [torch.randn(vocabulary, width) for width in (6, 10)[:n_tables]]
    for table in tables:
        table[0] = 0.0
    tokens = torch.from_numpy(np.unique(rng.integers(1, (folds + 1) * vocabulary, 40)))
    pairs = torch.from_numpy(np.unique(rng.integers(1, (folds + 1) * vocabulary**2, 200)))
    token_features = NgramFeatures(
        tokens, torch.randn(len(tokens), 2), vocabulary, n=1, folds=folds
    )
    pair_features = PairFeatures(pairs, torch.randn(len(pairs), 1), vocabulary, folds=folds)
    widths = tuple(t.shape[1] + 3 for t in tables)
    network = SequenceNetwork(
        DuoModule(widths if n_tables == 2 else widths[0], n_classes, d_ff=8, **core),
        tables=tables,
        combine=TableStreams(),
        token_features=token_features,
        token_scales=torch.tensor([0.5, 2.0][:n_tables]),
        pair_features=pair_features,
        pair_scales=torch.tensor([1.5, 0.25][:n_tables]),
        side_features=side_features,
        n_outputs=n_classes,
    )
    if side_features:
        torch.nn.init.normal_(network.side.weight)
    ids = torch.from_numpy(rng.integers(1, vocabulary, (6, 9)))
    lengths = torch.tensor([9, 7, 5, 3, 1, 1])
    ids = ids * (torch.arange(9) < lengths.unsqueeze(1))
    side = torch.randn(6, side_features) if side_features else None
    return network, {"lengths": lengths, "ids": ids, "side": side}


@pytest.mark.parametrize("n_tables", [1, 2])
@pytest.mark.parametrize(
    "core", [{}, {"positions": None, "bias": False}, {"attention_softmax": False}]
)
def test_the_folded_network_gives_the_network_logits(n_tables, core):
    # The fold on its own, a torch module built from a network's weights: the logits of the
    # network's forward in eval mode, within the rounding bound of the two computations, and
    # the side term added by the same kernel (one more rounding of the sum on each side).
    network, batch = _duo_network(n_tables, side_features=2, **core)
    folded = network.fold()
    assert isinstance(folded, FoldedNetwork) and isinstance(folded.head, FoldedDuoHead)
    assert list(folded.parameters()) == []
    with torch.no_grad():
        plain = network.eval()(**batch)[0]
        logits, penalty = folded(**batch)
    assert_identical(penalty, torch.zeros(()), why=Exact.ZERO)
    bound = _rounding_bound(network, batch["lengths"], batch["ids"])
    bound = bound + 2 * U * (plain.abs() + logits.abs())
    assert_within(logits, plain, bound)


def test_the_folded_network_is_a_snapshot_without_a_mode():
    network, batch = _duo_network()
    network.train()  # pair features read the cross-fitted blocks in train mode
    folded = network.fold()
    with torch.no_grad():
        reference = folded(**batch)[0]
        # No mode: the n-gram features it reads are block 0's, whatever the modes.
        assert_identical(folded.train()(**batch)[0], reference, why=Exact.SAME_CALL)
        assert_identical(network.eval().fold()(**batch)[0], reference, why=Exact.SAME_CALL)
        # Weights changed afterwards do not reach it; a new fold reads them.
        network.core.output.bias[1] += 1.0
        assert_identical(folded(**batch)[0], reference, why=Exact.SAME_CALL)
        again = network.fold()(**batch)[0]
    assert (again[:, 1] > reference[:, 1] + 0.5).all()
    # Logits 0 and 2 read none of the weights changed: within two folds' rounding bound.
    bound = _rounding_bound(network, batch["lengths"], batch["ids"])
    assert_within(again[:, [0, 2]], reference[:, [0, 2]], bound[:, [0, 2]])
    with pytest.raises(ValueError, match="reads token ids"):
        folded(batch["lengths"], x=torch.zeros(6, 9, 9))


def test_a_network_without_a_folded_form_folds_to_none():
    for core in ({"n_layers": 1, "n_heads": 1}, {"positions": "add"}):
        network, _ = _duo_network(**core)
        assert network.fold() is None
    vectors = SequenceNetwork(DuoModule(4, 2, d_ff=8), combine=TableStreams())
    assert vectors.fold() is None  # it reads vectors: no lookups
    lama = SequenceNetwork(
        LAMAModule(4, 2, n_heads=2, hidden_size=3, mlp_hidden=4),
        vocabulary_size=9,
        embedding_dim=4,
    )
    assert lama.fold() is None


@pytest.mark.parametrize("params", [{"n_layers": 1, "n_heads": 2}, {"positions": "add"}])
def test_duo_without_a_fold_predicts_through_its_forward(toy_corpus, monkeypatch, params):
    texts, labels = toy_corpus
    X = _tables(texts, 2).transform(texts)
    clf = DuoClassifier(d_ff=16, max_epochs=1, random_state=0, **params).fit(X, labels)
    network = clf.net_.module_
    assert network.fold() is None and clf.inference_module_ is network
    batches = _recorded_batches(monkeypatch)
    proba = clf.predict_proba(X)
    assert proba.shape == (len(texts), 2)
    inputs, output = batches[0]
    # The forward again on the batch predict computed, with predict's torch threads.
    with torch.no_grad(), torch_threads(resolve_threads(clf.torch_threads)):
        again = network.classify(*network.embed(**inputs))[0]
    assert_identical(output, again, why=Exact.SAME_CALL)


def _counting(monkeypatch, cls, name):
    """Calls of ``cls.name``, each recorded with the ``training`` flag of its module."""
    calls = []
    original = getattr(cls, name)

    def counted(self, *args, **kwargs):
        calls.append(getattr(self, "training", None))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(cls, name, counted)
    return calls


def test_prediction_runs_the_inference_module_training_and_validation_the_network(
    toy_corpus, monkeypatch
):
    # Training and its validation run the network's forward; the calibration's temperatures
    # and every prediction method the folded form that fit built, once, at its end.
    from sklearn.pipeline import make_pipeline

    from sklearn_lama.inspection import token_attributions

    texts, labels = toy_corpus
    tables = _tables(texts, 2)
    X = tables.transform(texts)
    forwards = _counting(monkeypatch, DuoModule, "forward")
    folded = _counting(monkeypatch, FoldedDuoHead, "forward")
    folds = _counting(monkeypatch, SequenceNetwork, "fold")
    clf = DuoClassifier(
        d_ff=16, max_epochs=2, random_state=0, early_stopping=True, calibration="temperature"
    ).fit(X, labels)
    assert clf.temperature_ is not None
    assert True in forwards and False in forwards  # training batches, validation batches
    assert len(folds) == 1 and len(folded) > 0
    forwards.clear()
    folded.clear()
    clf.predict(X), clf.predict_proba(X), clf.decision_function(X)
    assert forwards == [] and len(folded) >= 3 and len(folds) == 1
    # The network's forward takes its one path in eval mode without gradients too.
    network = clf.net_.module_.eval()
    ids, lengths = torch.tensor([[1, 2, 3]]), torch.tensor([3])
    with torch.no_grad():
        network(lengths, ids=ids)
    assert forwards == [False] and len(folds) == 1
    # So does the inspection, without gradients too (occlusion).
    token_attributions(make_pipeline(tables, clf), texts[:5], "occlusion")
    assert len(forwards) > 1 and not any(forwards) and len(folds) == 1


def _assert_predicts_with_its_weights(clf, X, batches):
    """``clf``'s predictions are its network's logits now, within the folding's rounding bound.

    ``batches`` is the list of :func:`_recorded_batches`.
    """
    assert isinstance(clf.inference_module_, FoldedNetwork)
    batches.clear()
    clf.decision_function(X)
    network = clf.net_.module_
    for inputs, folded in batches:
        with torch.no_grad():
            plain = network.classify(*network.embed(**inputs))[0]
        assert_within(folded, plain, _rounding_bound(network, **inputs))


def test_the_estimator_folds_again_after_partial_fit_warm_start_and_loading(
    toy_corpus, tmp_path, monkeypatch
):
    texts, labels = toy_corpus
    X = _tables(texts, 2).transform(texts)
    clf = DuoClassifier(d_ff=16, max_epochs=1, random_state=0).fit(X, labels)
    folds = _counting(monkeypatch, SequenceNetwork, "fold")
    batches = _recorded_batches(monkeypatch)
    reference = clf.decision_function(X)
    # Modes and predictions fold nothing: the form is the estimator's, built once.
    clf.net_.module_.train()
    assert_identical(clf.decision_function(X), reference, why=Exact.SAME_CALL)
    assert folds == []
    # New weights, each time folded at the end of the fit that trained them: nothing stale.
    for fit in (
        lambda: clf.partial_fit(X, labels),
        lambda: clf.set_params(warm_start=True).fit(X, labels),
    ):
        before = clf.inference_module_
        fit()
        assert clf.inference_module_ is not before and len(folds) == 1
        folds.clear()
        _assert_predicts_with_its_weights(clf, X, batches)
        assert_differ(clf.decision_function(X), reference)
        reference = clf.decision_function(X)
    # Loaded (pickle, deepcopy, weights file): folded from the loaded weights, the same
    # weights folded by the same kernels on the same threads, so the same predictions.
    save_weights(clf, tmp_path / "duo.safetensors")
    for load in (
        lambda: pickle.loads(pickle.dumps(clf)),
        lambda: copy.deepcopy(clf),
        lambda: load_weights(tmp_path / "duo.safetensors"),
    ):
        loaded = load()
        assert len(folds) == 1 and loaded.inference_module_ is not clf.inference_module_
        folds.clear()
        assert_identical(loaded.decision_function(X), reference, why=Exact.COPY)
        _assert_predicts_with_its_weights(loaded, X, batches)
    # Under autocast (precision="bf16") the estimator predicts with the network itself.
    clf.set_params(precision="bf16").fit(X, labels)
    assert clf.inference_module_ is clf.net_.module_ and folds == []


def test_onnx_export_traces_the_folded_head(toy_corpus, tmp_path):
    # The graph computes what predict computes: the per-token tables of the folded head,
    # not the embedding tables and the head's weights.
    onnx = pytest.importorskip("onnx")
    from onnx import numpy_helper

    from sklearn_lama.export import to_onnx

    texts, labels = _three_classes(toy_corpus)
    X = _tables(texts, 2).transform(texts)
    clf = DuoClassifier(d_ff=16, max_epochs=1, random_state=0).fit(X, labels)
    path, _ = to_onnx(clf, tmp_path / "duo.onnx")
    graph = onnx.load(path).graph
    shapes = {tuple(t.dims) for t in graph.initializer}
    for node in graph.node:
        for attribute in node.attribute:
            if attribute.type == onnx.AttributeProto.TENSOR:
                shapes.add(tuple(numpy_helper.to_array(attribute.t).shape))
    network = clf.net_.module_
    vocabulary = network.lookups[0].num_embeddings
    assert (vocabulary, 2 + 2 * len(clf.classes_)) in shapes
    assert not any(tuple(lookup.weight.shape) in shapes for lookup in network.lookups)
    assert tuple(network.core.fusion.weight.shape) not in shapes


@pytest.mark.parametrize("estimator", [LAMAClassifier, FCSRClassifier, DuoClassifier])
def test_prediction_batches_keep_to_the_inference_tokens(toy_corpus, monkeypatch, estimator):
    texts, labels = _three_classes(toy_corpus)
    X = _tables(texts, 2 if estimator is DuoClassifier else 1).transform(texts)
    clf = estimator(max_epochs=2, random_state=0).fit(X, labels)
    budgets = []
    run_sorted = _base.run_sorted

    def recording(net, batches, compute, budget, **kwargs):
        budgets.append(budget.max_tokens)
        for rows, output in run_sorted(net, batches, compute, budget, **kwargs):
            # Every batch within the budget, or a document over it alone.
            width = max(int(batches.lengths[rows].max()), 1)
            assert len(rows) == 1 or len(rows) * width <= budget.max_tokens
            yield rows, output

    monkeypatch.setattr(estimator, "_inference_tokens", 64)
    monkeypatch.setattr(_base, "run_sorted", recording)
    reference = clf.predict_proba(X)
    shuffled = np.random.default_rng(0).permutation(len(texts))
    proba = clf.predict_proba(X[shuffled])
    assert budgets == [64, 64]
    # Batches are sorted by length and content, so a permutation of the documents gives the
    # same batches, computed alike: each document's row comes back in its place, bit for bit.
    assert_identical(proba, reference[shuffled], why=Exact.SAME_CALL)


def test_lama_predicts_in_batches_of_max_batch_tokens(toy_corpus):
    texts, labels = toy_corpus
    X = _tables(texts, 1).transform(texts)
    clf = LAMAClassifier(max_epochs=1, random_state=0, max_batch_tokens=999).fit(X, labels)
    assert clf._inference_budget(clf._batch_budget()).max_tokens == 999


def test_token_features_dense_table_and_block_search_match_the_full_search():
    from sklearn_lama.modules import NgramFeatures

    rng = np.random.default_rng(0)
    vocabulary, folds = 50, 3
    for n in (1, 2):
        codes = np.unique(rng.integers(0, (folds + 1) * vocabulary**n, 40))
        keys = torch.from_numpy(codes)
        values = torch.from_numpy(rng.normal(size=(len(codes), 2)).astype(np.float32))
        features = NgramFeatures(keys, values, vocabulary, n=n, folds=folds).eval()
        # The full search over every block's keys, as before block 0 was singled out.
        ids = torch.from_numpy(rng.integers(0, vocabulary, (5, 9)))
        grams = ids[:, : 9 - n + 1]
        if n == 2:
            grams = grams * vocabulary + ids[:, 1:]
        at = torch.searchsorted(keys, grams).clamp_(max=len(keys) - 1)
        expected = values[at] * (keys[at] == grams).unsqueeze(-1)
        expected = torch.nn.functional.pad(expected, (0, 0, n - 1, 0))
        assert_identical(features(ids), expected, why=Exact.COPY)
        # A batch too small to pay for the dense table searches; the same features.
        assert_identical(features(ids[:1, :1]), expected[:1, :1], why=Exact.COPY)


def test_inference_batches_hold_each_document_once_within_the_budget():
    # No padding rows: a batch is its documents, as many as the budget allows at their width.
    from sklearn_lama.training._batching import BatchBudget, BudgetBatchSampler

    lengths = np.array([1, 2, 2, 3, 40, 70])
    sampler = BudgetBatchSampler(lengths, 4, BatchBudget(100))
    assert sampler.ends == [4, 5, 6]
    assert list(sampler) == [[0, 1, 2, 3], [4], [5]]
