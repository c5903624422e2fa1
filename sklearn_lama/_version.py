"""The package version, in a module of its own so that setup.py can read it."""

__version__ = "0.11.0"
