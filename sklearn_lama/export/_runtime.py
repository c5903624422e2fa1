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
    columns : dict or None
        For a pipeline whose text step sat in a ``ColumnTransformer`` beside
        side columns: the text column's name and the side columns' fitted
        encoders (imputed values, means and scales, categories), which
        :func:`read_table` applies; the documents are then a table (a pandas
        or polars DataFrame, or a dict of columns) with those columns.
        ``None`` otherwise.
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
        self.columns = self.settings.get("columns")

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
        side = None
        if self.columns is not None:
            documents, side = read_table(documents, self.columns)
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
            feeds = {"ids": ids, "lengths": batch_lengths}
            if side is not None:
                feeds["side"] = side[rows]
            probabilities[rows], logits[rows] = self._session.run(
                ["probabilities", "logits"], feeds
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
        documents : iterable of str or table
            Raw documents (token id sequences for a graph without text side;
            with side columns, a table holding the columns of ``fit``).

        Returns
        -------
        proba : ndarray of shape (n_documents, n_classes), float32
        """
        return self._outputs(documents)[0]

    def predict(self, documents):
        """Predicted labels from ``classes_``.

        Parameters
        ----------
        documents : iterable of str or table
            Raw documents (token id sequences for a graph without text side;
            with side columns, a table holding the columns of ``fit``).

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


def read_table(table, columns):
    """``(documents, side)`` of a table: its text column and its side features, encoded.

    Parameters
    ----------
    table : DataFrame or mapping
        Anything indexed by column name (a pandas or polars DataFrame, a
        dict of lists) that holds the columns of ``fit``.
    columns : dict
        The ``"columns"`` entry of the settings file: the text column's
        name and, per side transformer, its columns and fitted steps.

    Returns
    -------
    documents : list
        The text column.
    side : ndarray of shape (n_documents, n_side), float32
        The side features, as the fitted ``ColumnTransformer`` makes them.
    """
    documents = _column(table, columns["text"])
    blocks = [_encode(table, part, len(documents)) for part in columns["parts"]]
    side = np.hstack(blocks) if blocks else np.zeros((len(documents), 0))
    names = [name for part in columns["parts"] for name in _names(part)]
    bad = np.argwhere(~np.isfinite(side))
    if len(bad):
        row, j = bad[0]
        raise ValueError(
            f"Side feature {names[j]!r} holds missing or infinite values (document {row} "
            "first); the exported pipeline had no imputer for it."
        )
    return documents, side.astype(np.float32)


def _column(table, name):
    try:
        values = table[name]
    except Exception:  # pandas raises KeyError, polars its ColumnNotFoundError, a dict KeyError
        raise ValueError(
            f"the table has no column {name!r}, which the model was fitted on."
        ) from None
    return list(values)


def _missing(value):
    return value is None or (isinstance(value, float) and value != value)


def _encode(table, part, n):
    """The features of one side transformer: its columns through its fitted steps."""
    values = np.empty((n, len(part["columns"])), dtype=object)
    for j, name in enumerate(part["columns"]):
        column = _column(table, name)
        if len(column) != n:
            raise ValueError(f"column {name!r} holds {len(column)} rows, the text {n}.")
        values[:, j] = column
    for step in part["steps"]:
        kind = step["kind"]
        if kind == "impute":
            for j, fill in enumerate(step["values"]):
                values[:, j] = [fill if _missing(v) else v for v in values[:, j]]
        elif kind == "scale":
            values = np.array(
                [[np.nan if _missing(v) else v for v in row] for row in values], np.float64
            ).reshape(n, -1)
            if step["mean"] is not None:
                values -= np.asarray(step["mean"])
            if step["scale"] is not None:
                values /= np.asarray(step["scale"])
        elif kind == "one_hot":
            values = np.hstack(
                [
                    _one_hot(values[:, j], categories, step["handle_unknown"], name)
                    for j, (categories, name) in enumerate(
                        zip(step["categories"], part["columns"])
                    )
                ]
            )
    return np.array(
        [[np.nan if _missing(v) else v for v in row] for row in values], np.float64
    ).reshape(n, -1)


def _one_hot(column, categories, handle_unknown, name):
    index = {category: i for i, category in enumerate(categories)}
    out = np.zeros((len(column), len(categories)))
    for row, value in enumerate(column):
        i = index.get(value)
        if i is None and handle_unknown == "error":
            raise ValueError(
                f"column {name!r} holds the category {value!r}, unknown in fit (the "
                "exported OneHotEncoder has handle_unknown='error')."
            )
        if i is not None:
            out[row, i] = 1.0
    return out


def _names(part):
    one_hot = [s for s in part["steps"] if s["kind"] == "one_hot"]
    if not one_hot:
        return part["columns"]
    return [
        f"{name}_{category}"
        for name, categories in zip(part["columns"], one_hot[-1]["categories"])
        for category in categories
    ]


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
