"""The declaration of an estimator parameter: everything about it but its name, in one place.

An estimator declares each of its parameters once: the name and default in
its ``__init__`` signature (where scikit-learn reads them; ``__init__``
stores each argument unchanged, ``self.name = name``), everything else as a
:class:`Param`. scikit-learn's ``_parameter_constraints``, the Parameters
section of its docstring and what identifies one of its fits (the checkpoint
file name) are derived from the two.
"""

import dataclasses
import inspect

__all__ = ["DeclaredParameters", "Param", "parameter_entries"]


@dataclasses.dataclass(frozen=True)
class Param:
    """The declaration of one estimator parameter.

    Parameters
    ----------
    type : str
        The type as the docstring states it, e.g. ``"int"`` or
        ``'{"sgd", "adam"}'``.
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
    constraints: list
    description: str
    identifies_fit: bool = True

    def but(self, **changes):
        """This declaration with the fields ``changes`` replaced."""
        return dataclasses.replace(self, **changes)

    def entry(self, name, default):
        """The numpydoc entry of the parameter ``name``, indented for a class docstring."""
        default = f'"{default}"' if isinstance(default, str) else repr(default)
        lines = inspect.cleandoc(self.description).splitlines()
        body = "\n".join(" " * 8 + line if line else "" for line in lines)
        return f"{name} : {self.type}, default={default}\n{body}"


class DeclaredParameters:
    """Mixin of an estimator whose parameters are declared once, as :class:`Param`\\ s.

    A class that defines ``_parameters`` (name -> :class:`Param`) gets, when
    it is defined, scikit-learn's ``_parameter_constraints`` and the
    ``%(parameters)s`` field of its docstring (the entries, in the order of
    the ``__init__`` signature, with its defaults) from the declarations; a
    signature that names other parameters than the declarations raises
    ``TypeError`` then.
    """

    _parameters = {}

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "_parameters" not in cls.__dict__:
            return
        signature = inspect.signature(cls.__init__).parameters
        defaults = {name: p.default for name, p in signature.items() if name != "self"}
        undeclared = sorted(set(defaults) ^ set(cls._parameters))
        if undeclared:
            raise TypeError(
                f"{cls.__name__}: the parameters of __init__ and the declarations in "
                f"_parameters differ in {undeclared}."
            )
        cls._parameter_constraints = {
            name: param.constraints for name, param in cls._parameters.items()
        }
        if cls.__doc__ is not None:
            cls.__doc__ = cls._render_docstring(cls.__doc__, defaults)

    @classmethod
    def _render_docstring(cls, doc, defaults):
        """``doc`` with ``%(parameters)s`` replaced by the entries of the parameters ``defaults``.

        ``defaults`` maps each parameter's name to its default, in the order
        of the signature.
        """
        return doc.replace("%(parameters)s", parameter_entries(cls._parameters, defaults))


def parameter_entries(parameters, defaults):
    """The Parameters section's entries, one per name of ``defaults``, in its order.

    Parameters
    ----------
    parameters : dict of str to Param
        The declarations.
    defaults : dict of str to object
        Each parameter's default, in the order of the ``__init__`` signature.
    """
    return "\n    ".join(
        parameters[name].entry(name, default) for name, default in defaults.items()
    )
