"""The float32 rounding bounds from which the suite's numerical tolerances are derived.

Two float32 computations of the same value differ when the kernels associate
its sums differently: another thread count, another batch shape (the matrix
kernels block a product by its rows), another library (ONNX Runtime), another
CPU (AMD and Intel pick different kernels). A tolerance tuned on one machine
fails on the next, so each comparison's tolerance is a bound of the rounding
of the computation compared, from Higham's analysis of summation ("Accuracy
and Stability of Numerical Algorithms", N. J. Higham, 2nd ed., §3.1 and §4.2):
a float32 sum of ``n`` terms, in any association, is within
``gamma(n - 1) * sum(|terms|)`` of the exact sum, with
``gamma(k) = k u / (1 - k u)`` and ``u = 2**-24`` the unit roundoff, so two of
its evaluations are within twice that.

Exact equality is therefore kept for the comparisons that no kernel can
change, each given its reason (:class:`Exact`) through
:func:`assert_identical`; tests/test_suite_rules.py fails on any other exact
comparison in the test modules (``torch.equal``, ``np.array_equal``,
``assert_array_equal``, ``assert_equal``, a zero tolerance, ``(a == b).all()``).
Two computations that differ in anything a kernel sees (train or eval mode,
gradients or none, the other documents of a batch, its padding or size, the
thread count, the device, the library, a folded or unfolded path) compare
within a bound derived here; labels or decodes of two such computations agree
only where the probabilities decide them (:func:`assert_same_predictions`).
"""

import enum
from contextlib import contextmanager

import numpy as np
import torch

__all__ = [
    "U",
    "U64",
    "Exact",
    "assert_differ",
    "assert_identical",
    "assert_same_predictions",
    "assert_within",
    "chained_bound",
    "estimator_decision_bound",
    "estimator_probability_bound",
    "gamma",
    "identical",
    "matmul_bound",
    "output_abs_sum",
    "probability_bound",
    "reassociation_bound",
]

U = 2.0**-24  # float32's unit roundoff: half the distance from 1 to the next float
U64 = 2.0**-53  # float64's, for the tests that compute in float64


def gamma(n, u=U):
    """Higham's ``gamma_n = n u / (1 - n u)``: the relative error bound of ``n`` roundings."""
    n = np.asarray(n, dtype=np.float64)
    if np.any(n * u >= 1):
        raise ValueError(f"n={n} roundings have no bound at unit roundoff {u} (n * u >= 1).")
    return n * u / (1 - n * u)


def reassociation_bound(abs_sum, n, u=U):
    """Largest difference between two float32 evaluations of one sum of ``n`` terms.

    Parameters
    ----------
    abs_sum : float or ndarray
        The sum of the terms' absolute values (float64, from the actual operands).
    n : int
        The number of terms, at least 1: the longest accumulation.
    u : float, default=U
        The unit roundoff: :data:`U` (float32) or :data:`U64` (float64).

    Returns
    -------
    float or ndarray
        ``2 * gamma(n - 1) * abs_sum``: each evaluation, in whatever order or
        blocking, is within ``gamma(n - 1) * abs_sum`` of the exact sum.
    """
    return 2 * gamma(max(n - 1, 0), u) * np.asarray(abs_sum, dtype=np.float64)


def matmul_bound(a, b):
    """Element-wise :func:`reassociation_bound` of the float32 product ``a @ b``.

    The absolute sums are ``|a| @ |b|`` in float64; ``n`` is ``a``'s last dimension.
    """
    a = torch.as_tensor(a).detach().double().abs()
    b = torch.as_tensor(b).detach().double().abs()
    return reassociation_bound((a @ b).numpy(), a.shape[-1])


def chained_bound(abs_sum, n, depth):
    """Bound of two float32 evaluations of a network of ``depth`` chained reductions.

    Each reduction (a product, a sum over tokens, a recurrence step) of at most
    ``n`` terms reassociates independently; to first order their errors add,
    each carried to the output by the layers after it. The networks compared
    bound what those layers do to an error: gates, ``tanh`` and softmax are
    1-Lipschitz, and the output layer's terms are measured (``abs_sum``, its
    float64 absolute sum, e.g. from :func:`output_abs_sum`), so the bound is
    ``depth`` times :func:`reassociation_bound` of the output layer.
    """
    return depth * reassociation_bound(abs_sum, n)


def probability_bound(logit_bound):
    """Bound on a softmax's (or sigmoid's) outputs moved by logits moved at most ``logit_bound``.

    ``dp_i = p_i (dz_i - sum_j p_j dz_j)`` and ``|dz_i - sum_j p_j dz_j| <=
    2 (1 - p_i) max|dz|``, so ``|dp_i| <= 2 p_i (1 - p_i) max|dz| <= max|dz| / 2``;
    a sigmoid's ``p (1 - p) <= 1/4`` is within the same bound.
    """
    return logit_bound / 2


@contextmanager
def output_abs_sum(layer):
    """Record the largest float64 ``|h| @ |W|.T + |b|`` of the ``nn.Linear`` ``layer``.

    Yields a list holding one float, updated by every forward pass of
    ``layer``: the absolute sum of the terms of its largest output, from the
    actual inputs. Raises ``AssertionError`` on leaving if ``layer`` never ran.
    """
    measured = [0.0]
    calls = []

    def record(module, args, output):
        measured[0] = max(measured[0], _abs_sum(module, args[0]))
        calls.append(1)

    handle = layer.register_forward_hook(record)
    try:
        yield measured
    finally:
        handle.remove()
    assert calls, f"{layer} never ran: no magnitude to bound the rounding by"


def assert_within(actual, expected, bound):
    """Assert ``|actual - expected| <= bound`` element-wise (arrays or tensors)."""
    actual, expected = (torch.as_tensor(v).detach().double().numpy() for v in (actual, expected))
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    difference = np.abs(actual - expected)
    bound = np.broadcast_to(np.asarray(bound, dtype=np.float64), difference.shape)
    if difference.size:
        worst = np.unravel_index(np.argmax(difference - bound), difference.shape)
        assert (difference <= bound).all(), (
            f"|difference| {difference[worst]:.3g} > bound {bound[worst]:.3g} at index {worst}: "
            f"{actual[worst]!r} against {expected[worst]!r}"
        )


class Exact(enum.Enum):
    """Why two results may be compared exactly: the reasons :func:`assert_identical` takes.

    Each names a comparison that holds on any CPU, thread count and library
    version the suite runs on, because no kernel chooses anything in it.
    Everything else (two computations that differ in mode, gradients, batch,
    padding, threads, device, library or path) compares within a bound.
    """

    SAME_CALL = (
        "the very same call on the very same inputs, run again in the same process with the "
        "same threads and batches (a seeded fit, a prediction, a fold): the same kernels"
    )
    COPY = (
        "a copy: values saved and loaded, pickled, cloned, gathered or read back from a file, "
        "or a copy's prediction with the same weights, inputs, batches and threads in this "
        "process"
    )
    DISCRETE = (
        "integers, booleans, strings or ids (token ids, keys, counts, classes, given labels) "
        "that never went through float arithmetic: nothing rounds"
    )
    ZERO = "values exactly zero by construction: masked or padded positions, no terms at all"
    NEGATED = (
        "the same kernels on exactly negated inputs: rounding to nearest is symmetric under "
        "negation, so the results are exactly negated"
    )
    SAME_TERMS = (
        "the same kernels on inputs that differ only in values the compared outputs never read, "
        "or read only through an exact zero (a causal mask, another fold's counts)"
    )


def _exact_values(value):
    """``value`` as a numpy array, or a list of them for a sequence of arrays or tensors."""
    if isinstance(value, (list, tuple)) and any(
        isinstance(v, (np.ndarray, torch.Tensor)) for v in value
    ):
        return [_exact_values(v) for v in value]
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu()
        # numpy has no bfloat16; float32 holds every bfloat16 and float16 exactly.
        return (value.float() if value.dtype in (torch.bfloat16, torch.float16) else value).numpy()
    return np.asarray(value)


def _check_reason(why, arrays):
    if not isinstance(why, Exact):
        raise TypeError(f"why must be one of {[m.name for m in Exact]} (an Exact), not {why!r}")
    for array in arrays:
        if isinstance(array, list):
            _check_reason(why, array)
        elif why is Exact.DISCRETE and array.dtype.kind in "fc":
            raise TypeError(
                f"Exact.DISCRETE on {array.dtype} values: floats round; give the reason their "
                "computation is exact (SAME_CALL, COPY, ...) or compare within a bound"
            )


def identical(actual, expected, *, why):
    """Whether ``actual`` and ``expected`` are exactly equal: shapes, and values (NaN as NaN).

    ``why`` is the :class:`Exact` reason the comparison may be exact. Sequences
    of arrays or tensors (of different shapes) compare pairwise.
    """
    actual, expected = _exact_values(actual), _exact_values(expected)
    _check_reason(why, [actual, expected])
    if isinstance(actual, list) or isinstance(expected, list):
        # Pairwise, an array's rows against a list's arrays.
        actual, expected = (v if isinstance(v, list) else list(v) for v in (actual, expected))
        return len(actual) == len(expected) and all(
            identical(a, b, why=why) for a, b in zip(actual, expected)
        )
    return actual.shape == expected.shape and bool(
        np.array_equal(actual, expected, equal_nan=_nan(actual, expected))
    )


def _nan(*arrays):
    return all(a.dtype.kind in "fc" for a in arrays)


def assert_identical(actual, expected, *, why):
    """Assert ``actual`` and ``expected`` exactly equal, for the :class:`Exact` reason ``why``.

    Numpy arrays, torch tensors, scalars, lists (of arrays or tensors too);
    shapes must match (no broadcasting), NaNs match NaNs (and, as with ``==``,
    -0.0 matches 0.0). ``Exact.DISCRETE``
    refuses floats and ``Exact.ZERO`` an ``expected`` that is not all zeros.
    """
    if not identical(actual, expected, why=why):
        a, b = _exact_values(actual), _exact_values(expected)
        if isinstance(a, list) or isinstance(b, list):
            raise AssertionError(f"not identical ({why.name}: {why.value}): {a!r} against {b!r}")
        assert a.shape == b.shape, f"shapes {a.shape} and {b.shape} ({why.name})"
        np.testing.assert_array_equal(a, b, err_msg=f"{why.name}: {why.value}")
    if why is Exact.ZERO:
        expected = _exact_values(expected)
        for part in expected if isinstance(expected, list) else [expected]:
            assert not np.any(part), "Exact.ZERO compares with values that are not all zero"


def assert_differ(actual, expected):
    """Assert ``actual`` and ``expected`` are not exactly equal (e.g. other seeds, other data).

    An inequality needs no :class:`Exact` reason: rounding cannot make it fail
    on another CPU. It is a weak check, though: where the difference expected
    is larger than rounding, compare it with a bound instead.
    """
    assert not identical(actual, expected, why=Exact.COPY), "identical, where they should differ"


def assert_same_predictions(actual, expected, proba, bound, classes=None):
    """Assert the labels of two computations agree wherever their probabilities decide them.

    ``expected`` are the labels of probabilities ``proba``; ``actual`` those of
    another computation (another library, batch, device) whose probabilities
    are within ``bound`` of ``proba``. A label moves only where rounding can
    move the decision: a class within ``2 * bound`` of the most probable one
    (single-label, ``classes`` given, default ``0 .. C-1``), or a label's
    probability within ``bound`` of 0.5 (multi-label indicators, ``proba`` of
    the labels' shape). Elsewhere the labels are equal; where undecided,
    ``actual`` is one of the classes that rounding could have chosen.
    A list of arrays ``proba`` (one per task) checks each task, ``classes`` a
    list of their classes.
    """
    actual, expected = np.asarray(actual), np.asarray(expected)
    if isinstance(proba, list) and all(isinstance(p, np.ndarray) for p in proba):
        for k, p in enumerate(proba):
            c = None if classes is None else classes[k]
            assert_same_predictions(actual[:, k], expected[:, k], p, bound, c)
        return
    proba = np.asarray(proba, dtype=np.float64)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    if proba.shape == expected.shape and expected.ndim == 2:  # indicators: p > 0.5
        decided = np.abs(proba - 0.5) > bound
        np.testing.assert_array_equal(actual[decided], expected[decided])
        return
    classes = np.arange(proba.shape[1]) if classes is None else np.asarray(classes)
    top = proba.max(axis=1, keepdims=True)
    possible = proba >= top - 2 * bound  # the classes rounding could make the most probable
    decided = possible.sum(axis=1) == 1
    np.testing.assert_array_equal(actual[decided], expected[decided])
    for row in np.flatnonzero(~decided):
        assert actual[row] in classes[possible[row]], (row, actual[row], classes[possible[row]])


@contextmanager
def attention_score_abs_sum(core, inputs=()):
    """Record a float64 bound of the absolute sums of ``core``'s attention scores in the block.

    Yields a list holding one float. The scores, by core (a ``LAMAModule``,
    ``FCSRModule`` or ``DuoModule``):

    - LAMA (Eq. 10-11): ``sum_k P(c)_k Q(u)_k`` over the ``rank`` products,
      at most ``rank max|P(c)| max|Q(u)|``; ``tanh`` and the normalisation
      across heads follow, neither widening an error relative to the score.
    - FCSR (Eq. 9): ``q k / scale``, ``q`` and ``k`` outputs of one linear
      layer, each within that layer's absolute sum ``A``: ``A**2 / scale``.
    - Duo (Eq. 1-2): ``s . w``, ``s`` a LayerNorm output or, without encoder
      layers, one of ``inputs`` (the real tokens' vectors): at most
      ``max|s| * sum|w|`` (both streams).
    """
    from sklearn_lama.modules import DuoModule, FCSRModule, LAMAModule

    measured, largest, handles = [0.0], {}, []

    def keep(name):
        def record(module, args, output):
            value = output if torch.is_tensor(output) else torch.cat([o.flatten() for o in output])
            largest[name] = max(largest.get(name, 0.0), value.detach().double().abs().max().item())

        return record

    if isinstance(core, LAMAModule):
        handles += [core.attention.P.register_forward_hook(keep("P"))]
        handles += [core.attention.Q.register_forward_hook(keep("Q"))]
    elif isinstance(core, DuoModule):
        largest["s"] = max([x.detach().double().abs().max().item() for x in inputs] + [0.0])
        for layer in core.modules():
            if isinstance(layer, torch.nn.LayerNorm):
                handles += [layer.register_forward_hook(keep("s"))]
    elif not isinstance(core, FCSRModule):
        raise TypeError(f"no attention scores known for {type(core).__name__}")
    context = output_abs_sum(core.attention.qk) if isinstance(core, FCSRModule) else None
    try:
        if context is None:
            yield measured
        else:
            with context as qk:
                yield measured
    finally:
        for handle in handles:
            handle.remove()
    if isinstance(core, LAMAModule):
        measured[0] = core.attention.rank * largest["P"] * largest["Q"]
    elif isinstance(core, FCSRModule):
        measured[0] = qk[0] ** 2 / core.attention.scale
    else:
        w = max(core.w_s.detach().double().abs().sum(), core.w_p.detach().double().abs().sum())
        measured[0] = largest["s"] * float(w)


def estimator_probability_bound(estimator, X, n, depth):
    """Bound on two float32 runs' probabilities of the fitted ``estimator`` on ``X``.

    :func:`probability_bound` of :func:`chained_bound`, with the absolute sum
    of the network's output layer (its last ``nn.Linear``) measured on ``X``.
    Where the prediction path skips that layer (Duo folds its head into
    per-token terms), the sum is taken normwise: ``n`` terms each at most the
    largest ``|logit|``, as LayerNorm and the attention averages bound the
    features. ``n`` and ``depth`` are the network's, as in :func:`chained_bound`.
    """
    abs_sum, _ = _output_abs_sum(estimator, X, n)
    return probability_bound(chained_bound(abs_sum, n, depth))


def estimator_decision_bound(estimator, X, n, depth):
    """Bound on two float32 runs' ``decision_function`` of the fitted ``estimator`` on ``X``.

    Each logit moves by at most :func:`chained_bound` (the absolute sum
    measured as in :func:`estimator_probability_bound`). With two classes the
    score is the difference of two logits, each moved that much, and one more
    rounding of a difference of terms within the absolute sum: ``2 *
    chained_bound + reassociation_bound(2 * abs_sum, 2)``.
    """
    abs_sum, scores = _output_abs_sum(estimator, X, n)
    logit = chained_bound(abs_sum, n, depth)
    if isinstance(scores, list) or np.ndim(scores) > 1:
        return logit
    return 2 * logit + reassociation_bound(2 * abs_sum, 2)


def _output_abs_sum(estimator, X, n):
    """The absolute sum of ``estimator``'s output layer on ``X``, and its decision function."""
    network = getattr(estimator, "steps", [(None, estimator)])[-1][1].net_.module_
    layer = [m for m in network.modules() if isinstance(m, torch.nn.Linear)][-1]
    measured, handle = (
        [],
        layer.register_forward_hook(
            lambda module, args, output: measured.append(_abs_sum(module, args[0]))
        ),
    )
    try:
        scores = estimator.decision_function(X)
    finally:
        handle.remove()
    largest = max(np.abs(np.asarray(s, np.float64)).max() for s in _as_list(scores))
    return (max(measured) if measured else n * largest), scores


def _as_list(scores):
    return scores if isinstance(scores, list) else [scores]


def _abs_sum(layer, h):
    """The largest float64 ``|h| @ |W|.T + |b|`` of the linear ``layer`` on ``h``."""
    terms = h.detach().double().abs() @ layer.weight.detach().double().abs().T
    if layer.bias is not None:
        terms = terms + layer.bias.detach().double().abs()
    return terms.max().item()
