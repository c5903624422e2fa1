"""precision: bfloat16 autocast on the CPU, float16 refused there, CUDA when present."""

import warnings

import numpy as np
import pytest
import torch

from .conftest import make_classifier

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")


@pytest.fixture(scope="module")
def ids():
    rng = np.random.RandomState(0)
    X = rng.randint(1, 30, size=(60, 12))
    y = np.where(X[:, :3].sum(1) > 45, "a", "b")
    return X, y


def test_bf16_fits_and_predicts_close_to_float32(kind, ids):
    X, y = ids
    full = make_classifier(kind, max_epochs=3).fit(X, y)
    half = make_classifier(kind, max_epochs=3, precision="bf16").fit(X, y)
    proba = half.predict_proba(X)
    assert proba.dtype == np.float64 and np.isfinite(proba).all()
    np.testing.assert_allclose(proba.sum(1), 1.0)
    # bfloat16 keeps 8 bits of mantissa: training takes another path, close
    # to float32's but not equal to it.
    reference = full.predict_proba(X)
    difference = np.abs(proba - reference).max()
    assert 0 < difference < 0.15
    # The same weights predicted in bfloat16 stay within its rounding.
    full.net_.precision = "bf16"
    np.testing.assert_allclose(full.predict_proba(X), reference, atol=0.02)
    if hasattr(half.net_.module_.core, "token_attention"):
        assert all(np.isfinite(w).all() for w in half.attention_weights(X[:5]))


def test_bf16_runs_the_forward_pass_in_bfloat16(ids):
    X, y = ids
    seen = []
    clf = make_classifier("fcsr", max_epochs=1, precision="bf16").fit(X, y)
    hook = clf.net_.module_.core.register_forward_hook(
        lambda module, args, out: seen.append(out[0].dtype)
    )
    clf.predict_proba(X)
    hook.remove()
    assert seen and set(seen) == {torch.bfloat16}
    # Parameters stay float32: only the arithmetic is reduced.
    assert {p.dtype for p in clf.net_.module_.parameters()} == {torch.float32}


@pytest.mark.skipif(torch.cuda.is_available(), reason="the refusal is for machines without CUDA")
def test_float16_mixed_is_refused_on_the_cpu_before_training(ids):
    X, y = ids
    clf = make_classifier("lama", precision="16-mixed")
    with pytest.raises(ValueError, match="16-mixed.*CUDA.*bf16"):
        clf.fit(X, y)
    assert not hasattr(clf, "net_")


def test_unknown_precision_is_refused(ids):
    X, y = ids
    with pytest.raises(ValueError, match="precision"):
        make_classifier("duo", precision="fp8").fit(X, y)


@cuda
@pytest.mark.parametrize("precision", ["bf16", "16-mixed"])
def test_cuda_mixed_precision_matches_float32(kind, ids, precision):
    if precision == "bf16" and not torch.cuda.is_bf16_supported():
        pytest.skip("this GPU has no bfloat16")
    X, y = ids
    full = make_classifier(kind, max_epochs=3, device="cuda").fit(X, y)
    mixed = make_classifier(kind, max_epochs=3, device="cuda", precision=precision).fit(X, y)
    if precision == "16-mixed":
        assert mixed.net_.scaler_ is not None
    proba = mixed.predict_proba(X)
    assert np.isfinite(proba).all()
    # As on the CPU (test_bf16_fits_and_predicts_close_to_float32): training in reduced
    # precision takes another path, close to float32's but not equal to it.
    reference = full.predict_proba(X)
    assert np.abs(proba - reference).max() < 0.15
    # The same weights predicted in reduced precision stay within its rounding.
    full.net_.precision = precision
    np.testing.assert_allclose(full.predict_proba(X), reference, atol=0.02)


@cuda
@pytest.mark.parametrize("precision", ["32", "bf16", "16-mixed"])
def test_lama_recurrences_run_in_float32_under_every_precision_on_cuda(ids, precision):
    # CUDA's autocast would run cuDNN's GRU in float16 even under bf16 (without loss
    # scaling); the CPU's leaves it in float32 (test_bf16_runs_the_forward_pass_in_bfloat16).
    if precision == "bf16" and not torch.cuda.is_bf16_supported():
        pytest.skip("this GPU has no bfloat16")
    X, y = ids
    clf = make_classifier("lama", max_epochs=1, device="cuda", precision=precision).fit(X, y)
    seen = []
    # The annotations keep the recurrence's dtype (index_select and cat of its states).
    hook = clf.net_.module_.core.encoder.register_forward_hook(
        lambda module, args, out: seen.append(out.dtype)
    )
    clf.predict_proba(X)
    hook.remove()
    assert seen and set(seen) == {torch.float32}


@cuda
def test_lama_fits_and_predicts_on_cuda_without_warnings(ids):
    # The fused recurrence's weights are assembled at every call: cuDNN copies them
    # into its buffer and would warn (suggesting flatten_parameters) at every call.
    X, y = ids
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        clf = make_classifier("lama", max_epochs=2, device="cuda").fit(X, y)
        clf.predict_proba(X)
