"""The declaration of an estimator parameter: everything about it but its name, in one place.

An estimator declares each of its parameters once, as a :class:`Param`;
scikit-learn's ``_parameter_constraints``, the Parameters section of its
docstring and what identifies one of its fits (the checkpoint file name) are
derived from the declarations. Its ``__init__`` lists the names and
defaults, which scikit-learn reads from the signature; tests check that they
agree with the declarations.
"""

import dataclasses
import inspect

__all__ = ["Param"]


@dataclasses.dataclass(frozen=True)
class Param:
    """The declaration of one estimator parameter.

    Parameters
    ----------
    type : str
        The type as the docstring states it, e.g. ``"int"`` or
        ``'{"sgd", "adam"}'``.
    default : object
        The default value, as the ``__init__`` signature has it.
    constraints : list
        scikit-learn's parameter constraints (``Interval``, ``StrOptions``,
        ``"boolean"``, ...).
    description : str
        The docstring text below the parameter's line; indentation is
        normalised as :func:`inspect.cleandoc` does.
    identifies_fit : bool, default=True
        Whether the value is part of what identifies a fit for its checkpoint
        file; ``False`` for parameters that only say where a fit runs, is
        written or is reported.
    """

    type: str
    default: object
    constraints: list
    description: str
    identifies_fit: bool = True

    def but(self, **changes):
        """This declaration with the fields ``changes`` replaced."""
        return dataclasses.replace(self, **changes)

    def entry(self, name):
        """The numpydoc entry of the parameter ``name``, indented for a class docstring."""
        default = f'"{self.default}"' if isinstance(self.default, str) else repr(self.default)
        lines = inspect.cleandoc(self.description).splitlines()
        body = "\n".join(" " * 8 + line if line else "" for line in lines)
        return f"{name} : {self.type}, default={default}\n{body}"
