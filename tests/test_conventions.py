"""The scikit-learn and skorch conventions users expect, on every classifier."""

import ast
import inspect
import re
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch
from numpydoc.docscrape import ClassDoc, NumpyDocString
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
from sklearn_lama.classification._base import BaseSequenceClassifier
from sklearn_lama.training._parameters import TRAINING_CONSTRAINTS
from tests._tolerances import Exact, U, assert_identical

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
    assert_identical(weighted.predict_proba(IDS), repeated.predict_proba(IDS), why=Exact.SAME_CALL)


def test_fit_does_not_depend_on_document_order(kind):
    order = np.random.RandomState(2).permutation(len(IDS))
    a = make_classifier(kind, max_epochs=2).fit(IDS, IDS_Y)
    b = make_classifier(kind, max_epochs=2).fit(IDS[order], IDS_Y[order])
    assert_identical(a.predict_proba(IDS), b.predict_proba(IDS), why=Exact.SAME_CALL)


def test_fractional_sample_weight_scales_the_loss(kind):
    ones = make_classifier(kind, max_epochs=2).fit(IDS, IDS_Y, sample_weight=np.ones(60))
    plain = make_classifier(kind, max_epochs=2).fit(IDS, IDS_Y)
    assert_identical(ones.predict_proba(IDS), plain.predict_proba(IDS), why=Exact.SAME_CALL)
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
    assert_identical(balanced.predict_proba(IDS), as_dict.predict_proba(IDS), why=Exact.SAME_CALL)
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
    assert_identical(clf.predict(IDS), clf.classes_[(scores > 0).astype(int)], why=Exact.SAME_CALL)
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


def _class_node(cls):
    """The ``ast.ClassDef`` of ``cls``, parsed from its source file."""
    return ast.parse(textwrap.dedent(inspect.getsource(cls))).body[0]


def _source_parameters(cls):
    """The Parameters entries of ``cls``'s docstring as its source writes it (not ``__doc__``)."""
    return NumpyDocString(ast.get_docstring(_class_node(cls)))["Parameters"]


def _shown(default):
    """The ways a numpydoc type line may show ``default``."""
    if isinstance(default, str):
        return {f'"{default}"', f'r"{default}"'}
    return {repr(default)}


@pytest.mark.parametrize("cls", PUBLIC_ESTIMATORS)
def test_the_source_docstring_documents_every_parameter(cls):
    # A reader of the class's source sees each parameter's documentation
    # there, as in scikit-learn: one numpydoc entry per parameter, in
    # signature order, with the signature's default and a description.
    signature = inspect.signature(cls).parameters
    entries = _source_parameters(cls)
    assert [entry.name for entry in entries] == list(signature)
    for entry in entries:
        default = signature[entry.name].default
        if default is not inspect.Parameter.empty:
            assert entry.type.rsplit(", default=", 1)[-1] in _shown(default), entry
        assert entry.desc, entry.name


@pytest.mark.parametrize("cls", PUBLIC_ESTIMATORS)
def test_parameter_constraints_are_a_literal_of_the_class(cls):
    # scikit-learn's idiom: a dict literal in the class body (shared parts
    # unpacked into it), naming exactly the signature's parameters.
    assigned = {
        target.id: node.value
        for node in _class_node(cls).body
        if isinstance(node, ast.Assign)
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    assert isinstance(assigned.get("_parameter_constraints"), ast.Dict)
    assert set(cls._parameter_constraints) == set(inspect.signature(cls).parameters)


def _decorators(function):
    """The source of each decorator of ``function`` (a method, read from its source)."""
    node = ast.parse(textwrap.dedent(inspect.getsource(function))).body[0]
    return [ast.unparse(decorator) for decorator in node.decorator_list]


@pytest.mark.parametrize("cls", PUBLIC_ESTIMATORS)
def test_parameters_are_validated_once_on_entering_fit(cls):
    # One validation entry, scikit-learn's: _fit_context around fit and
    # partial_fit; no method calls _validate_params itself.
    for name in ("fit", "partial_fit"):
        if hasattr(cls, name):
            (decorator,) = _decorators(getattr(cls, name))
            assert decorator.startswith("_fit_context(prefer_skip_nested_validation="), name
    # Loading a saved estimator builds it from stored parameters, outside any
    # fit: the loader validates them there.
    callers = {
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Attribute) and node.attr == "_validate_params"
    }
    assert callers <= {"utils/_persistence.py"}


# The estimators whose parameters of one name mean one thing: the classifiers'
# shared ones (those of their base class; ``hidden_size`` of LAMA and of FCSR
# are two things), and the text transformers' common ones.
FAMILIES = {
    "classifiers": (
        [LAMAClassifier, FCSRClassifier, DuoClassifier],
        set(BaseSequenceClassifier._parameter_constraints),
    ),
    "text": (
        [Word2VecVectorizer, MetaEmbeddingTransformer],
        set(Word2VecVectorizer._parameter_constraints)
        & set(MetaEmbeddingTransformer._parameter_constraints),
    ),
}
# Shared parameters whose description is worded for one estimator on purpose,
# and why; all the others of a family read the same.
OWN_WORDING = {
    "freeze_embeddings": {LAMAClassifier: 'its default, "auto", needs explaining'},
    "embedding_dropout": {
        FCSRClassifier: "its default is 0: no fine-tuned vectors to guard against",
        DuoClassifier: "it drops from each of two streams",
    },
    "optimizer": {LAMAClassifier: "its paper's optimiser is SGD, the others' Adam"},
    "weight_decay": {LAMAClassifier: "its paper's value"},
    "inference_batch_size": {
        FCSRClassifier: "its cap on a CPU prediction batch's tokens",
        DuoClassifier: "its cap on a CPU prediction batch's tokens",
    },
    "oov": {MetaEmbeddingTransformer: "each table's out-of-vocabulary row is its source's"},
    "min_count": {MetaEmbeddingTransformer: "it counts for the shared vocabulary"},
    "encoding": {MetaEmbeddingTransformer: "it reads no pretrained file itself"},
    "verbose": {MetaEmbeddingTransformer: "it reports its sources, not word2vec epochs"},
}
# The one type that differs: LAMA's freeze_embeddings also takes "auto".
OWN_TYPE = {("freeze_embeddings", LAMAClassifier)}


def _entries(cls):
    """Each parameter's type (without the default) and description (white space normalised)."""
    return {
        entry.name: (entry.type.rsplit(", default=", 1)[0], " ".join(" ".join(entry.desc).split()))
        for entry in _source_parameters(cls)
    }


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_shared_parameters_are_described_alike(family):
    # As scikit-learn's assert_docstring_consistency, but types compared
    # without the defaults, which differ between estimators.
    classes, shared = FAMILIES[family]
    entries = {cls: _entries(cls) for cls in classes}
    for name in sorted(shared):
        own = [cls for cls in OWN_WORDING.get(name, {}) if cls in classes]
        alike = {entries[cls][name][1] for cls in classes if cls not in own}
        assert len(alike) == 1, (name, alike)
        for cls in own:
            # A listed difference is still one, else the list is out of date.
            assert entries[cls][name][1] not in alike, (name, cls)
        types = {entries[cls][name][0] for cls in classes if (name, cls) not in OWN_TYPE}
        assert len(types) == 1, (name, types)


def test_the_translator_types_its_training_parameters_as_the_classifiers():
    translator, classifier = _entries(DuoTranslator), _entries(LAMAClassifier)
    for name in TRAINING_CONSTRAINTS:
        assert translator[name][0] == classifier[name][0], name


@pytest.mark.parametrize("cls", [LAMAClassifier, FCSRClassifier, DuoClassifier])
def test_the_documented_cpu_prediction_batch_is_the_one_used(cls):
    description = _entries(cls)["inference_batch_size"][1]
    assert f"at most {cls._inference_tokens:,} padded tokens" in description


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
