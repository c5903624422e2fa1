"""Small text-classification corpora shipped with the package.

- :func:`load_r8`: Reuters-21578 "R8" news topics (Cardoso-Cachopo's split).
- :func:`load_mr`: movie-review sentence polarity (Pang & Lee), split as in
  Text GCN (Yao et al., 2019).
- :func:`load_gettext`: English → another language message pairs read from
  the gettext catalogues installed on the machine (not shipped).
"""

from ._gettext import load_gettext
from ._loaders import load_mr, load_r8

__all__ = ["load_gettext", "load_mr", "load_r8"]
