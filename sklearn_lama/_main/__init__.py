"""The main job (``python -m sklearn_lama``) and the pipelines it compares."""

from ._cli import main

__all__ = ["main"]
