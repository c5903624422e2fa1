"""Serve a model written by :func:`~sklearn_lama.export.to_onnx`: text in, probabilities out.

This module imports only numpy, onnxruntime and the standard library, so that
a server needs neither torch nor scikit-learn: copy this one file beside the
``.onnx`` and ``.json`` files, or install sklearn_lama.
"""

import json
import re
import unicodedata
from pathlib import Path

import numpy as np

__all__ = ["OnnxTextClassifier", "TextEncoder"]

FORMAT = "sklearn_lama.onnx"
FORMAT_VERSION = 1
# Reserved ids of the vocabulary: 0 pads, 1 stands for out-of-vocabulary words.
_OOV_ID = 1
_FIRST_WORD_ID = 2


class OnnxTextClassifier:
    """A classifier exported by :func:`~sklearn_lama.export.to_onnx`, run by onnxruntime.

    Turns documents into the graph's inputs with numpy and the standard
    library only (the exported vectorizer's tokenisation, vocabulary and
    out-of-vocabulary rule), runs the graph and returns what the exported
    estimator's ``predict_proba`` and ``predict`` return.

    Parameters
    ----------
    path : str or path-like
        The ``.onnx`` file; its settings are read from the ``.json`` file of
        the same name beside it.
    threads : int, default=1
        Threads of onnxruntime's operators (``intra_op_num_threads``); ``0``
        lets onnxruntime choose.
    batch_size : int, default=256
        Most documents per run of the graph; documents are sorted by length
        first, so that a batch pads little.
    max_tokens : int, default=32768
        Most token positions per run (documents times the longest one's
        length): long documents run in smaller batches, as the estimators'
        ``max_batch_tokens`` has them; a document longer than this runs alone.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The exported classifier's ``classes_``.
    encoder : TextEncoder or None
        The text side; ``None`` for a graph exported from a classifier alone.
    settings : dict
        The ``.json`` file: the text side (``None`` when the graph was
        exported from a classifier alone, which reads token ids), the classes
        and the graph's input and output names.

    Raises
    ------
    ImportError
        If onnxruntime is not installed.
    ValueError
        If the files are missing or not written by ``to_onnx``.

    Examples
    --------
    >>> from sklearn_lama.export import OnnxTextClassifier
    >>> model = OnnxTextClassifier("model.onnx")  # doctest: +SKIP
    >>> model.predict(["a gripping, funny film"])  # doctest: +SKIP
    array(['pos'], dtype='<U3')
    """

    def __init__(self, path, *, threads=1, batch_size=256, max_tokens=32768):
        try:
            import onnxruntime
        except ImportError:
            raise ImportError(
                "OnnxTextClassifier needs onnxruntime: pip install 'sklearn-lama[onnx]' "
                "(or pip install onnxruntime)."
            ) from None
        if not isinstance(threads, int) or threads < 0:
            raise ValueError(f"threads must be an int >= 0, got {threads!r}.")
        for name, value in (("batch_size", batch_size), ("max_tokens", max_tokens)):
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an int >= 1, got {value!r}.")
        path = Path(path)
        self.settings = read_settings(path.with_suffix(".json"))
        self.batch_size = batch_size
        self.max_tokens = max_tokens
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        try:
            self._session = onnxruntime.InferenceSession(
                str(path), options, providers=["CPUExecutionProvider"]
            )
        except Exception as exc:  # onnxruntime raises its own error types
            raise ValueError(f"{str(path)!r} cannot be loaded as an ONNX model: {exc}") from None
        classes = self.settings["classes"]
        self.classes_ = np.array(classes["values"], dtype=np.dtype(classes["dtype"]))
        text = self.settings["text"]
        self.encoder = None if text is None else TextEncoder(text)

    def encode(self, documents):
        """Token ids of each document: a list of int64 arrays.

        Parameters
        ----------
        documents : iterable of str
            With a graph exported from a classifier alone (no text side):
            sequences of token ids, returned as arrays.
        """
        if isinstance(documents, (str, bytes)):
            raise TypeError("documents must be an iterable of documents, not a single string.")
        if self.encoder is None:
            return [np.asarray(d, dtype=np.int64).reshape(-1) for d in documents]
        return [self.encoder.encode(document) for document in documents]

    # ----------------------------------------------------------- prediction
    def _outputs(self, documents):
        """The graph's probabilities and logits of each document (float32)."""
        sequences = self.encode(documents)
        n_classes = len(self.classes_)
        probabilities = np.empty((len(sequences), n_classes), dtype=np.float32)
        logits = np.empty((len(sequences), n_classes), dtype=np.float32)
        lengths = np.array([len(s) for s in sequences], dtype=np.int64)
        for rows in self._batches(lengths):
            # An empty document is one padding token, as the estimators read it.
            width = max(int(lengths[rows].max()), 1)
            ids = np.zeros((len(rows), width), dtype=np.int64)
            for row, i in enumerate(rows):
                ids[row, : lengths[i]] = sequences[i]
            if self.encoder is None and self.settings["input"] == "ids":
                # A 2-D id array is read whole, zeros included, as in fit.
                batch_lengths = np.full(len(rows), width, dtype=np.int64)
            else:
                batch_lengths = np.maximum(lengths[rows], 1)
            probabilities[rows], logits[rows] = self._session.run(
                ["probabilities", "logits"], {"ids": ids, "lengths": batch_lengths}
            )
        return probabilities, logits

    def _batches(self, lengths):
        """Rows of each run: by increasing length, within ``batch_size`` and ``max_tokens``."""
        batch = []
        for i in np.argsort(lengths, kind="stable"):
            # Sorted, so the new document is the longest of its batch.
            width = max(int(lengths[i]), 1)
            if batch and (
                len(batch) == self.batch_size or (len(batch) + 1) * width > self.max_tokens
            ):
                yield np.array(batch)
                batch = []
            batch.append(i)
        if batch:
            yield np.array(batch)

    def predict_proba(self, documents):
        """Class probabilities, columns following ``classes_``.

        Parameters
        ----------
        documents : iterable of str
            Raw documents (token id sequences for a graph without text side).

        Returns
        -------
        proba : ndarray of shape (n_documents, n_classes), float32
        """
        return self._outputs(documents)[0]

    def predict(self, documents):
        """Predicted labels from ``classes_``.

        Parameters
        ----------
        documents : iterable of str
            Raw documents (token id sequences for a graph without text side).

        Returns
        -------
        y : ndarray of shape (n_documents,)
        """
        return self.classes_[np.argmax(self._outputs(documents)[1], axis=1)]


class TextEncoder:
    """Documents to token ids, as the exported vectorizer's ``transform`` makes them.

    Lower-casing, then accent stripping, then the token pattern, then the
    stop words (the order of scikit-learn's ``CountVectorizer``); words
    outside the vocabulary become id 1 or are dropped (``oov``); documents
    are cut to ``max_len`` ids.

    Parameters
    ----------
    settings : dict
        The ``"text"`` entry of the settings file that ``to_onnx`` writes.
    """

    def __init__(self, settings):
        self.settings = settings
        self._pattern = re.compile(settings["token_pattern"])
        self._stop_words = frozenset(settings["stop_words"] or ())
        self._ids = {word: i for i, word in enumerate(settings["vocabulary"], _FIRST_WORD_ID)}

    def tokenize(self, document):
        """The tokens of one document (str, or bytes in the vectorizer's encoding)."""
        settings = self.settings
        if isinstance(document, bytes):
            document = document.decode(settings["encoding"])
        if not isinstance(document, str):
            raise TypeError(f"documents must be str, got {type(document).__name__}.")
        if settings["lowercase"]:
            document = document.lower()
        if settings["strip_accents"] == "ascii":
            normalized = unicodedata.normalize("NFKD", document)
            document = normalized.encode("ASCII", "ignore").decode("ASCII")
        elif settings["strip_accents"] == "unicode" and not document.isascii():
            normalized = unicodedata.normalize("NFKD", document)
            document = "".join(c for c in normalized if not unicodedata.combining(c))
        tokens = self._pattern.findall(document)
        return [t for t in tokens if t not in self._stop_words]

    def encode(self, document):
        """The token ids of one document, an int64 array."""
        ids = [self._ids.get(token, _OOV_ID) for token in self.tokenize(document)]
        if self.settings["oov"] == "discard":
            ids = [i for i in ids if i != _OOV_ID]
        return np.array(ids[: self.settings["max_len"]], dtype=np.int64)


def read_settings(path):
    """The settings file that ``to_onnx`` writes beside the graph, checked."""
    try:
        settings = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ValueError(f"No settings file at {str(path)!r} (to_onnx writes one).") from None
    except (OSError, ValueError) as exc:
        raise ValueError(f"{str(path)!r} cannot be read as JSON: {exc}") from None
    if not isinstance(settings, dict) or settings.get("format") != FORMAT:
        raise ValueError(f"{str(path)!r} is not a settings file written by to_onnx.")
    if settings.get("format_version") != FORMAT_VERSION:
        raise ValueError(
            f"{str(path)!r} is in version {settings.get('format_version')!r} of the settings "
            f"format; this reader reads version {FORMAT_VERSION}."
        )
    return settings
