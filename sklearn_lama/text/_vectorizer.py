"""Word2VecVectorizer: raw text to token ids plus word2vec embeddings."""

import hashlib
import os
import time
from collections import Counter
from itertools import chain
from numbers import Integral

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from ..utils._compatibility import migration
from ..utils._persistence import register
from ..utils._random import derive_seed
from ..utils._shards import joined_shards
from ..utils._sklearn_compat import Interval, StrOptions, _fit_context
from ..utils._state import PortableState
from ._pretrained import locate
from ._sequences import N_RESERVED, OOV_ID, TokenSequences
from ._text import (
    build_list_analyzer,
    check_documents,
    encode_documents,
    iter_documents,
    iter_token_lists,
)
from ._vector_files import FORMATS

__all__ = ["Word2VecVectorizer"]

# Stands for every word rarer than min_count when training with oov="token"; no
# tokenizer of text produces the NUL characters.
_RARE = "\0rare\0"
# FastText's n-gram hash buckets: fastText's 2,000,000 would allocate 800 MB per
# 100 dimensions; corpora this package targets hold far fewer distinct n-grams.
FASTTEXT_BUCKETS = 200_000


def procrustes(source, target):
    """The map ``x -> s (x - m_s) R + m_t`` that best sends ``source`` rows onto ``target``.

    ``R`` orthogonal and ``s`` a scalar minimise the squared error on the
    centred rows (orthogonal Procrustes with scaling, Schönemann 1966): the
    corpus-trained space is rotated and scaled, never distorted, into the
    pretrained one.
    """
    source = np.asarray(source, np.float64)
    target = np.asarray(target, np.float64)
    source_mean, target_mean = source.mean(0), target.mean(0)
    a, b = source - source_mean, target - target_mean
    u, sigma, vt = np.linalg.svd(a.T @ b)
    scale = sigma.sum() / max((a * a).sum(), np.finfo(np.float64).tiny)
    rotation = scale * (u @ vt)
    return lambda x: (np.asarray(x, np.float64) - source_mean) @ rotation + target_mean


def train_word_vectors(
    sentences,
    *,
    vector_size,
    min_count,
    window,
    sg,
    negative,
    epochs,
    workers,
    seed,
    algorithm="word2vec",
    callbacks=None,
):
    """Word vectors trained by gensim on ``sentences`` (lists of tokens).

    ``algorithm`` is ``"word2vec"`` (gensim's ``Word2Vec``) or
    ``"fasttext"`` (``FastText``, with :data:`FASTTEXT_BUCKETS` n-gram
    buckets); ``callbacks`` are gensim callbacks (e.g. progress) and the
    other arguments are gensim's. With one worker the vectors
    depend on the sentences and ``seed`` only.

    Returns
    -------
    words : list of str
        The words kept (``min_count``), most frequent first.
    vectors : ndarray of float32, shape (len(words), vector_size)
    """
    from gensim.models import FastText, Word2Vec

    options = {"bucket": FASTTEXT_BUCKETS} if algorithm == "fasttext" else {}
    if callbacks:
        options["callbacks"] = list(callbacks)
    model = (FastText if algorithm == "fasttext" else Word2Vec)(
        sentences=sentences,
        vector_size=vector_size,
        min_count=min_count,
        window=window,
        sg=sg,
        negative=negative,
        epochs=epochs,
        workers=workers,
        seed=seed,
        **options,
    )
    words = model.wv.index_to_key
    # Equal counts latest first seen first, as recent gensim releases sort them (4.3.0 leaves
    # ties in no fixed order), so that the vocabulary is the same on every supported release.
    first_seen = {}
    for sentence in sentences:
        for word in sentence:
            first_seen.setdefault(word, len(first_seen))
    order = sorted(
        range(len(words)),
        key=lambda i: (-model.wv.get_vecattr(words[i], "count"), -first_seen[words[i]]),
    )
    vectors = np.asarray(model.wv.vectors, np.float32)[order]
    return [words[i] for i in order], vectors


def vocabulary_fingerprint(words):
    """A short digest identifying an ordered vocabulary."""
    digest = hashlib.sha1()
    for word in words:
        digest.update(word.encode("utf-8", "surrogatepass"))
        digest.update(b"\0")
    return digest.hexdigest()[:16]


TOKENIZATION_CONSTRAINTS = {
    "strip_accents": [StrOptions({"ascii", "unicode"}), None, callable],
    "lowercase": ["boolean"],
    "preprocessor": [callable, None],
    "token_pattern": [str],
    "tokenizer": [callable, None],
    "stop_words": [StrOptions({"english"}), list, None],
    "max_len": [Interval(Integral, 1, None, closed="left"), None],
    "oov": [StrOptions({"discard", "token"})],
    "min_count": [Interval(Integral, 1, None, closed="left")],
    "encoding": [str],
}


def progress_sink(estimator):
    """Where ``estimator`` reports progress: ``None`` unless its ``verbose`` is above 0.

    Otherwise a function that prints a message to standard output, prefixed
    with the estimator's class name, as it comes.
    """
    if not estimator.verbose:
        return None
    name = type(estimator).__name__
    return lambda message: print(f"[{name}] {message}", flush=True)


class _EpochReport:
    """A gensim training callback that reports each finished epoch to ``sink``.

    gensim calls these four methods of each callback of ``Word2Vec`` and
    ``FastText``; subclassing its ``CallbackAny2Vec`` would import gensim with
    this module.
    """

    def __init__(self, sink, algorithm, epochs):
        self.sink = sink
        self.algorithm = algorithm
        self.epochs = epochs

    def on_train_begin(self, model):
        self.start = time.perf_counter()
        self.epoch = 0

    def on_epoch_begin(self, model):
        pass

    def on_epoch_end(self, model):
        self.epoch += 1
        self.sink(
            f"{self.algorithm} epoch {self.epoch} of {self.epochs} done "
            f"({time.perf_counter() - self.start:.1f} s)"
        )

    def on_train_end(self, model):
        pass


class DocumentEncoderMixin:
    """``transform`` of the text transformers: documents to ids over ``vocabulary_``.

    The class provides the tokenisation parameters, ``_fit_corpus(documents)``
    (the fit on a checked list of documents, returning their token lists), ``vocabulary_``,
    ``vocabulary_id_``, ``_tables()`` (the embedding tables to attach) and
    ``_pretrained_tables()`` (whether each holds pretrained vectors).
    """

    def _fit_documents(self, raw_documents):
        """Fit on ``raw_documents``; return their token lists.

        Under a ``torchrun`` group whose ranks pass different parts of the
        corpus, the fit reads every rank's part (so that every rank learns
        the same vocabulary and vectors) and returns this rank's token lists.
        """
        documents = check_documents(raw_documents, self.encoding, "raw_documents")
        (documents,), rows = joined_shards((documents,), ("raw_documents",))
        return self._fit_corpus(documents)[rows]

    def _set_vocabulary(self, words):
        """Set ``vocabulary_`` (ids from 2, in the order of ``words``) and its fingerprint."""
        self.vocabulary_ = {word: i + N_RESERVED for i, word in enumerate(words)}
        self.vocabulary_id_ = vocabulary_fingerprint(words)

    def _loaded_table(self, table):
        """A saved embedding table as float32, checked against ``vocabulary_``."""
        table = np.asarray(table, dtype=np.float32)
        if table.ndim != 2 or table.shape[0] != len(self.vocabulary_) + N_RESERVED:
            raise ValueError(
                f"an embedding table of shape {table.shape} does not fit a "
                f"vocabulary of {len(self.vocabulary_)} words."
            )
        return table

    def transform(self, raw_documents):
        """Map documents to token ids over the fitted vocabulary.

        Parameters
        ----------
        raw_documents : iterable of str
            Documents to transform.

        Returns
        -------
        sequences : TokenSequences
            Ragged token ids (O(total tokens) memory) and the fitted embedding
            table(s), shared, not copied.
        """
        check_is_fitted(self)
        documents = iter_documents(raw_documents, self.encoding, "raw_documents")
        return self._sequences(documents, build_list_analyzer(self))

    # A MetaEmbeddingTransformer's sources are estimators of their own: their fits validate.
    @_fit_context(prefer_skip_nested_validation=False)
    def fit_transform(self, raw_documents, y=None):
        """Fit on the corpus, then map it to token ids: ``fit(...).transform(...)``.

        The corpus is tokenised once, for both.

        Parameters
        ----------
        raw_documents : iterable of str
            The corpus to learn from and map, one document per entry.
        y : None
            Ignored.

        Returns
        -------
        sequences : TokenSequences
            The corpus's token ids and the fitted embedding table(s), as
            :meth:`transform` returns them.
        """
        return self._sequences(self._fit_documents(raw_documents), list)

    def _sequences(self, documents, split):
        """The :class:`~sklearn_lama.TokenSequences` of ``documents``, tokenised by ``split``."""
        ids, offsets = encode_documents(
            documents, split, self.vocabulary_, self.oov == "discard", self.max_len
        )
        return TokenSequences(
            ids, offsets, self._tables(), self.vocabulary_id_, self._pretrained_tables()
        )

    def get_feature_names_out(self, input_features=None):
        """The name of the output's one column: the documents' column.

        The output (:class:`~sklearn_lama.TokenSequences`) is a table of one
        column, the documents, so that a
        :class:`~sklearn.compose.ColumnTransformer` names it beside the
        other columns' features.

        Parameters
        ----------
        input_features : array-like of str, default=None
            The input column's name; ``None``: ``"text"``.

        Returns
        -------
        feature_names_out : ndarray of str, shape (1,)
        """
        check_is_fitted(self)
        if input_features is None or len(input_features) != 1:
            return np.asarray(["text"], dtype=object)
        return np.asarray([str(input_features[0])], dtype=object)

    def set_output(self, *, transform=None):
        """Check a ``set_output`` request; the output stays a ``TokenSequences``.

        ``ColumnTransformer.set_output`` and ``Pipeline.set_output`` pass their
        request on to every transformer. A table of documents has no pandas or
        polars form that the classifiers read, so the output is a
        :class:`~sklearn_lama.TokenSequences` whatever the request; a request
        scikit-learn does not know is refused.

        Parameters
        ----------
        transform : {"default", "pandas", "polars"} or None, default=None
            The output container asked for; the output stays a
            ``TokenSequences``.

        Returns
        -------
        self : object

        Raises
        ------
        ValueError
            If ``transform`` is none of ``"default"``, ``"pandas"``,
            ``"polars"`` and ``None``.
        """
        if transform is not None and not (
            isinstance(transform, str) and transform in ("default", "pandas", "polars")
        ):
            raise ValueError(
                "set_output's transform must be 'default', 'pandas', 'polars' or None, "
                f"got {transform!r}."
            )
        return self

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False
        tags.input_tags.string = True
        return tags


@register
class Word2VecVectorizer(
    PortableState,
    DocumentEncoderMixin,
    TransformerMixin,
    BaseEstimator,
    # The output is a TokenSequences, which no DataFrame can hold: set_output keeps it.
    auto_wrap_output_keys=None,
):
    """Turn raw documents into token ids and word embeddings.

    ``fit`` tokenises the corpus, keeps the words seen at least ``min_count``
    times, and either reads their vectors from ``pretrained`` (by default
    GloVe 6B 50d, shipped with the package) or, with ``pretrained=None``,
    trains gensim's ``Word2Vec`` (or ``FastText``) on the corpus (the LAMA
    paper's setting: word2vec, 100 dimensions, words seen fewer than 5 times
    discarded). ``transform`` returns a
    :class:`~sklearn_lama.TokenSequences`: ragged token ids plus the embedding
    table, which the classifiers of this package take as input (and fine-tune).

    Parameters
    ----------
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
        What happens to words outside the vocabulary: ``"token"`` maps them to
        the reserved out-of-vocabulary id 1, ``"discard"`` drops them (the
        LAMA paper's choice for rare words). With ``"token"`` the OOV row is the
        vector of the words rarer than ``min_count``: trained vectors are
        trained with every such word replaced by one placeholder token (so the
        OOV row is trained on the very contexts where ``transform`` will put
        id 1), and with ``pretrained`` it is the count-weighted mean of the
        file's vectors of those words. It stays zero if there are none.
    vector_size : int, default=100
        Dimension of the trained vectors (paper: 100). Used with
        ``pretrained=None`` only (the table sets the dimension otherwise).
    min_count : int, default=2
        Words seen fewer times in the training corpus are left out of the
        vocabulary (the LAMA paper: 5).
    algorithm : {"word2vec", "fasttext"}, default="word2vec"
        ``"word2vec"`` trains gensim's ``Word2Vec`` (the LAMA paper);
        ``"fasttext"`` trains gensim's ``FastText``, whose word vectors are
        the sum of the word's own vector and of its character 3- to 6-grams
        (hashed into 200,000 buckets), so rare and misspelt words seen in the
        corpus share what their frequent relatives learnt; a low ``min_count``
        then keeps useful rare words. The vocabulary (and the table the
        classifiers fine-tune) is still fixed at ``fit``: the n-gram table is
        not kept, and a word never seen in ``fit`` is handled by ``oov`` like
        with word2vec.
    window : int, default=5
        word2vec context window.
    sg : {0, 1}, default=1
        1 for skip-gram, 0 for CBOW.
    negative : int, default=5
        Number of negative samples.
    epochs : int, default=20
        Passes of word2vec over the corpus. gensim's 5 suit corpora of
        billions of words; a corpus of thousands of documents needs more (the
        documentation's results page compares them). ``epochs=5, min_count=5,
        oov="discard"`` restores the paper's setting.
    workers : int, default=1
        word2vec worker threads. Results are reproducible only with 1.
    pretrained : str, path-like or None, default="glove-6b-50d-100k"
        Word vectors to load in ``fit``; ``None`` trains them on the corpus
        instead (``algorithm``, ``vector_size``, ``window``, ``sg``,
        ``negative``, ``epochs``, ``workers``; the LAMA paper's setting).
        The default, ``"glove-6b-50d-100k"``, is the 100,000 most frequent
        words of Stanford's GloVe 6B (Wikipedia 2014 + Gigaword 5, 50
        dimensions, lower case; Pennington, Socher and Manning, 2014), values
        rounded to float16, shipped inside this package: the same table in
        every install, read with NumPy alone. ``"glove-wiki-gigaword-50"`` is
        the full table (400,000 words), read from gensim-data's copy if it
        was downloaded, else from the package that ``pip install
        "sklearn-lama[glove]"`` installs. Otherwise a path to word2vec text
        (with a ``count dim`` header), GloVe text (no header) or word2vec
        binary, each optionally gzip- or bzip2-compressed (``.gz``, ``.bz2``;
        recognised by content); or the name of a gensim-data model already
        downloaded to gensim's data directory (``$GENSIM_DATA_DIR``, by
        default ``~/gensim-data``), e.g. ``"glove-wiki-gigaword-100"``
        (downloaded once with ``python -m gensim.downloader --download
        glove-wiki-gigaword-100``). ``fit`` never downloads, never touches
        the network and never runs code shipped with the vectors; a name
        installed nowhere is refused with a ``ValueError`` that says how to
        install it, a damaged table with a ``ValueError`` too. Only corpus
        words are read (a word absent as written takes the vector of its
        lower-case form, as published tables such as GloVe 6B are lower
        case), so memory is that of the corpus vocabulary, not of the table.
        Pretrained vectors beat corpus-trained ones on the corpora of the
        results page, and skip the word2vec pass.

        .. versionchanged:: 0.10.0
           The default was ``None`` (word2vec trained on the corpus).
    pretrained_format : {"auto", "word2vec", "glove", "binary"}, default="auto"
        Format of ``pretrained``; ``"auto"`` detects it from the content.
    oov_vectors : {"random", "train", "drop"}, default="random"
        With ``pretrained``: what corpus words seen ``min_count`` times but
        absent from the file get. ``"random"``: random vectors with the
        per-dimension mean and spread of the file's vectors; ``"train"``:
        vectors trained on the corpus (``algorithm``, at the file's
        dimension) and mapped into the pretrained space by the rotation and
        scale that best match the words both have (orthogonal Procrustes);
        ``"drop"``: the words leave the vocabulary. ``coverage_`` says how
        many had a pretrained vector. ``"train"`` places the words nearer to
        where the file would than ``"random"``, for one extra word2vec pass
        over the corpus; with GloVe 6B on MR neither it nor ``"drop"`` gained
        accuracy in cross-validation (the results page), so the default is
        the pass-free ``"random"``.

        .. versionchanged:: 0.10.0
           The default was ``"train"``.
    encoding : str, default="utf-8"
        Used to decode ``bytes`` documents and the ``pretrained`` file.
    verbose : int, default=0
        Above 0, ``fit`` prints its progress to standard output: the size of
        the vocabulary, how much of the ``pretrained`` file is read (each
        tenth of it, then a summary), and each finished word2vec or FastText
        epoch with the time spent training.
    random_state : int, RandomState instance or None, default=None
        Seeds word2vec / FastText and ``oov_vectors="random"``. With an int and
        ``workers=1`` the vectors are identical across runs and processes.

    Attributes
    ----------
    vocabulary_ : dict
        Maps each word to its id; ids start at 2 (0 is padding, 1 is OOV).
    embedding_ : ndarray of shape (n_words + 2, vector_size)
        The embedding table, row ``i`` for id ``i``; the padding row is zero,
        the OOV row too unless ``oov="token"`` (see ``oov``).
    coverage_ : float or None
        With ``pretrained``: the fraction of ``vocabulary_`` whose vector comes
        from the file (``round(coverage_ * len(vocabulary_))`` words); ``None``
        without ``pretrained``.
    pretrained_origin_ : str or None
        With ``pretrained``: where the vectors were read from (the file, the
        gensim-data copy or the package); ``None`` without ``pretrained``.
    vocabulary_id_ : str
        Fingerprint of the vocabulary, carried by every transformed output.

    See Also
    --------
    MetaEmbeddingTransformer : Several embeddings over one vocabulary.

    References
    ----------
    .. [1] Pennington, J., Socher, R. and Manning, C. D. (2014). "GloVe:
       Global Vectors for Word Representation". Proceedings of EMNLP 2014,
       1532-1543. The vectors are published under the Open Data Commons
       Public Domain Dedication and License (PDDL 1.0).

    Examples
    --------
    By default the words' vectors are GloVe's [1]_ (every word here has one):

    >>> from sklearn_lama import Word2VecVectorizer
    >>> docs = ["the cat sat on the mat", "the dog sat on the log"] * 5
    >>> vec = Word2VecVectorizer().fit(docs)
    >>> seqs = vec.transform(["the cat sat on the unknown mat"])
    >>> seqs.lengths.tolist(), vec.embedding_.shape, vec.coverage_
    ([7], (9, 50), 1.0)
    >>> vec.inverse_transform(seqs)
    [['the', 'cat', 'sat', 'on', 'the', '<oov>', 'mat']]

    Word2vec trained on the corpus instead:

    >>> vec = Word2VecVectorizer(pretrained=None, vector_size=8, random_state=0).fit(docs)
    >>> vec.embedding_.shape, vec.coverage_
    ((9, 8), None)

    Vectors from a file (here a tiny GloVe file); the corpus words the file
    lacks get random vectors with the spread of the file's:

    >>> import os, tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = os.path.join(folder, "vectors.txt")
    ...     with open(path, "w") as file:
    ...         _ = file.write("the 0.1 0.2\\ncat 0.3 0.1\\nsat 0.2 0.2\\n")
    ...     vec = Word2VecVectorizer(pretrained=path, random_state=0).fit(docs)
    >>> vec.embedding_.shape, round(vec.coverage_, 2)
    ((9, 2), 0.43)
    """

    _parameter_constraints = {
        **TOKENIZATION_CONSTRAINTS,
        "vector_size": [Interval(Integral, 1, None, closed="left")],
        "window": [Interval(Integral, 1, None, closed="left")],
        "sg": [Interval(Integral, 0, 1, closed="both")],
        "negative": [Interval(Integral, 0, None, closed="left")],
        "epochs": [Interval(Integral, 1, None, closed="left")],
        "workers": [Interval(Integral, 1, None, closed="left")],
        "pretrained": [str, os.PathLike, None],
        "pretrained_format": [StrOptions(set(FORMATS))],
        "oov_vectors": [StrOptions({"train", "random", "drop"})],
        "algorithm": [StrOptions({"word2vec", "fasttext"})],
        "verbose": ["verbose"],
        "random_state": ["random_state"],
    }

    def __init__(
        self,
        *,
        strip_accents=None,
        lowercase=True,
        preprocessor=None,
        token_pattern=r"(?u)\b\w+\b|[^\w\s]",
        tokenizer=None,
        stop_words=None,
        max_len=None,
        oov="token",
        vector_size=100,
        min_count=2,
        algorithm="word2vec",
        window=5,
        sg=1,
        negative=5,
        epochs=20,
        workers=1,
        pretrained="glove-6b-50d-100k",
        pretrained_format="auto",
        oov_vectors="random",
        encoding="utf-8",
        verbose=0,
        random_state=None,
    ):
        self.strip_accents = strip_accents
        self.lowercase = lowercase
        self.preprocessor = preprocessor
        self.token_pattern = token_pattern
        self.tokenizer = tokenizer
        self.stop_words = stop_words
        self.max_len = max_len
        self.oov = oov
        self.vector_size = vector_size
        self.min_count = min_count
        self.algorithm = algorithm
        self.window = window
        self.sg = sg
        self.negative = negative
        self.epochs = epochs
        self.workers = workers
        self.pretrained = pretrained
        self.pretrained_format = pretrained_format
        self.oov_vectors = oov_vectors
        self.encoding = encoding
        self.verbose = verbose
        self.random_state = random_state

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, raw_documents, y=None):
        """Build the vocabulary and learn (or load) the word vectors.

        Parameters
        ----------
        raw_documents : iterable of str
            The training corpus, one document per entry.
        y : None
            Ignored.

        Returns
        -------
        self : Word2VecVectorizer
        """
        self._fit_documents(raw_documents)
        return self

    def _fit_corpus(self, documents):
        """Fit on the corpus (a list of ``str``); return its token lists."""
        corpus = list(iter_token_lists(documents, build_list_analyzer(self)))
        if not corpus:
            raise ValueError("raw_documents is empty: fit needs at least one document.")
        counts = Counter(chain.from_iterable(corpus))
        frequent = {w: c for w, c in counts.items() if c >= self.min_count}
        if not frequent:
            raise ValueError(
                f"No word occurs at least min_count={self.min_count} times in the "
                f"{len(corpus)} documents ({len(counts)} distinct words); lower "
                "min_count or provide a larger corpus."
            )
        sink = progress_sink(self)
        if sink is not None:
            sink(
                f"{len(frequent):,} of {len(counts):,} distinct words seen at least "
                f"min_count={self.min_count} times"
            )
        if self.pretrained is None:
            words, vectors, oov_row = self._train(corpus, counts, self.vector_size)
            self.coverage_ = None
            self.pretrained_origin_ = None
        else:
            words, vectors, oov_row = self._load_pretrained(corpus, counts, frequent)

        self._set_vocabulary(words)
        self.embedding_ = np.zeros((len(words) + N_RESERVED, vectors.shape[1]), np.float32)
        self.embedding_[OOV_ID] = oov_row
        self.embedding_[N_RESERVED:] = vectors
        return corpus

    def _train(self, corpus, counts, vector_size):
        """Train on the corpus: vocabulary words, their vectors and the OOV row."""
        if self.oov == "token":
            rare = {w for w, c in counts.items() if c < self.min_count}
            corpus = [[_RARE if t in rare else t for t in tokens] for tokens in corpus]
        sink = progress_sink(self)
        words, vectors = train_word_vectors(
            corpus,
            vector_size=vector_size,
            min_count=self.min_count,
            window=self.window,
            sg=self.sg,
            negative=self.negative,
            epochs=self.epochs,
            workers=self.workers,
            seed=derive_seed(self.random_state),
            algorithm=self.algorithm,
            callbacks=None if sink is None else [_EpochReport(sink, self.algorithm, self.epochs)],
        )
        oov_row = np.zeros(vector_size, np.float32)
        if _RARE in words:
            index = words.index(_RARE)
            oov_row = vectors[index]
            del words[index]
            vectors = np.delete(vectors, index, axis=0)
        return words, vectors, oov_row

    def _load_pretrained(self, corpus, counts, frequent):
        source = locate(self.pretrained, self.pretrained_format)
        wanted = sorted(counts) if self.oov == "token" else sorted(frequent)
        # Published tables such as GloVe 6B are lower case: a word absent as
        # written takes the vector of its lower-case form.
        found, table = source.load(
            {*wanted, *(w.lower() for w in wanted)}, self.encoding, sink=progress_sink(self)
        )
        self.pretrained_origin_ = source.origin
        index = {word: i for i, word in enumerate(found)}
        row_of = {}
        for word in wanted:
            row = index.get(word, index.get(word.lower()))
            if row is not None:
                row_of[word] = row
        covered = [w for w in frequent if w in row_of]
        if not covered:
            raise ValueError(
                f"None of the {len(frequent)} corpus words seen at least "
                f"min_count={self.min_count} times has a vector in {self.pretrained!r}."
            )
        # Most frequent first, as word2vec orders its vocabulary; ties by word.
        words = sorted(
            frequent if self.oov_vectors != "drop" else covered, key=lambda w: (-frequent[w], w)
        )
        dim = table.shape[1]
        vectors = np.empty((len(words), dim), np.float32)
        has_vector = np.array([w in row_of for w in words])
        vectors[has_vector] = table[[row_of[w] for w in words if w in row_of]]
        if not has_vector.all():
            vectors[~has_vector] = self._uncovered_vectors(
                corpus,
                counts,
                [w for w in words if w not in row_of],
                covered,
                table[[row_of[w] for w in covered]],
            )
        self.coverage_ = float(has_vector.mean())

        rare = [w for w in row_of if counts[w] < self.min_count]
        weights = np.array([counts[w] for w in rare], np.float64)
        oov_row = (
            weights @ table[[row_of[w] for w in rare]] / weights.sum()
            if rare
            else np.zeros(dim, np.float32)
        )
        return words, vectors, oov_row

    def _uncovered_vectors(self, corpus, counts, uncovered, covered, covered_vectors):
        """Vectors for corpus words the pretrained file lacks (``oov_vectors``)."""
        if self.oov_vectors == "random":
            rng = np.random.RandomState(derive_seed(self.random_state))
            mean, std = covered_vectors.mean(0), covered_vectors.std(0)
            return mean + std * rng.standard_normal((len(uncovered), len(mean)))
        words, trained, _ = self._train(corpus, counts, covered_vectors.shape[1])
        row_of = {word: i for i, word in enumerate(words)}
        mapping = procrustes(trained[[row_of[w] for w in covered]], covered_vectors)
        return mapping(trained[[row_of[w] for w in uncovered]])

    def _tables(self):
        return (self.embedding_,)

    def _pretrained_tables(self):
        return (self.pretrained_origin_ is not None,)

    def _export_state(self):
        """The fitted state for :func:`~sklearn_lama.save_weights`."""
        return {
            "words": list(self.vocabulary_),
            "embedding": self.embedding_,
            "coverage": self.coverage_,
            "pretrained_origin": self.pretrained_origin_,
        }

    def _import_state(self, state):
        """Become the fitted vectorizer that :meth:`_export_state` described."""
        self._set_vocabulary(state["words"])
        self.embedding_ = self._loaded_table(state["embedding"])
        coverage = state["coverage"]
        self.coverage_ = None if coverage is None else float(coverage)
        self.pretrained_origin_ = state["pretrained_origin"]

    def inverse_transform(self, X):
        """Return the tokens of each document of a :class:`TokenSequences`.

        Parameters
        ----------
        X : TokenSequences
            Output of :meth:`transform`.

        Returns
        -------
        tokens : list of list of str
            Padding is skipped; out-of-vocabulary ids read ``"<oov>"``.
        """
        check_is_fitted(self)
        if not isinstance(X, TokenSequences) or X.vocabulary_id != self.vocabulary_id_:
            raise ValueError("X must be a TokenSequences produced by this fitted vectorizer.")
        words = np.array(["<pad>", "<oov>", *self.vocabulary_], dtype=object)
        return [[str(w) for w in words[X.document(i)] if w != "<pad>"] for i in range(len(X))]


@migration("0.9.0")
def _vectorizers_record_where_vectors_came_from(node):
    """0.9.0 → 0.10.0: a fitted vectorizer records where its pretrained vectors came from.

    0.9.0 kept only ``coverage``, which is set exactly when the vectors were
    read from a file.
    """
    state = node.get("state")
    if isinstance(state, dict) and node["class"] == "Word2VecVectorizer":
        origin = None if state["coverage"] is None else "a file (saved by an earlier version)"
        state.setdefault("pretrained_origin", origin)
    return node
