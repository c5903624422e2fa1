import sys
import tempfile
import zlib
from pathlib import Path

# Document the checkout itself, installed or not.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

project = "sklearn_lama"
extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.intersphinx",
    "sphinx.ext.mathjax",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
]
autosummary_generate = True
numpydoc_show_class_members = False
html_theme = "alabaster"
html_theme_options = {
    "description": "Attention-based text classifiers for scikit-learn",
    "page_width": "1180px",
    "sidebar_width": "230px",
}
exclude_patterns = ["_build"]

# --------------------------------------------------------------- results
# The Results page's tables and figures: each JSON result of the benchmark suite
# (benchmarks/results/) rendered by the part that measured it, at every build,
# into _build/results/ (ignored by git and by Sphinx's own search for pages),
# which results.rst includes; and the Benchmarks page's table of the options
# each part declares it reads.
from benchmarks._parts import options_table, write_docs  # noqa: E402

_generated = Path(__file__).resolve().parent / "_build"
write_docs(str(_generated / "results"))
(_generated / "options.rst").write_text(options_table())

# --------------------------------------------------------------- gallery
# The examples run inside this process. One torch thread: on a CPU shared with
# other jobs, several threads per small operation mostly wait on each other
# (see the Reliability page); the examples' budgets are stated for this.
import torch  # noqa: E402

torch.set_num_threads(1)

sphinx_gallery_conf = {
    "examples_dirs": "../examples",
    "gallery_dirs": "auto_examples",
    # Execute every example (they are short by design, see each one's budget).
    "filename_pattern": "/plot_",
    "abort_on_example_error": True,
    "capture_repr": ("_repr_html_", "__repr__"),
    "min_reported_time": 1,
    "remove_config_comments": True,
    "matplotlib_animations": False,
    "backreferences_dir": None,
}

# -------------------------------------------------------------- intersphinx
# The online inventories are tried first. Where they cannot be reached (CI and
# the project's machines have no network), intersphinx falls back to the small
# inventories written below, which list only the objects these pages link to
# (with the URLs of the projects' documentation); the -W build then passes and
# those links still work. Names missing from a fallback simply stay unlinked.
_OFFLINE_OBJECTS = {
    "sklearn": (
        "https://scikit-learn.org/stable/",
        [
            ("sklearn.pipeline.Pipeline", "py:class", "modules/generated/$.html#$"),
            ("sklearn.pipeline.make_pipeline", "py:function", "modules/generated/$.html#$"),
            ("sklearn.model_selection.GridSearchCV", "py:class", "modules/generated/$.html#$"),
            (
                "sklearn.model_selection.train_test_split",
                "py:function",
                "modules/generated/$.html#$",
            ),
            ("sklearn.linear_model.LogisticRegression", "py:class", "modules/generated/$.html#$"),
            (
                "sklearn.feature_extraction.text.TfidfVectorizer",
                "py:class",
                "modules/generated/$.html#$",
            ),
            ("sklearn.base.BaseEstimator", "py:class", "modules/generated/$.html#$"),
            ("sklearn.base.clone", "py:function", "modules/generated/$.html#$"),
            # Cited by the inherited ``score`` docstrings (ClassifierMixin).
            ("accuracy_score", "std:label", "modules/model_evaluation.html#accuracy-score"),
        ],
    ),
    "torch": (
        "https://docs.pytorch.org/docs/stable/",
        [
            ("torch.nn.Module", "py:class", "generated/$.html#$"),
            ("torch.Tensor", "py:class", "tensors.html#$"),
            ("torch.load", "py:function", "generated/$.html#$"),
            ("torch.set_num_threads", "py:function", "generated/$.html#$"),
        ],
    ),
    "skorch": (
        "https://skorch.readthedocs.io/en/stable/",
        [
            ("skorch.classifier.NeuralNetClassifier", "py:class", "classifier.html#$"),
            (
                "skorch.NeuralNetClassifier",
                "py:class",
                "classifier.html#skorch.classifier.NeuralNetClassifier",
            ),
            ("skorch.history.History", "py:class", "history.html#$"),
            ("skorch.callbacks.EarlyStopping", "py:class", "callbacks.html#$"),
        ],
    ),
    "gensim": (
        "https://radimrehurek.com/gensim/",
        [
            ("gensim.models.word2vec.Word2Vec", "py:class", "models/word2vec.html#$"),
            ("gensim.models.keyedvectors.KeyedVectors", "py:class", "models/keyedvectors.html#$"),
        ],
    ),
    "matplotlib": (
        "https://matplotlib.org/stable/",
        [
            ("matplotlib.axes.Axes", "py:class", "api/_as_gen/$.html#$"),
        ],
    ),
    "pandas": (
        "https://pandas.pydata.org/docs/",
        [
            ("pandas.DataFrame", "py:class", "reference/api/$.html#$"),
        ],
    ),
}


def _write_inventory(path, project, objects):
    lines = "".join(f"{name} {role} 1 {uri.replace('$', name)} -\n" for name, role, uri in objects)
    header = (
        f"# Sphinx inventory version 2\n# Project: {project}\n# Version: \n"
        "# The remainder of this file is compressed using zlib.\n"
    )
    path.write_bytes(header.encode() + zlib.compress(lines.encode()))


_inventories = Path(tempfile.mkdtemp(prefix="sklearn_lama_inventories_"))
intersphinx_mapping = {}
for _name, (_url, _objects) in _OFFLINE_OBJECTS.items():
    _write_inventory(_inventories / f"{_name}.inv", _name, _objects)
    intersphinx_mapping[_name] = (_url, (None, str(_inventories / f"{_name}.inv")))
intersphinx_timeout = 5
