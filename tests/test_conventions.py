"""The scikit-learn and skorch conventions users expect, on every classifier."""

import ast
import inspect
import re
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch
from numpydoc.docscrape import ClassDoc
from skorch.callbacks import Callback, GradientNormClipping

import sklearn_lama
from sklearn_lama import (
    DuoClassifier,
    DuoTranslator,
    FCSRClassifier,
    LAMAClassifier,
    MetaEmbeddingTransformer,
    Word2VecVectorizer,
)
from tests._tolerances import U

from .conftest import make_classifier

PACKAGE = Path(sklearn_lama.__file__).parent
IDS = np.random.RandomState(0).randint(1, 12, size=(60, 6))
IDS_Y = (IDS[:, 0] > 6).astype(int)


class _EpochCounter(Callback):
    def initialize(self):
        self.epochs = 0
        return self

    def on_epoch_end(self, net, **kwargs):
        self.epochs += 1


def test_callbacks_pass_through_to_skorch(kind):
    counter = _EpochCounter()
    clf = make_classifier(
        kind,
        max_epochs=3,
        early_stopping=False,
        callbacks=[("count", counter), GradientNormClipping(1.0)],
    )
    clf.fit(IDS, IDS_Y)
    names = dict(clf.net_.callbacks_)
    assert names["count"].epochs == 3
    assert any(isinstance(cb, GradientNormClipping) for cb in names.values())
    # The estimator's parameter is left as the user gave it (skorch works on clones).
    assert clf.callbacks[0][1] is counter


def test_integer_sample_weight_is_repeating_documents(kind):
    weights = np.random.RandomState(1).randint(0, 4, size=len(IDS))
    weighted = make_classifier(kind, max_epochs=3).fit(IDS, IDS_Y, sample_weight=weights)
    repeated = make_classifier(kind, max_epochs=3).fit(
        np.repeat(IDS, weights, axis=0), np.repeat(IDS_Y, weights)
    )
    np.testing.assert_array_equal(weighted.predict_proba(IDS), repeated.predict_proba(IDS))


def test_fit_does_not_depend_on_document_order(kind):
    order = np.random.RandomState(2).permutation(len(IDS))
    a = make_classifier(kind, max_epochs=2).fit(IDS, IDS_Y)
    b = make_classifier(kind, max_epochs=2).fit(IDS[order], IDS_Y[order])
    np.testing.assert_array_equal(a.predict_proba(IDS), b.predict_proba(IDS))


def test_fractional_sample_weight_scales_the_loss(kind):
    ones = make_classifier(kind, max_epochs=2).fit(IDS, IDS_Y, sample_weight=np.ones(60))
    plain = make_classifier(kind, max_epochs=2).fit(IDS, IDS_Y)
    np.testing.assert_array_equal(ones.predict_proba(IDS), plain.predict_proba(IDS))
    # Adam does not see a common factor; down-weighting one class shows.
    down = np.where(IDS_Y == 0, 0.25, 1.0)
    shifted = make_classifier(kind, max_epochs=2).fit(IDS, IDS_Y, sample_weight=down)
    assert shifted.predict_proba(IDS)[:, 1].mean() > plain.predict_proba(IDS)[:, 1].mean()
    with pytest.raises(ValueError, match="(?i)negative"):
        make_classifier(kind).fit(IDS, IDS_Y, sample_weight=-np.ones(60))
    with pytest.raises(ValueError, match="non-zero"):
        make_classifier(kind).fit(IDS, IDS_Y, sample_weight=np.zeros(60))


def test_class_weight(kind):
    y = np.where(np.arange(60) < 50, 0, 1)  # 50 / 10
    balanced = make_classifier(
        kind, max_epochs=3, early_stopping=False, class_weight="balanced"
    ).fit(IDS, y)
    as_dict = make_classifier(
        kind, max_epochs=3, early_stopping=False, class_weight={0: 60 / 100, 1: 60 / 20}
    ).fit(IDS, y)
    # "balanced" is 60 / (2 * 50) and 60 / (2 * 10), the same floats: the same fit, bit for bit.
    np.testing.assert_array_equal(balanced.predict_proba(IDS), as_dict.predict_proba(IDS))
    plain = make_classifier(kind, max_epochs=3, early_stopping=False).fit(IDS, y)
    # Up-weighting the rare class raises its predicted probability.
    assert balanced.predict_proba(IDS)[:, 1].mean() > plain.predict_proba(IDS)[:, 1].mean()
    with pytest.raises(ValueError, match="class_weight names labels"):
        make_classifier(kind, class_weight={7: 2.0}).fit(IDS, y)


def test_decision_function_is_the_logits(kind):
    clf = make_classifier(kind, max_epochs=2).fit(IDS, IDS_Y)
    scores = clf.decision_function(IDS)
    assert scores.shape == (60,)
    proba = clf.predict_proba(IDS)
    # Each float32 probability is within (|z - max z| + 4) u of exact (the
    # subtraction rounds, exp to an ulp, the sum and the division round):
    # the log-ratio within twice that, the logit difference within u of itself.
    atol = 2 * (np.abs(scores).max() + 4) * U
    np.testing.assert_allclose(scores, np.log(proba[:, 1] / proba[:, 0]), rtol=U, atol=atol)
    np.testing.assert_array_equal(clf.predict(IDS), clf.classes_[(scores > 0).astype(int)])
    three = make_classifier(kind, max_epochs=2).fit(IDS, IDS[:, 0] % 3)
    logits = three.decision_function(IDS)
    assert logits.shape == (60, 3)
    # As above, against a float64 softmax: the float32 one within (|z - max z| + 4) u.
    rtol = (np.abs(logits - logits.max(1, keepdims=True)).max() + 4) * U
    np.testing.assert_allclose(
        torch.softmax(torch.from_numpy(logits), 1).numpy(), three.predict_proba(IDS), rtol=rtol
    )


def test_device_accepts_torch_devices(kind):
    clf = make_classifier(kind, max_epochs=1, device=torch.device("cpu")).fit(IDS, IDS_Y)
    assert str(clf.net_.device) == "cpu"
    if not torch.backends.mps.is_available():
        with pytest.raises(ValueError, match="MPS is not available"):
            make_classifier(kind, device="mps").fit(IDS, IDS_Y)


def test_fitted_attributes_end_with_an_underscore_and_are_documented(kind):
    clf = make_classifier(kind, max_epochs=1).fit(IDS, IDS_Y)
    fitted = {name for name in vars(clf) if name not in clf.get_params()}
    assert all(name.endswith("_") and not name.startswith("_") for name in fitted), fitted
    documented = {a.name for a in ClassDoc(type(clf))["Attributes"]}
    assert fitted <= documented, fitted - documented


@pytest.mark.parametrize("cls", [LAMAClassifier, FCSRClassifier, DuoClassifier, DuoTranslator])
def test_every_parameter_is_documented(cls):
    documented = {name.strip() for p in ClassDoc(cls)["Parameters"] for name in p.name.split(",")}
    parameters = set(inspect.signature(cls).parameters)
    assert parameters <= documented, parameters - documented
    unfilled = re.findall(r"%\((parameters|fitted_attributes|shared_references)\)s", cls.__doc__)
    assert "As in" not in cls.__doc__ and not unfilled


@pytest.mark.parametrize("cls", [LAMAClassifier, FCSRClassifier, DuoClassifier, DuoTranslator])
def test_parameters_are_declared_once_and_agree_with_the_signature(cls):
    signature = inspect.signature(cls).parameters
    assert set(signature) == set(cls._parameters)
    assert not any(hasattr(declared, "default") for declared in cls._parameters.values())
    assert cls._parameter_constraints == {
        name: declared.constraints for name, declared in cls._parameters.items()
    }
    # The docstring documents each parameter from its declaration, in signature
    # order, with the signature's default.
    documented = ClassDoc(cls)["Parameters"]
    assert [entry.name for entry in documented] == list(signature)
    for entry in documented:
        declared = cls._parameters[entry.name]
        default = signature[entry.name].default
        shown = f'"{default}"' if isinstance(default, str) else repr(default)
        assert entry.type == f"{declared.type}, default={shown}"
        assert " ".join(entry.desc).split() == inspect.cleandoc(declared.description).split()


PUBLIC_ESTIMATORS = [
    LAMAClassifier,
    FCSRClassifier,
    DuoClassifier,
    DuoTranslator,
    Word2VecVectorizer,
    MetaEmbeddingTransformer,
]


@pytest.mark.parametrize("cls", PUBLIC_ESTIMATORS)
def test_every_constructor_stores_its_arguments_as_scikit_learn_does(cls):
    # One idiom across the package: ``self.name = name`` for each argument, in
    # signature order, and nothing else.
    init = ast.parse(textwrap.dedent(inspect.getsource(cls.__init__))).body[0]
    body = [node for node in init.body if not isinstance(node, ast.Expr)]  # docstring
    stored = [
        (node.targets[0].value.id, node.targets[0].attr, node.value.id)
        for node in body
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name)
    ]
    names = list(inspect.signature(cls).parameters)
    assert len(body) == len(names)
    assert stored == [("self", name, name) for name in names]


def _imports(path):
    """The package modules that the module at ``path`` imports at module level."""
    module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if path.name == "__init__.py":
        module = module.rsplit(".", 1)[0]
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    found = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
            target = f"{base}.{node.module}" if node.module else base
            found.add(target)
            for alias in node.names:
                if f"{target}.{alias.name}".replace(".", "/") in _MODULE_PATHS:
                    found.add(f"{target}.{alias.name}")
    return module, found


_MODULE_PATHS = {
    str(p.relative_to(PACKAGE.parent).with_suffix("")).removesuffix("/__init__")
    for p in PACKAGE.rglob("*.py")
}


def test_no_import_cycle_between_the_package_modules():
    graph = dict(_imports(p) for p in PACKAGE.rglob("*.py"))
    # A package imports its submodules; only edges between distinct modules
    # that do not run through a package's __init__ count.
    graph = {
        m: {t for t in ts if t in graph and not m.startswith(t + ".")} for m, ts in graph.items()
    }
    state = {}

    def visit(node, stack):
        state[node] = "open"
        for target in graph[node]:
            if state.get(target) == "open":
                cycle = stack[stack.index(target) :] + [target]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if target not in state:
                visit(target, stack + [target])
        state[node] = "done"

    for node in graph:
        if node not in state:
            visit(node, [node])


def test_version_has_a_module_of_its_own():
    text = (PACKAGE / "_version.py").read_text()
    assert re.search(r'__version__ = "[0-9.]+"', text)
    assert sklearn_lama.__version__ in text
