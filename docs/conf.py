import sys
from pathlib import Path

# Document the checkout itself, installed or not.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

project = "sklearn_lama"
extensions = ["sphinx.ext.autodoc", "sphinx.ext.autosummary", "numpydoc"]
autosummary_generate = True
numpydoc_show_class_members = False
html_theme = "alabaster"
exclude_patterns = ["_build"]
