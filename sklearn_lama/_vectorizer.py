"""Word2VecVectorizer: raw text to token ids plus word2vec embeddings."""

import hashlib
import os
from collections import Counter
from numbers import Integral

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin, _fit_context
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from ._sequences import TokenSequences
from ._text import build_analyzer, check_documents, encode_documents, iter_documents
from ._vector_files import FORMATS, load_vectors

__all__ = ["Word2VecVectorizer"]

N_RESERVED = 2  # rows 0 (padding) and 1 (out-of-vocabulary) of every table


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


class DocumentEncoderMixin:
    """``transform`` of the text transformers: documents to ids over ``vocabulary_``.

    The class provides the tokenisation parameters, ``vocabulary_``,
    ``vocabulary_id_`` and ``_tables()`` (the embedding tables to attach).
    """

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
        tokenize = build_analyzer(self)
        documents = iter_documents(raw_documents, self.encoding, "raw_documents")
        ids, offsets = encode_documents(
            documents, tokenize, self.vocabulary_, self.oov == "discard", self.max_len
        )
        return TokenSequences(ids, offsets, self._tables(), self.vocabulary_id_)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False
        tags.input_tags.string = True
        return tags


class Word2VecVectorizer(DocumentEncoderMixin, TransformerMixin, BaseEstimator):
    """Turn raw documents into token ids and word2vec embeddings.

    ``fit`` tokenises the corpus, keeps the words seen at least ``min_count``
    times, and either trains gensim's ``Word2Vec`` on the corpus (the LAMA paper's
    setting: 100 dimensions, words seen fewer than 5 times discarded) or reads
    vectors from ``pretrained``. ``transform`` returns a
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
    oov : {"discard", "token"}, default="discard"
        What happens to words outside the vocabulary: ``"discard"`` drops them
        (the paper's choice for rare words), ``"token"`` maps them to the
        reserved out-of-vocabulary id 1.
    vector_size : int, default=100
        Dimension of the trained vectors (paper: 100). Ignored with ``pretrained``.
    min_count : int, default=5
        Words seen fewer times in the training corpus are left out of the
        vocabulary (paper: 5).
    window : int, default=5
        word2vec context window.
    sg : {0, 1}, default=1
        1 for skip-gram, 0 for CBOW.
    negative : int, default=5
        Number of negative samples.
    epochs : int, default=5
        Passes of word2vec over the corpus.
    workers : int, default=1
        word2vec worker threads. Results are reproducible only with 1.
    pretrained : str or path-like, default=None
        A word-vector file to load in ``fit`` instead of training: word2vec text
        (with a ``count dim`` header), GloVe text (no header) or word2vec binary.
        The vocabulary is then the corpus words seen ``min_count`` times that
        have a vector in the file.
    pretrained_format : {"auto", "word2vec", "glove", "binary"}, default="auto"
        Format of ``pretrained``; ``"auto"`` reads ``*.bin`` as binary and
        detects the header of text files.
    encoding : str, default="utf-8"
        Used to decode ``bytes`` documents and the ``pretrained`` file.
    random_state : int, RandomState instance or None, default=None
        Seeds word2vec. With an int and ``workers=1`` the vectors are identical
        across runs and processes.

    Attributes
    ----------
    vocabulary_ : dict
        Maps each word to its id; ids start at 2 (0 is padding, 1 is OOV).
    embedding_ : ndarray of shape (n_words + 2, vector_size)
        The embedding table, row ``i`` for id ``i``; the padding and OOV rows
        are zero.
    vocabulary_id_ : str
        Fingerprint of the vocabulary, carried by every transformed output.

    See Also
    --------
    MetaEmbeddingTransformer : Several embeddings over one vocabulary.

    Examples
    --------
    >>> from sklearn_lama import Word2VecVectorizer
    >>> docs = ["the cat sat on the mat", "the dog sat on the log"] * 5
    >>> vec = Word2VecVectorizer(vector_size=8, random_state=0).fit(docs)
    >>> seqs = vec.transform(["the cat sat on the unknown mat"])
    >>> seqs.lengths.tolist(), vec.embedding_.shape
    ([6], (9, 8))
    >>> vec.inverse_transform(seqs)
    [['the', 'cat', 'sat', 'on', 'the', 'mat']]
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
        oov="discard",
        vector_size=100,
        min_count=5,
        window=5,
        sg=1,
        negative=5,
        epochs=5,
        workers=1,
        pretrained=None,
        pretrained_format="auto",
        encoding="utf-8",
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
        self.window = window
        self.sg = sg
        self.negative = negative
        self.epochs = epochs
        self.workers = workers
        self.pretrained = pretrained
        self.pretrained_format = pretrained_format
        self.encoding = encoding
        self.random_state = random_state

    def _tokenize_all(self, raw_documents, param):
        documents = check_documents(raw_documents, self.encoding, param)
        tokenize = build_analyzer(self)
        return [list(tokenize(doc)) for doc in documents]

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
        corpus = self._tokenize_all(raw_documents, "raw_documents")
        if not corpus:
            raise ValueError("raw_documents is empty: fit needs at least one document.")
        counts = Counter(token for tokens in corpus for token in tokens)
        frequent = {w: c for w, c in counts.items() if c >= self.min_count}
        if not frequent:
            raise ValueError(
                f"No word occurs at least min_count={self.min_count} times in the "
                f"{len(corpus)} documents ({len(counts)} distinct words); lower "
                "min_count or provide a larger corpus."
            )
        if self.pretrained is not None:
            words, vectors = self._load_pretrained(frequent)
        else:
            words, vectors = self._train_word2vec(corpus)

        self._set_vocabulary(words)
        self.embedding_ = np.zeros((len(words) + N_RESERVED, vectors.shape[1]), np.float32)
        self.embedding_[N_RESERVED:] = vectors
        return self

    def _train_word2vec(self, corpus):
        from gensim.models import Word2Vec

        seed = check_random_state(self.random_state).randint(np.iinfo(np.int32).max)
        model = Word2Vec(
            sentences=corpus,
            vector_size=self.vector_size,
            min_count=self.min_count,
            window=self.window,
            sg=self.sg,
            negative=self.negative,
            epochs=self.epochs,
            workers=self.workers,
            seed=int(seed),
        )
        return list(model.wv.index_to_key), np.asarray(model.wv.vectors, np.float32)

    def _load_pretrained(self, frequent):
        words, vectors = load_vectors(
            self.pretrained, self.pretrained_format, keep=set(frequent), encoding=self.encoding
        )
        if not words:
            raise ValueError(
                f"None of the {len(frequent)} corpus words seen at least "
                f"min_count={self.min_count} times has a vector in {self.pretrained!r}."
            )
        # Most frequent first, as word2vec orders its vocabulary; ties by word.
        rank = sorted(range(len(words)), key=lambda i: (-frequent[words[i]], words[i]))
        return [words[i] for i in rank], vectors[rank]

    def _tables(self):
        return (self.embedding_,)

    def _export_state(self):
        """The fitted state for :func:`~sklearn_lama.save_weights`."""
        return {"words": list(self.vocabulary_), "embedding": self.embedding_}

    def _import_state(self, state):
        """Become the fitted vectorizer that :meth:`_export_state` described."""
        self._set_vocabulary(state["words"])
        self.embedding_ = self._loaded_table(state["embedding"])

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
            raise ValueError(
                "X must be a TokenSequences produced by this fitted vectorizer."
            )
        words = np.array(["<pad>", "<oov>", *self.vocabulary_], dtype=object)
        return [
            [str(w) for w in words[X.document(i)] if w != "<pad>"] for i in range(len(X))
        ]
