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
    "base": 3,
    "classification": 4,
    "translation": 4,
    "inspection": 5,
    "export": 5,
    "_main": 6,
    "__init__": 7,
    "__main__": 7,
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


# ------------------------------------------------------- the training layer
TRAINING = PACKAGE / "training"
ARCHITECTURE_PAGE = PACKAGE.parent / "docs" / "architecture.rst"


def _functions(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


@pytest.mark.parametrize("path", sorted(TRAINING.glob("*.py")), ids=lambda p: p.name)
def test_no_function_of_the_training_layer_takes_an_estimator(path):
    for function in _functions(path):
        arguments = function.args.posonlyargs + function.args.args + function.args.kwonlyargs
        names = {a.arg for a in arguments}
        assert not names & {"estimator", "classifier", "translator"}, (
            f"{path.name}:{function.lineno} {function.name} takes {names}"
        )
        # Nor does it read an estimator's parameters itself.
        for node in ast.walk(function):
            if isinstance(node, ast.Attribute):
                assert node.attr not in {"get_params", "_parameters"}, (
                    f"{path.name}:{node.lineno} reads {node.attr}"
                )


def _calls(path):
    """The names of the functions and classes that the module at ``path`` calls."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call):
            func = node.func
            yield (
                node.lineno,
                func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None),
            )


# Seeding torch, forking its random state and building nets: the driver's work.
DRIVER_CALLS = {"manual_seed", "fork_rng", "seed", "PenalisedNet", "TranslationNet", "NeuralNet"}


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_seeding_forking_and_net_building_happen_in_the_training_layer_only(path):
    if path.is_relative_to(TRAINING):
        return
    for line, name in _calls(path):
        assert name not in DRIVER_CALLS, f"{path.relative_to(PACKAGE)}:{line} calls {name}"


def test_no_call_into_skorch_private_methods():
    import skorch
    from sklearn.base import BaseEstimator

    private = {
        name
        for cls in (skorch.NeuralNet, skorch.callbacks.Checkpoint, skorch.callbacks.Callback)
        for name in dir(cls)
        if name.startswith("_") and not name.startswith("__")
    } - set(dir(BaseEstimator))  # scikit-learn's developer API, e.g. _validate_params
    assert "_zero_grad_optimizer" in private  # the check sees skorch's private names
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute):
                assert node.attr not in private, (
                    f"{path.relative_to(PACKAGE)}:{node.lineno} uses skorch's {node.attr}"
                )


def test_the_architecture_page_names_existing_modules_and_every_subpackage():
    import re

    page = ARCHITECTURE_PAGE.read_text(encoding="utf-8")
    named = set(re.findall(r"``([a-z_]+/_?[a-z_]+\.py)``", page))
    assert named, "the page names module files as ``folder/_module.py``"
    missing = sorted(
        name
        for name in named
        if not (PACKAGE / name).is_file() and not (PACKAGE.parent / name).is_file()
    )
    assert not missing, f"the architecture page names missing modules: {missing}"
    subpackages = {p.parent.name for p in PACKAGE.glob("*/__init__.py")}
    absent = sorted(name for name in subpackages if f"``{name}/``" not in page)
    assert not absent, f"subpackages missing from the architecture page: {absent}"


# ------------------------------------------------------ the training boundary
def test_every_training_config_field_is_read_by_the_training_layer():
    # A field no one in training/ reads is a side channel: the estimator's own
    # attribute read elsewhere under the config's name, or a dead field.
    import dataclasses

    from sklearn_lama.training._config import TrainingConfig

    read = set()
    for path in TRAINING.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id == "config"
            ):
                read.add(node.attr)
    fields = {field.name for field in dataclasses.fields(TrainingConfig)}
    assert fields - read == set(), "TrainingConfig fields that no module of training/ reads"


def _fitted_name(name):
    return name.endswith("_") and not name.startswith("__")


def _assigned_attributes(tree):
    """``(line, object, attribute)`` of every attribute a module assigns, ``setattr`` included."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            while targets:
                target = targets.pop()
                if isinstance(target, (ast.Tuple, ast.List)):
                    targets.extend(target.elts)
                elif isinstance(target, ast.Starred):
                    targets.append(target.value)
                elif isinstance(target, ast.Attribute):
                    yield target.lineno, ast.unparse(target.value), target.attr
        elif (
            isinstance(node, ast.Call)
            and getattr(node.func, "id", None) == "setattr"
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
        ):
            yield node.lineno, ast.unparse(node.args[0]), node.args[1].value


def test_the_assignment_checker_sees_every_form():
    source = "a.b_ = 1\nx.y_, *c.d_ = 1, 2\nsetattr(clf, 'net_', n)\nself.e_.f += 1\n"
    found = {(owner, name) for _, owner, name in _assigned_attributes(ast.parse(source))}
    assert found == {("a", "b_"), ("x", "y_"), ("c", "d_"), ("clf", "net_"), ("self.e_", "f")}


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_only_an_estimator_sets_its_fitted_attributes(path):
    # Fitted attributes (scikit-learn's trailing "_") are set by the estimator's own
    # methods, from what the layers below return: no recipe or driver writes them.
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for line, owner, name in _assigned_attributes(tree):
        assert owner in {"self", "cls"} or not _fitted_name(name), (
            f"{path.relative_to(PACKAGE)}:{line} sets {owner}.{name}"
        )
