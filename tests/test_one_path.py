"""One computational path per model: no ATen internals, no reads of another class's privates.

Nor of another library's: the package uses the public API of torch, skorch,
scikit-learn and the others, except where :data:`ALLOWED` says why it cannot.
"""

import ast
import importlib
from functools import cache
from pathlib import Path

import pytest
import torch

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
OURS = PACKAGE.name

# What the package uses of other libraries outside their public API, by (file, name):
# why. A name is a private member (``_name``: a module, a class, a function, an
# attribute or a method, read, called, imported or overridden) or an undocumented
# ATen operator (``torch.<op>``, see _undocumented_aten). An entry the file no
# longer uses fails the test, so that the list stays what the package relies on.
ALLOWED = {
    ("utils/_sklearn_compat.py", "_param_validation"): (
        "scikit-learn's parameter constraints (Interval, StrOptions, validate_params): the "
        "estimators declare _parameter_constraints as scikit-learn's own do; imported in this "
        "one module, whose docstring states the supported range of releases"
    ),
    ("utils/_sklearn_compat.py", "_fit_context"): (
        "the decorator of scikit-learn's own fit methods: it validates the parameters once "
        "and skips the nested validation of the estimators a fit clones"
    ),
    ("utils/_sklearn_compat.py", "_BaseComposition"): (
        "the base of scikit-learn's meta-estimators: the <name>__<parameter> parameters of "
        "MetaEmbeddingTransformer's sources, as FeatureUnion's"
    ),
    ("utils/_sklearn_compat.py", "_check_sample_weight"): (
        "scikit-learn's validation of sample_weight (shape, dtype, finite, non-negative), "
        "with its messages"
    ),
    ("text/_meta_embedding.py", "_get_params"): (
        "_BaseComposition's get_params over the named sources (with deep=True, theirs)"
    ),
    ("text/_meta_embedding.py", "_set_params"): (
        "_BaseComposition's set_params: replaces a source or sets <name>__<parameter>"
    ),
    ("text/_meta_embedding.py", "_validate_names"): (
        "_BaseComposition's check of the sources' names (unique, no '__', not a parameter's)"
    ),
    ("utils/_persistence.py", "_validate_params"): (
        "a loaded estimator's parameters are checked against its _parameter_constraints "
        "before its state is restored, the check _fit_context makes before a fit; "
        "scikit-learn has no public method that validates without fitting"
    ),
    ("training/_distributed.py", "_exit"): (
        "os._exit, Python's documented way to end a forked child without running the "
        "exit handlers it inherited from the caller (a test runner, a notebook)"
    ),
    ("modules/_network.py", "_load_from_state_dict"): (
        "torch.nn.Module's per-module loading, overridden to size NgramFeatures' n-gram "
        "buffers to the saved ones before they are copied; torch 2.4, the floor, has no "
        "public pre-hook (register_load_state_dict_pre_hook came later)"
    ),
    ("modules/_lama.py", "torch.gru"): (
        "the recurrence nn.GRU runs (cuDNN on CUDA, aten::gru in ONNX), on weights assembled "
        "at every call from the two directions' nn.GRU parameters (one fused GRU of width "
        "2h), which nn.GRU cannot take as arguments; the two modules called one after the "
        "other cost 1.2 times the fused step (docs/architecture.rst, Decisions)"
    ),
    ("translation/_decoding.py", "torch.log_softmax"): (
        "ATen's log_softmax, the kernel torch.nn.functional.log_softmax runs: to be spelled "
        "F.log_softmax (the same values) in the decoding module, edited elsewhere meanwhile"
    ),
}


@cache
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
        attribute = _named_attribute(node)
        if attribute is None:
            continue
        value, name = attribute
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


def _private(name):
    return name.startswith("_") and not name.startswith("__") and name != "_"


def _own_names(trees):
    """The private names the package defines: functions, classes, variables, own attributes."""
    names = set()
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, ast.arg):
                names.add(node.arg)
            elif (
                isinstance(node, ast.Attribute)
                and isinstance(node.ctx, ast.Store)
                and isinstance(node.value, ast.Name)
                and node.value.id in ("self", "cls")
            ):
                names.add(node.attr)
            elif isinstance(node, ast.ImportFrom) and node.level:
                names.update(alias.asname or alias.name for alias in node.names)
    return {name for name in names if _private(name)}


def _imports(tree):
    """The names ``tree`` binds to other libraries' modules and objects: their dotted paths."""
    bound = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                path = alias.name if alias.asname else alias.name.split(".")[0]
                bound[alias.asname or path] = path
        elif isinstance(node, ast.ImportFrom) and not node.level:
            for alias in node.names:
                bound[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return {name: path for name, path in bound.items() if path.split(".")[0] != OURS}


def _named_attribute(node):
    """``(object, name)`` of ``x.name`` and of ``getattr(x, "name")`` (has-, set-), or None."""
    if isinstance(node, ast.Attribute):
        return node.value, node.attr
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("getattr", "setattr", "hasattr")
        and len(node.args) >= 2
        and isinstance(node.args[1], ast.Constant)
        and isinstance(node.args[1].value, str)
    ):
        return node.args[0], node.args[1].value
    return None


def _dotted(node, imports):
    """The dotted path of ``node`` when it reaches into an imported library, else None."""
    names = []
    while (attribute := _named_attribute(node)) is not None:
        node, name = attribute
        names.append(name)
    if isinstance(node, ast.Name) and node.id in imports:
        return ".".join([imports[node.id], *reversed(names)])
    return None


def _resolve(path):
    """The object at the dotted ``path`` (importing its modules), or None."""
    names = path.split(".")
    found = importlib.import_module(names[0])
    for i, name in enumerate(names[1:], 2):
        try:
            found = getattr(found, name)
        except AttributeError:
            try:
                found = importlib.import_module(".".join(names[:i]))
            except ImportError:
                return None
    return found


def _undocumented_aten(tree):
    """``(line, name)`` of each use of an ATen operator outside torch's documented API.

    torch makes every ATen operator a function of its own
    (``torch._C._VariableFunctions``); those it documents carry their
    documentation (torch/_torch_docs.py), the others have none: ``torch.gru``,
    ``torch.lstm``, ``torch.embedding``, ``torch.layer_norm``, the in-place
    ``torch.relu_`` ... are the internals behind its modules and functions, with
    arguments that change between releases. ``torch.ops`` (``torch.ops.aten.*``)
    is the dispatcher's namespace of operators. Found however they are spelled:
    ``torch.op``, ``from torch import op``, ``getattr(torch, "op")``, ``torch._VF.op``.
    """
    imports = _imports(tree)
    aten = torch._C._VariableFunctions
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and not node.level:
            paths = [f"{node.module}.{alias.name}" for alias in node.names]
        else:
            paths = [_dotted(node, imports)] if _named_attribute(node) else []
        for path in paths:
            if path is None or not path.startswith("torch."):
                continue
            if path == "torch.ops" or path.startswith("torch.ops."):
                yield node.lineno, "torch.ops"
                continue
            found = _resolve(path)
            name = getattr(found, "__name__", None)
            if isinstance(name, str) and getattr(aten, name, None) is found and not found.__doc__:
                yield node.lineno, path


def _other_library(module):
    return module.split(".")[0] != OURS


def _privates_of_other_libraries(tree, namespace, own):
    """``(line, name, what)`` of each private member of another library that ``tree`` uses.

    - an import of a private module or name of another library
      (``from sklearn.utils._param_validation import ...``);
    - ``x._name`` (or ``getattr(x, "_name")``) where ``x`` is another library's
      module or object (``torch._C``), or where ``_name`` is none of the package's
      ``own`` names (``estimator._validate_params()``);
    - in a class of the module (``namespace``: its globals, None to skip), a
      ``self._name``, ``cls._name`` or ``super()._name`` that its bases of another
      library define (``self._use_notebook()`` of skorch's ProgressBar), and a
      private method or attribute that overrides one of theirs
      (``_get_param_names``).
    """
    imports = _imports(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if _other_library(alias.name):
                    for name in filter(_private, alias.name.split(".")):
                        yield node.lineno, name, f"import {alias.name}"
        elif isinstance(node, ast.ImportFrom):
            if node.level or not _other_library(node.module):
                continue
            for name in filter(_private, node.module.split(".")):
                yield node.lineno, name, f"from {node.module} import"
            for alias in node.names:
                if _private(alias.name):
                    yield node.lineno, alias.name, f"from {node.module} import {alias.name}"
        elif (attribute := _named_attribute(node)) is not None:
            value, name = attribute
            if _private(name) and (_dotted(value, imports) is not None or name not in own):
                yield node.lineno, name, ast.unparse(node)
    if namespace is None:
        return
    for definition in tree.body:
        cls = namespace.get(definition.name) if isinstance(definition, ast.ClassDef) else None
        if not isinstance(cls, type) or cls.__qualname__ != definition.name:
            continue
        for node in definition.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                names = [node.name]
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names = [target.id for target in targets if isinstance(target, ast.Name)]
            else:
                continue
            for name in filter(_private, names):
                for base in cls.__mro__[1:]:
                    if name in vars(base) and _other_library(base.__module__):
                        yield node.lineno, name, f"overrides {base.__qualname__}.{name}"
                        break
        for node in ast.walk(definition):
            if not isinstance(node, ast.Attribute) or not _private(node.attr):
                continue
            value = node.value
            if not (
                (isinstance(value, ast.Name) and value.id in ("self", "cls"))
                or (
                    isinstance(value, ast.Call)
                    and isinstance(value.func, ast.Name)
                    and value.func.id == "super"
                )
            ):
                continue
            owner = next((c for c in cls.__mro__ if node.attr in vars(c)), None)
            if owner is not None and _other_library(owner.__module__):
                yield node.lineno, node.attr, f"{ast.unparse(node)} of {owner.__qualname__}"


def _module_namespace(path):
    """The globals of the module at ``path``; None for ``__main__``, which runs the demo."""
    if path.name == "__main__.py":
        return None
    names = path.relative_to(PACKAGE.parent).with_suffix("").parts
    module = ".".join(names[:-1] if names[-1] == "__init__" else names)
    return vars(importlib.import_module(module))


@cache
def _uses_of_other_libraries():
    """``{(file, name): [where, ...]}`` of the private members and undocumented ATen operators."""
    own = _own_names([_tree(path) for path in SOURCES])
    found = {}
    for path in SOURCES:
        tree, file = _tree(path), str(path.relative_to(PACKAGE).as_posix())
        uses = {
            (line, name, what)
            for line, name, what in _privates_of_other_libraries(
                tree, _module_namespace(path), own
            )
        }
        uses |= {(line, name, name) for line, name in _undocumented_aten(tree)}
        for line, name, what in sorted(uses):
            found.setdefault((file, name), []).append(f"{file}:{line}: {what}")
    return found


def _snippet_uses(source):
    """What the checkers find in the module ``source``, run as a module of the package."""
    tree = ast.parse(source)
    namespace = {"__name__": f"{OURS}._snippet"}
    exec(compile(tree, "<snippet>", "exec"), namespace)
    privates = _privates_of_other_libraries(tree, namespace, _own_names([tree]))
    return {(line, name) for line, name, _ in privates}, set(_undocumented_aten(tree))


SNIPPET = """\
import torch
import torch.nn.functional as F
from skorch.callbacks import Callback, ProgressBar
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import _check_sample_weight
from torch import lstm, nn


def _use_notebook():  # a name of the package's own too
    return False


class Bar(ProgressBar):
    def _get_param_names(self):
        return []

    def on_batch_end(self, net, **kwargs):
        self._use_notebook(), self._get_postfix_dict(net), super()._get_batch_size(net, True)


class Recurrent(nn.Module):
    def forward(self, x, h, weights, network):
        torch._C._log_api_usage_once("snippet"), network._values(), _use_notebook()
        y = torch.gru(x, h, weights, True, 1, 0.0, False, False, True)[0]
        z = getattr(torch, "embedding")(weights[0], x) + torch.ops.aten.relu(x)
        return F.log_softmax(y, -1), torch.softmax(z, -1), torch.cat([x]), torch.log(x)


class Plain(Callback):
    def get_params(self, deep=True):
        return {}
"""


def test_the_checkers_see_private_members_and_undocumented_operators():
    privates, aten = _snippet_uses(SNIPPET)
    assert privates == {
        (4, "_param_validation"),
        (5, "_check_sample_weight"),
        (14, "_get_param_names"),
        (18, "_use_notebook"),
        (18, "_get_postfix_dict"),
        (18, "_get_batch_size"),
        (23, "_C"),
        (23, "_log_api_usage_once"),
        (23, "_values"),
    }
    assert aten == {
        (6, "torch.lstm"),
        (24, "torch.gru"),
        (25, "torch.embedding"),
        (25, "torch.ops"),
    }


def test_no_undocumented_aten_operator():
    # Models are written with torch's public API: its functions, modules and autograd.
    found = _uses_of_other_libraries()
    used = {key: where for key, where in found.items() if key[1].startswith("torch.")}
    allowed = {key for key in ALLOWED if key[1].startswith("torch.")}
    assert [w for key, where in used.items() if key not in allowed for w in where] == []
    assert sorted(allowed - set(used)) == [], "allowed, but no longer used"


def test_no_private_member_of_another_library_outside_the_allowed():
    found = _uses_of_other_libraries()
    used = {key: where for key, where in found.items() if not key[1].startswith("torch.")}
    allowed = {key for key in ALLOWED if not key[1].startswith("torch.")}
    assert [w for key, where in used.items() if key not in allowed for w in where] == []
    assert sorted(allowed - set(used)) == [], "allowed, but no longer used"


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


def test_no_file_reads_the_private_members_of_the_modules_classes():
    # A core or the network changes its inner workings without breaking a reader elsewhere:
    # nothing outside a file of sklearn_lama/modules reads its classes' underscore members
    # (Duo's folded head reads the public SequenceNetwork.token_inputs() and
    # NgramFeatures.inference_features()).
    found = []
    reads = {path: list(_private_reads(_tree(path))) for path in SOURCES}
    for owner in sorted((PACKAGE / "modules").glob("*.py")):
        private = _private_members(owner)
        for path in SOURCES:
            if path == owner:
                continue
            for line, name, expression in reads[path]:
                if name in private:
                    found.append(f"{path.relative_to(PACKAGE)}:{line}: {expression}")
    assert found == []


@pytest.mark.parametrize("path", MODEL_FILES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_model_files_read_no_private_member_of_another_object(path):
    found = [f"{line}: {expression}" for line, _, expression in _private_reads(_tree(path))]
    assert found == []
