"""Parameters whose default depends on the word vectors a classifier reads.

A classifier declares, for some parameters, one value for word vectors
trained on the corpus and one for pretrained vectors (chosen by
cross-validation for each, see the results page); the parameter's default is
then ``"auto"``. ``fit`` learns from ``X`` whether any of its tables is
pretrained (:attr:`~sklearn_lama.TokenSequences.pretrained`, which the
vectorizers set), the input adapter keeps it, and :func:`setting` gives the
value in use.
"""

import textwrap

from ..utils._sklearn_compat import StrOptions

__all__ = ["AUTO", "VectorDefault", "auto_parameters", "setting"]

AUTO = "auto"


class VectorDefault:
    """The values of one ``"auto"`` parameter for each kind of word vectors.

    Parameters
    ----------
    corpus : object
        The value for vectors trained on the corpus, and for inputs without
        embedding tables (token ids, vectors given directly).
    pretrained : object
        The value when any embedding table of ``X`` holds pretrained vectors.
    """

    def __init__(self, corpus, pretrained):
        self.corpus = corpus
        self.pretrained = pretrained

    def resolve(self, pretrained):
        """The value for an input whose tables are pretrained (``pretrained``) or not."""
        return self.pretrained if pretrained else self.corpus

    def changes(self, param):
        """The fields of ``param``'s declaration that ``"auto"`` changes, for ``Param.but``.

        ``param`` is a :class:`~sklearn_lama.utils._parameters.Param`; its
        type, constraints and description gain the ``"auto"`` value and what
        it resolves to.
        """
        return {
            "type": f'{param.type} or "auto"',
            "constraints": [*param.constraints, StrOptions({AUTO})],
            "description": param.description.rstrip()
            + "\n\n"
            + textwrap.fill(
                f'``"auto"``: ``{self.corpus!r}`` on word vectors trained on the corpus (and '
                f"on inputs without embedding tables), ``{self.pretrained!r}`` when any table "
                "of ``X`` is pretrained (``TokenSequences.pretrained``, e.g. from "
                "``Word2VecVectorizer(pretrained=...)``): what cross-validation on the "
                "training splits chose for each (the results page).",
                width=72,
            ),
        }


def auto_parameters(vector_defaults, shared):
    """``shared_parameters`` changes that make each parameter of ``vector_defaults`` ``"auto"``.

    ``shared`` maps parameter names to their shared declarations.
    """
    return {name: default.changes(shared[name]) for name, default in vector_defaults.items()}


def setting(estimator, name):
    """The value of parameter ``name`` that ``estimator``'s fit uses.

    ``"auto"`` is resolved by the classifier's ``_vector_defaults[name]`` and
    what its fitted input adapter says of the tables' vectors.
    """
    value = getattr(estimator, name)
    if isinstance(value, str) and value == AUTO:
        return type(estimator)._vector_defaults[name].resolve(estimator.input_adapter_.pretrained)
    return value
