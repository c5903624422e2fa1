"""MetaEmbeddingTransformer: several embeddings of the same words over one vocabulary."""

import time
from collections import Counter
from itertools import chain
from numbers import Integral

import numpy as np
from joblib import Parallel, delayed
from sklearn.base import TransformerMixin, clone

from ..utils._compatibility import migration
from ..utils._persistence import register
from ..utils._shards import group_size
from ..utils._sklearn_compat import _BaseComposition, _fit_context
from ..utils._state import PortableState
from ._sequences import N_RESERVED, OOV_ID
from ._text import build_list_analyzer, iter_token_lists
from ._vectorizer import TOKENIZATION_CONSTRAINTS, DocumentEncoderMixin, progress_sink

__all__ = ["MetaEmbeddingTransformer"]


def _fit_timed(source, documents):
    """A fitted clone of ``source`` and the seconds its fit took."""
    start = time.perf_counter()
    fitted = clone(source).fit(documents)
    return fitted, time.perf_counter() - start


@register
class MetaEmbeddingTransformer(
    PortableState,
    DocumentEncoderMixin,
    TransformerMixin,
    _BaseComposition,
    auto_wrap_output_keys=None,
):
    """Several word embeddings of one corpus, aligned on one shared vocabulary.

    Each source (typically a :class:`Word2VecVectorizer` with its own settings,
    or one loading a pretrained file) is fitted on the corpus; the output
    :class:`TokenSequences` carries one embedding table per source, all indexed
    by the same token ids. This is the input of
    :class:`~sklearn_lama.DuoClassifier`, whose two attention roles read the
    first two tables (the Duo paper's embedding "couples").

    Sources are given as ``(name, transformer)`` pairs, as in
    :class:`~sklearn.pipeline.FeatureUnion`, so their parameters are tunable as
    ``<step>__<name>__<parameter>``, e.g. ``emb__cbow__vector_size``.

    The shared vocabulary is built by this transformer's own tokenisation
    (``strip_accents``, ``lowercase``, ``preprocessor``, ``token_pattern``,
    ``tokenizer``, ``stop_words``) and ``min_count``. A word a source has no
    vector for (rarer than that source's ``min_count``, or absent from its
    pretrained file with ``oov_vectors="drop"``) gets a **zero row** in that
    source's table: it contributes nothing through that embedding until
    fine-tuning moves it. The out-of-vocabulary row of each table is the
    source's own (zero unless the source has ``oov="token"``).
    ``coverage_`` reports the share of the vocabulary each source covers.

    Parameters
    ----------
    sources : list of (str, transformer) tuples
        Embedding sources. Each must expose ``vocabulary_`` (word → row) and
        ``embedding_`` (the table) after ``fit``, as
        :class:`Word2VecVectorizer` does.
    strip_accents : {"ascii", "unicode"} or callable, default=None
        Remove accents and perform other character normalisation before
        tokenising, as in
        :class:`~sklearn.feature_extraction.text.CountVectorizer`: ``"ascii"``
        is fast but only for characters with a direct ASCII mapping,
        ``"unicode"`` works on any character, ``None`` does nothing.
    lowercase : bool, default=True
        Convert documents to lower case before tokenising.
    preprocessor : callable, default=None
        Overrides the preprocessing stage (``strip_accents`` and
        ``lowercase``) while keeping tokenisation, as in ``CountVectorizer``:
        a function from a document to a document.
    token_pattern : str, default=r"(?u)\\b\\w+\\b|[^\\w\\s]"
        Regular expression that finds tokens (as in
        :class:`~sklearn.feature_extraction.text.CountVectorizer`). The default
        keeps words of any length and single punctuation marks, which carry
        sentiment ("!", "?").
    tokenizer : callable, default=None
        Overrides ``token_pattern``: a function from a document to its tokens.
    stop_words : {"english"}, list, default=None
        Words removed after tokenising, as in ``CountVectorizer``:
        ``"english"`` is scikit-learn's built-in list (see its known issues),
        a list is used as given (after no preprocessing: give them in the form
        the tokens take), ``None`` keeps every word. Tokens keep their document
        order.
    max_len : int, default=None
        Keep only the first ``max_len`` tokens of each document (after removing
        discarded words). ``None`` keeps everything.
    oov : {"discard", "token"}, default="token"
        What happens to words outside the shared vocabulary: ``"token"`` maps
        them to the reserved out-of-vocabulary id 1, ``"discard"`` drops them.
        The OOV row of each table is its source's own.
    min_count : int, default=2
        Words seen fewer times are left out of the shared vocabulary.
    encoding : str, default="utf-8"
        Used to decode ``bytes`` documents.
    n_jobs : int, default=None
        Sources fitted at once, each in a thread of this process (word2vec's
        training releases the GIL). ``None`` fits them one after another, as
        ``n_jobs=None`` does in scikit-learn; ``-1`` one thread per source on
        every core. Each source's vectors are the same either way: a
        word2vec source with ``workers=1`` and ``random_state`` set trains
        alone in its thread.
    verbose : int, default=0
        Above 0, ``fit`` prints to standard output the size of the shared
        vocabulary and, for each source, the time its fit took and its
        coverage. A source reports its own progress with its own ``verbose``
        (``<name>__verbose``).

    Attributes
    ----------
    vocabulary_ : dict
        Shared vocabulary, word → id (ids start at 2).
    embeddings_ : tuple of ndarray of shape (n_words + 2, d_i)
        One table per source, in the order of ``sources``.
    coverage_ : dict
        Source name → fraction of ``vocabulary_`` it has a vector for.
    pretrained_ : tuple of bool
        For each source, whether its vectors are pretrained (its
        ``pretrained_origin_`` is set), as every transformed output says.
    vocabulary_id_ : str
        Fingerprint of the vocabulary, carried by every transformed output.

    Examples
    --------
    >>> from sklearn_lama import MetaEmbeddingTransformer, Word2VecVectorizer
    >>> docs = ["the cat sat on the mat", "the dog sat on the log"] * 5
    >>> meta = MetaEmbeddingTransformer([
    ...     ("cbow", Word2VecVectorizer(pretrained=None, vector_size=4, sg=0, random_state=0)),
    ...     ("skipgram", Word2VecVectorizer(pretrained=None, vector_size=6, sg=1, random_state=0)),
    ... ]).fit(docs)
    >>> [t.shape for t in meta.transform(docs[:1]).tables]
    [(9, 4), (9, 6)]
    >>> meta.set_params(cbow__vector_size=8).get_params()["cbow__vector_size"]
    8
    """

    _parameter_constraints = {
        "sources": [list],
        **TOKENIZATION_CONSTRAINTS,
        "n_jobs": [Integral, None],
        "verbose": ["verbose"],
    }

    def __init__(
        self,
        sources,
        *,
        strip_accents=None,
        lowercase=True,
        preprocessor=None,
        token_pattern=r"(?u)\b\w+\b|[^\w\s]",
        tokenizer=None,
        stop_words=None,
        max_len=None,
        oov="token",
        min_count=2,
        encoding="utf-8",
        n_jobs=None,
        verbose=0,
    ):
        self.sources = sources
        self.strip_accents = strip_accents
        self.lowercase = lowercase
        self.preprocessor = preprocessor
        self.token_pattern = token_pattern
        self.tokenizer = tokenizer
        self.stop_words = stop_words
        self.max_len = max_len
        self.oov = oov
        self.min_count = min_count
        self.encoding = encoding
        self.n_jobs = n_jobs
        self.verbose = verbose

    def get_params(self, deep=True):
        """Parameters of this transformer and, with ``deep``, of its sources."""
        return self._get_params("sources", deep=deep)

    def set_params(self, **params):
        """Set parameters, including ``<name>__<parameter>`` of the sources."""
        self._set_params("sources", **params)
        return self

    def _check_sources(self):
        if not self.sources:
            raise ValueError("sources must hold at least one (name, transformer) pair.")
        for i, pair in enumerate(self.sources):
            if not (isinstance(pair, tuple) and len(pair) == 2 and isinstance(pair[0], str)):
                raise TypeError(f"sources[{i}] must be a (name, transformer) tuple, got {pair!r}.")
            if not hasattr(pair[1], "fit"):
                raise TypeError(
                    f"Source {pair[0]!r} is {type(pair[1]).__name__}, which has no fit "
                    "method; use e.g. Word2VecVectorizer(...)."
                )
        self._validate_names([name for name, _ in self.sources])

    # The sources are estimators of their own: their fits validate their parameters.
    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, raw_documents, y=None):
        """Fit every source on the corpus and align their tables.

        Parameters
        ----------
        raw_documents : iterable of str
            The training corpus.
        y : None
            Ignored.

        Returns
        -------
        self : MetaEmbeddingTransformer
        """
        self._fit_documents(raw_documents)
        return self

    def _fit_corpus(self, documents):
        """Fit every source and align their tables; return the corpus's token lists."""
        self._check_sources()
        if not documents:
            raise ValueError("raw_documents is empty: fit needs at least one document.")
        corpus = list(iter_token_lists(documents, build_list_analyzer(self)))
        counts = Counter(chain.from_iterable(corpus))
        words = sorted(
            (w for w, c in counts.items() if c >= self.min_count), key=lambda w: (-counts[w], w)
        )
        if not words:
            raise ValueError(
                f"No word occurs at least min_count={self.min_count} times in the "
                f"{len(documents)} documents; lower min_count or provide a larger corpus."
            )

        sink = progress_sink(self)
        if sink is not None:
            sink(f"{len(words):,} words seen at least min_count={self.min_count} times")
        start = time.perf_counter()
        # Under torchrun each source's fit compares its corpus over the ranks: the
        # collectives must come in the same order on every rank, so one after another.
        n_jobs = 1 if group_size() else self.n_jobs
        fitted_sources = Parallel(n_jobs=n_jobs, prefer="threads")(
            delayed(_fit_timed)(source, documents) for _, source in self.sources
        )
        tables, coverage, pretrained = [], {}, []
        for i, ((name, source), (fitted, seconds)) in enumerate(
            zip(self.sources, fitted_sources), 1
        ):
            if not (hasattr(fitted, "vocabulary_") and hasattr(fitted, "embedding_")):
                raise TypeError(
                    f"Source {name!r} ({type(source).__name__}) has no vocabulary_ and "
                    "embedding_ after fit; sources must be word-embedding transformers "
                    "such as Word2VecVectorizer."
                )
            rows = np.array([fitted.vocabulary_.get(w, -1) for w in words])
            table = np.zeros((len(words) + N_RESERVED, fitted.embedding_.shape[1]), np.float32)
            table[OOV_ID] = fitted.embedding_[OOV_ID]
            found = rows >= 0
            table[N_RESERVED:][found] = fitted.embedding_[rows[found]]
            tables.append(table)
            coverage[name] = float(found.mean())
            pretrained.append(getattr(fitted, "pretrained_origin_", None) is not None)
            if sink is not None:
                sink(
                    f"source {name!r} ({i} of {len(self.sources)}) fitted in "
                    f"{seconds:.1f} s; it covers {coverage[name]:.1%} of the vocabulary"
                )
        if sink is not None and len(self.sources) > 1:
            sink(f"all sources fitted in {time.perf_counter() - start:.1f} s")

        self._set_vocabulary(words)
        self.embeddings_ = tuple(tables)
        self.coverage_ = coverage
        self.pretrained_ = tuple(pretrained)
        return corpus

    def _tables(self):
        return self.embeddings_

    def _pretrained_tables(self):
        return self.pretrained_

    def _export_state(self):
        """The fitted state for :func:`~sklearn_lama.save_weights`."""
        return {
            "words": list(self.vocabulary_),
            "embeddings": list(self.embeddings_),
            "coverage": dict(self.coverage_),
            "pretrained": list(self.pretrained_),
        }

    def _import_state(self, state):
        """Become the fitted transformer that :meth:`_export_state` described."""
        self._set_vocabulary(state["words"])
        self.embeddings_ = tuple(self._loaded_table(t) for t in state["embeddings"])
        self.coverage_ = {str(name): float(share) for name, share in state["coverage"].items()}
        self.pretrained_ = tuple(map(bool, state["pretrained"]))


@migration("0.9.0")
def _meta_embeddings_record_pretrained_tables(node):
    """0.9.0 → 0.10.0: a fitted MetaEmbeddingTransformer says which tables are pretrained.

    0.9.0 said it of none: its files read as all corpus-trained.
    """
    state = node.get("state")
    if isinstance(state, dict) and node["class"] == "MetaEmbeddingTransformer":
        state.setdefault("pretrained", [False] * len(state["embeddings"]))
    return node
