"""Helpers every layer shares: scikit-learn compatibility, torch threads, weights files.

Nothing here imports another part of the package; the public names
(:func:`~sklearn_lama.save_weights`, :func:`~sklearn_lama.load_weights`) are
exported at the top level.
"""
