"""The package's layers import in one direction only (docs/architecture.rst).

Read from the source text, so that a new upward import fails here before it
becomes an import cycle or a side channel.
"""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "sklearn_lama"

# Each layer may import the layers of lower rank only (and itself).
RANKS = {
    "_version": -1,
    "utils": 0,
    "text": 1,
    "datasets": 1,
    "modules": 2,
    "training": 2,
    "classification": 3,
    "translation": 3,
    "inspection": 4,
    "export": 4,
    "_main": 5,
    "__init__": 6,
    "__main__": 6,
}
# Layers of one rank that must not import each other either.
SIBLINGS_APART = [("modules", "training"), ("classification", "translation")]


def _layer(parts):
    """The layer of a module given by its path parts below the package."""
    head = parts[0]
    return head[: -len(".py")] if head.endswith(".py") else head


def _imports(path, source=None):
    """The package layers that ``path`` (or ``source`` placed there) imports."""
    parts = path.relative_to(PACKAGE).parts
    package = list(parts[:-1])
    tree = ast.parse(path.read_text(encoding="utf-8") if source is None else source)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level == 0:
                if node.module and node.module.split(".")[0] == "sklearn_lama":
                    target = node.module.split(".")[1:]
                else:
                    continue
            else:
                base = package[: len(package) - (node.level - 1)]
                target = base + (node.module.split(".") if node.module else [])
            if not target:
                # ``from . import X`` at the top: X names the layer.
                target = [node.names[0].name]
            yield node.lineno, target[0]


def _modules():
    return sorted(p for p in PACKAGE.rglob("*.py") if "data" not in p.parts)


def test_every_module_belongs_to_a_known_layer():
    unknown = {_layer(p.relative_to(PACKAGE).parts) for p in _modules()} - set(RANKS)
    assert not unknown, f"add these to RANKS and to docs/architecture.rst: {unknown}"


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_go_down_the_layers(path):
    layer = _layer(path.relative_to(PACKAGE).parts)
    for line, target in _imports(path):
        target = target[: -len(".py")] if target.endswith(".py") else target
        if target == layer or target not in RANKS:
            continue
        assert RANKS[target] < RANKS[layer], (
            f"{path.relative_to(PACKAGE)}:{line} imports {target} (rank {RANKS[target]}) "
            f"from {layer} (rank {RANKS[layer]})"
        )
        assert (layer, target) not in SIBLINGS_APART and (target, layer) not in SIBLINGS_APART


def test_the_checker_sees_every_form_of_import():
    source = (
        "from ..classification import LAMAClassifier\n"
        "from sklearn_lama.inspection import explain\n"
        "def f():\n"
        "    from ..training._training import make_net\n"
        "from . import _text\n"
    )
    found = [target for _, target in _imports(PACKAGE / "text" / "_new.py", source)]
    assert sorted(found) == ["classification", "inspection", "text", "training"]
