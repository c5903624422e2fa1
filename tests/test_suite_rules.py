"""Rules the test modules keep so that they hold on any x86-64 CPU.

No exact comparison of two float computations: two computations that differ in
anything a kernel sees (train or eval mode, gradients, the documents batched
together, padding, batch size, threads, device, library, a folded path) round
differently on another CPU (an AMD EPYC's kernels are not an Intel Xeon's). They
compare within a bound derived from the computation (tests/_tolerances.py). The
comparisons that stay exact go through ``assert_identical(a, b, why=Exact.X)``
with one of the few reasons :class:`~tests._tolerances.Exact` lists (the same
call again, a copy, integers, zeros by construction, ...).

This module reads the test modules' syntax trees (not their text) and fails on
an exact comparison outside tests/_tolerances.py:

- ``torch.equal``, ``np.array_equal``, ``np.array_equiv``, ``np.equal``,
  ``np.testing.assert_array_equal``, ``np.testing.assert_equal`` and pandas'
  ``assert_frame_equal``, ``assert_series_equal``, ``assert_index_equal``;
- a zero tolerance: ``assert_allclose(..., rtol=0)`` (its ``atol`` is 0 by
  default), ``assert_close``, ``allclose``, ``isclose`` with ``rtol=0, atol=0``,
  ``pytest.approx(..., rel=0, abs=0)``;
- an element-wise equality reduced by ``all``: ``(a == b).all()``,
  ``np.all(a == b)``, ``torch.all(a == b)``, unless one side is a number
  (``(weights[~mask] == 0).all()`` says "zero by construction" in itself).

Inequalities (``assert not torch.equal(a, b)``) are written
``assert_differ(a, b)``: rounding cannot make them fail, but one rule for every
``equal`` keeps the check simple. A plain ``==`` between Python floats or lists
(``a.tolist() == b.tolist()``) cannot be told from one between integers or
strings without running the test, so it is out of this check's reach; code run in
a subprocess from a string is too.
"""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MODULES = sorted([*ROOT.glob("tests/*.py"), *ROOT.glob("benchmarks/tests/*.py")])
EXEMPT = {ROOT / "tests" / "_tolerances.py"}  # where assert_identical compares

EXACT_CALLS = {
    "equal",
    "array_equal",
    "array_equiv",
    "assert_array_equal",
    "assert_equal",
    "assert_frame_equal",
    "assert_series_equal",
    "assert_index_equal",
}
# Tolerance arguments by name and position; the tolerances a call has by default; whether
# both must be zero (assert_allclose's atol is 0 by default: rtol=0 alone makes it exact).
TOLERANCES = {
    "assert_allclose": ({"rtol": 2, "atol": 3}, {"atol"}),
    "assert_close": ({"rtol": None, "atol": None}, set()),
    "allclose": ({"rtol": 2, "atol": 3}, set()),
    "isclose": ({"rtol": 2, "atol": 3}, set()),
    "approx": ({"rel": 1, "abs": 2}, set()),
}


def _name(func):
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _is_number(node):
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        node = node.operand
    return (
        isinstance(node, ast.Constant)
        and isinstance(node.value, (int, float))
        and not isinstance(node.value, bool)
    )


def _is_zero(node):
    return node is not None and _is_number(node) and ast.literal_eval(node) == 0


def _argument(call, name, position):
    for keyword in call.keywords:
        if keyword.arg == name:
            return keyword.value
    if position is not None and len(call.args) > position:
        return call.args[position]
    return None


def _zero_tolerance(call, name):
    arguments, zero_by_default = TOLERANCES[name]
    for argument, position in arguments.items():
        value = _argument(call, argument, position)
        if not (_is_zero(value) or (value is None and argument in zero_by_default)):
            return False
    return True


def _elementwise_equality(node):
    """``node`` is ``a == b`` with neither side a number."""
    return (
        isinstance(node, ast.Compare)
        and len(node.ops) == 1
        and isinstance(node.ops[0], ast.Eq)
        and not _is_number(node.left)
        and not _is_number(node.comparators[0])
    )


def exact_comparisons(source, filename="<test>"):
    """``(line, what)`` of every exact comparison in ``source`` that the rules refuse."""
    found = []
    for node in ast.walk(ast.parse(source, filename)):
        if not isinstance(node, ast.Call):
            continue
        name = _name(node.func)
        if name in EXACT_CALLS:
            found.append((node.lineno, f"{name}(...)"))
        elif name in TOLERANCES and _zero_tolerance(node, name):
            found.append((node.lineno, f"{name}(...) with zero tolerance"))
        elif name == "all" and (
            (
                isinstance(node.func, ast.Attribute)
                and not node.args
                and _elementwise_equality(node.func.value)
            )
            or (node.args and _elementwise_equality(node.args[0]))
        ):
            found.append((node.lineno, "(a == b).all()"))
    return found


@pytest.mark.parametrize(
    "source",
    [
        "assert torch.equal(trained.detach(), predicted)",
        "assert not torch.equal(a, b)",
        "assert a.equal(b)",
        "assert np.array_equal(a, b)",
        "assert numpy.array_equiv(a, b)",
        "np.testing.assert_array_equal(a, b)",
        "from numpy.testing import assert_array_equal\nassert_array_equal(a, b)",
        "np.testing.assert_equal(a, b)",
        "pd.testing.assert_frame_equal(a, b)",
        "np.testing.assert_allclose(a, b, rtol=0)",
        "np.testing.assert_allclose(a, b, rtol=0, atol=0)",
        "np.testing.assert_allclose(a, b, 0, 0.0)",
        "torch.testing.assert_close(a, b, rtol=0, atol=0)",
        "torch.testing.assert_close(a, b, rtol=0.0, atol=-0.0)",
        "assert np.allclose(a, b, rtol=0, atol=0)",
        "assert torch.isclose(a, b, rtol=0, atol=0).all()",
        "assert x == pytest.approx(y, rel=0, abs=0)",
        "assert (a == b).all()",
        "assert (a.numpy() == b[1:]).all()",
        "assert np.all(a == b)",
        "assert torch.all(x == y)",
        "def f():\n    class C:\n        def g(self):\n            return torch.equal(a, b)",
    ],
)
def test_the_rules_refuse_an_exact_comparison(source):
    assert len(exact_comparisons(source)) == 1, source


@pytest.mark.parametrize(
    "source",
    [
        "assert_identical(a, b, why=Exact.COPY)",
        "assert_differ(a, b)",
        "assert_within(a, b, bound)",
        "np.testing.assert_allclose(a, b, rtol=0, atol=bound)",
        "np.testing.assert_allclose(a, b, atol=bound)",
        "np.testing.assert_allclose(a, b)",
        "torch.testing.assert_close(a, b)",
        "torch.testing.assert_close(a, b, rtol=0, atol=1e-3)",
        "assert np.allclose(a, b, rtol=0.05)",
        "assert np.allclose(a, b, atol=0)",
        "assert x == pytest.approx(y, abs=0)",
        "assert (weights[~mask] == 0).all()",
        "assert torch.all(A[1, :, 2:] == 0)",
        "assert (0.0 == w).all()",
        "assert (a != b).any()",
        "assert (a <= b).all()",
        "assert torch.isfinite(x).all()",
        "assert all(x == y for x, y in pairs)",
        "assert a.shape == b.shape",
        "assert labels.tolist() == [0, 1]",
        "code = 'np.testing.assert_array_equal(a, b)'",
    ],
)
def test_the_rules_let_bounds_reasons_and_plain_values_through(source):
    assert exact_comparisons(source) == [], source


def test_the_modules_checked_are_the_test_modules():
    names = {str(path.relative_to(ROOT)) for path in MODULES}
    assert {"tests/test_modules_lama.py", "tests/conftest.py", "benchmarks/tests/test_cli.py"} <= (
        names
    )
    assert "tests/_tolerances.py" in names and Path(__file__).resolve() in MODULES


@pytest.mark.parametrize("path", MODULES, ids=lambda path: str(path.relative_to(ROOT)))
def test_no_test_module_compares_floats_exactly(path):
    if path in EXEMPT:
        pytest.skip("assert_identical's own comparison")
    # This module's examples above are strings: its own tree compares nothing exactly.
    found = exact_comparisons(path.read_text(), str(path))
    assert not found, "\n".join(
        f"{path.relative_to(ROOT)}:{line}: {what}: compare within a bound "
        "(tests/_tolerances.py) or give assert_identical its Exact reason"
        for line, what in found
    )
