"""One computational path per model: no ATen internals, no reads of another class's privates."""

import ast
from pathlib import Path

import pytest

import sklearn_lama

PACKAGE = Path(sklearn_lama.__file__).parent
SOURCES = sorted(PACKAGE.rglob("*.py"))
# The files of the models' computations and of the inference that runs them: each uses
# only public members of the objects of other classes.
MODEL_FILES = [
    *sorted((PACKAGE / "modules").glob("*.py")),
    PACKAGE / "classification" / "_duo.py",
    PACKAGE / "export" / "_onnx.py",
    PACKAGE / "text" / "_text.py",
    PACKAGE / "training" / "_inference.py",
]


def _tree(path):
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def _private_reads(tree):
    """``(line, name, expression)`` of each read of a private member of another object.

    A read: ``x._name``, or ``getattr(x, "_name")``; another object: not
    ``self``, ``cls``, ``super()`` or an imported module.
    """
    modules = {
        (alias.asname or alias.name).split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for alias in node.names
    }

    def own(value):
        if isinstance(value, ast.Name):
            return value.id in {"self", "cls"} | modules
        return (
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Name)
            and value.func.id == "super"
        )

    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            value, name = node.value, node.attr
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "setattr", "hasattr")
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
        ):
            value, name = node.args[0], node.args[1].value
        else:
            continue
        if name.startswith("_") and not name.startswith("__") and not own(value):
            yield node.lineno, name, ast.unparse(node)


def _private_members(path):
    """Names of the underscore methods and attributes the classes of ``path`` define."""
    names = set()
    for node in ast.walk(_tree(path)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names.add(node.name)
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.ctx, ast.Store)
            and isinstance(node.value, ast.Name)
            and node.value.id == "self"
        ):
            names.add(node.attr)
    return {name for name in names if name.startswith("_") and not name.startswith("__")}


def test_the_checker_sees_private_reads():
    tree = ast.parse(
        "import torch\n"
        "class A:\n"
        "    def f(self, network):\n"
        "        self._own, torch._C, super()._g()\n"
        "        return network._fixed_features(), getattr(network.core, '_head')\n"
    )
    assert sorted(expression for _, _, expression in _private_reads(tree)) == [
        "getattr(network.core, '_head')",
        "network._fixed_features",
    ]


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_aten_operator_internals(path):
    # Models are written with torch's public API: its functions, modules and autograd.
    text = path.read_text(encoding="utf-8")
    assert "torch.ops" not in text and "_VF" not in text


def test_no_file_reads_the_private_members_of_the_modules_classes():
    # A core or the network changes its inner workings without breaking a reader elsewhere:
    # nothing outside a file of sklearn_lama/modules reads its classes' underscore members
    # (the folded Duo head reads the public SequenceNetwork.token_inputs()).
    found = []
    for owner in sorted((PACKAGE / "modules").glob("*.py")):
        private = _private_members(owner)
        for path in SOURCES:
            if path == owner:
                continue
            for line, name, expression in _private_reads(_tree(path)):
                if name in private:
                    found.append(f"{path.relative_to(PACKAGE)}:{line}: {expression}")
    assert found == []


@pytest.mark.parametrize("path", MODEL_FILES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_model_files_read_no_private_member_of_another_object(path):
    found = [f"{line}: {expression}" for line, _, expression in _private_reads(_tree(path))]
    assert found == []
