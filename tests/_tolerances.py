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
"""

from contextlib import contextmanager

import numpy as np
import torch

__all__ = [
    "U",
    "U64",
    "assert_within",
    "chained_bound",
    "gamma",
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
    network = getattr(estimator, "steps", [(None, estimator)])[-1][1].net_.module_
    layer = [m for m in network.modules() if isinstance(m, torch.nn.Linear)][-1]
    measured, handle = (
        [],
        layer.register_forward_hook(
            lambda module, args, output: measured.append(_abs_sum(module, args[0]))
        ),
    )
    try:
        logits = estimator.decision_function(X)
    finally:
        handle.remove()
    abs_sum = max(measured) if measured else n * np.abs(np.asarray(logits, np.float64)).max()
    return probability_bound(chained_bound(abs_sum, n, depth))


def _abs_sum(layer, h):
    """The largest float64 ``|h| @ |W|.T + |b|`` of the linear ``layer`` on ``h``."""
    terms = h.detach().double().abs() @ layer.weight.detach().double().abs().T
    if layer.bias is not None:
        terms = terms + layer.bias.detach().double().abs()
    return terms.max().item()
