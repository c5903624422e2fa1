"""Which words a fitted model looked at and which ones its predictions rest on.

Attention weights, attributions (integrated gradients, occlusion) and the
deletion test of their faithfulness, as arrays, tables, plots and notebook
highlights.

Every function takes a fitted :class:`~sklearn.pipeline.Pipeline` whose last
step is one of this package's classifiers and whose earlier steps turn raw
text into :class:`~sklearn_lama.TokenSequences` (a
:class:`~sklearn_lama.Word2VecVectorizer` or a
:class:`~sklearn_lama.MetaEmbeddingTransformer`). The plots need matplotlib
(``pip install "sklearn-lama[plot]"``); the tables and the HTML highlights do
not.

With side features (a ColumnTransformer holding the text step beside tabular
columns' encoders), the explanations of the text take the pipeline and its
DataFrame alike, and :func:`side_contributions` splits the side features'
term of the logits by feature.
"""

from ._attributions import token_attributions
from ._explain import Explanation, explain
from ._faithfulness import deletion_curve
from ._methods import Attention, IntegratedGradients, Occlusion, TokenExplainer
from ._plotting import plot_attention, plot_training_curves
from ._side import SideContributions, side_contributions
from ._top_words import top_attended_words

__all__ = [
    "Attention",
    "Explanation",
    "IntegratedGradients",
    "Occlusion",
    "SideContributions",
    "TokenExplainer",
    "deletion_curve",
    "explain",
    "plot_attention",
    "plot_training_curves",
    "side_contributions",
    "token_attributions",
    "top_attended_words",
]
