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
# Version 2 (0.11.0): the side columns' encoders in the graph; version 1 (0.9.0, 0.10.0)
# held them as numbers, and its files without side columns read the same.
FORMAT_VERSION = 2
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
        For a pipeline whose text step sat in a ``ColumnTransformer``: the
        text column's name, the graph's input of each side column (their
        encoders, converted by skl2onnx, are part of the graph), the graph's
        output of the side features and their names; the documents are then
        a table (a pandas or polars DataFrame, or a dict of columns) with
        those columns. ``None`` otherwise.
    settings : dict
        The ``.json`` file: the text side (``None`` when the graph was
        exported from a classifier alone, which reads token ids), the classes
        and the graph's input and output names.

    Raises
    ------
    ImportError
        If onnxruntime is not installed.
    ValueError
        If the files are missing or not written by ``to_onnx``, or were
        written by sklearn_lama 0.10.0 from a pipeline with side columns
        (whose encoders the settings file held; export the pipeline again).

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
        # The side columns' inputs that read strings (the others read float32).
        self._strings = {i.name for i in self._session.get_inputs() if i.type == "tensor(string)"}

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
        side, names = {}, ["probabilities", "logits"]
        if self.columns is not None:
            documents, side = read_table(documents, self.columns, self._strings)
        if side:
            names.append(self.columns["output"])
        sequences = self.encode(documents)
        n_classes = len(self.classes_)
        outputs = [np.empty((len(sequences), n), dtype=np.float32) for n in (n_classes, n_classes)]
        if side:
            outputs.append(np.empty((len(sequences), len(self.columns["features"])), np.float32))
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
            feeds.update((name, values[rows]) for name, values in side.items())
            for output, values in zip(outputs, self._run(names, feeds)):
                output[rows] = values
        if side:
            _check_finite(outputs[2], self.columns["features"])
        return outputs[0], outputs[1]

    def _run(self, names, feeds):
        try:
            return self._session.run(names, feeds)
        except Exception as exc:  # onnxruntime raises its own error types
            if not self.columns or not self.columns["inputs"]:
                raise
            raise ValueError(
                "onnxruntime could not run the model on these side columns (an encoder "
                f"fitted with handle_unknown='error' fails on a category unknown in fit): {exc}"
            ) from None

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


def read_table(table, columns, strings):
    """``(documents, side)`` of a table: its text column and its side columns, as graph inputs.

    Parameters
    ----------
    table : DataFrame or mapping
        Anything indexed by column name (a pandas or polars DataFrame, a
        dict of lists) that holds the columns of ``fit``.
    columns : dict
        The ``"columns"`` entry of the settings file: the text column's
        name and the graph's input of each side column.
    strings : set of str
        The inputs that read strings; the others read float32.

    Returns
    -------
    documents : list
        The text column.
    side : dict of str to ndarray of shape (n_documents, 1)
        Each side column, by the name of its input.
    """
    documents = _column(table, columns["text"])
    side = {}
    for column, name in columns["inputs"].items():
        values = _column(table, column)
        if len(values) != len(documents):
            raise ValueError(
                f"column {column!r} holds {len(values)} rows, the text {len(documents)}."
            )
        if name in strings:
            values = np.array([str(v) for v in values], dtype=object)
        else:
            try:
                values = np.asarray(values, dtype=np.float32)
            except (TypeError, ValueError) as exc:
                raise ValueError(
                    f"column {column!r} holds values that are not numbers: {exc}"
                ) from None
        side[name] = values.reshape(-1, 1)
    return documents, side


def _column(table, name):
    try:
        values = table[name]
    except Exception:  # pandas raises KeyError, polars its ColumnNotFoundError, a dict KeyError
        raise ValueError(
            f"the table has no column {name!r}, which the model was fitted on."
        ) from None
    return list(values)


def _check_finite(side, names):
    """Refuse side features that are missing or infinite, as the classifiers do."""
    bad = np.argwhere(~np.isfinite(side))
    if len(bad):
        row, j = bad[0]
        raise ValueError(
            f"Side feature {names[j]!r} holds missing or infinite values (document {row} "
            "first); the exported pipeline had no imputer for it."
        )


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
    version = settings.get("format_version")
    if version not in (1, FORMAT_VERSION):
        raise ValueError(
            f"{str(path)!r} is in version {version!r} of the settings format; this reader "
            f"reads versions 1 and {FORMAT_VERSION}."
        )
    if version == 1 and settings.get("columns") is not None:
        # Version 1 (sklearn_lama 0.10.0) held the side columns' encoders as numbers
        # for the server to apply; version 2 holds them in the graph.
        raise ValueError(
            f"{str(path)!r} was written by sklearn_lama {settings.get('library_version')} "
            "with side columns, whose encoders this reader no longer applies (they are in "
            "the graph since 0.11.0): export the fitted pipeline again with to_onnx, or "
            "serve these files with sklearn_lama 0.10.0's OnnxTextClassifier."
        )
    return settings
