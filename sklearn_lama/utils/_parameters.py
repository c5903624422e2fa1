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

__all__ = ["DeclaredParameters", "Param"]


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


class DeclaredParameters:
    """Mixin of an estimator whose parameters are declared once, as :class:`Param`\\ s.

    A class that defines ``_parameters`` (name -> :class:`Param`) gets, when
    it is defined, scikit-learn's ``_parameter_constraints`` and the
    ``%(parameters)s`` field of its docstring (the entries, in the order of
    the ``__init__`` signature) from the declarations; a signature that
    names other parameters than the declarations raises ``TypeError`` then.
    Its ``__init__`` lists the names and defaults (scikit-learn reads them
    from the signature) and stores them with :meth:`_keep_arguments`.
    """

    _parameters = {}

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "_parameters" not in cls.__dict__:
            return
        names = [name for name in inspect.signature(cls.__init__).parameters if name != "self"]
        undeclared = sorted(set(names) ^ set(cls._parameters))
        if undeclared:
            raise TypeError(
                f"{cls.__name__}: the parameters of __init__ and the declarations in "
                f"_parameters differ in {undeclared}."
            )
        cls._parameter_constraints = {
            name: param.constraints for name, param in cls._parameters.items()
        }
        if cls.__doc__ is not None:
            cls.__doc__ = cls._render_docstring(cls.__doc__, names)

    @classmethod
    def _render_docstring(cls, doc, names):
        """``doc`` with ``%(parameters)s`` replaced by the entries of ``names``."""
        entries = "\n    ".join(cls._parameters[name].entry(name) for name in names)
        return doc.replace("%(parameters)s", entries)

    def _keep_arguments(self, arguments):
        """Store every ``__init__`` argument unchanged, as the attribute of its name.

        scikit-learn's convention; ``arguments`` are the ``locals()`` of the
        ``__init__``, whose signature lists the parameters.
        """
        for name in self._get_param_names():
            setattr(self, name, arguments[name])
