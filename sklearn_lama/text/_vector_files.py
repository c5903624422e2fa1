"""Reading word vectors from word2vec text/binary and GloVe files, plain or compressed.

The readers parse the files themselves (nothing is unpickled, no code shipped
with a download is imported), stream them in blocks, keep only the words asked
for (memory O(kept words × dim), never the whole file's table), and report the
file and line of anything malformed.
"""

import bz2
import gzip
import os
import zlib

import numpy as np

FORMATS = ("auto", "word2vec", "glove", "binary")

# Compressions recognised by their magic bytes; the suffix only cross-checks.
_COMPRESSIONS = {".gz": (b"\x1f\x8b", gzip.open), ".bz2": (b"BZh", bz2.open)}
_BLOCK = 1 << 20  # bytes read at a time
_PEEK = 1 << 16  # bytes of a line enough to tell text from binary (a 300-d text line: ~3 KB)


def resolve_pretrained(pretrained):
    """Return the path of the vector file that ``pretrained`` names.

    An existing file is returned as is. A bare name (no directory part) that is
    not a file is looked up as a gensim-data model (e.g.
    ``"glove-wiki-gigaword-100"``) already downloaded to gensim's data
    directory (``$GENSIM_DATA_DIR``, by default ``~/gensim-data``), through
    ``gensim.downloader.load(name, return_path=True)``, which never imports
    the code shipped with a download. A model not downloaded is refused with a
    ``ValueError`` instead of downloading it during ``fit``.
    """
    path = os.fspath(pretrained)
    if os.path.isfile(path):
        return path
    if isinstance(pretrained, str) and path and os.path.basename(path) == path:
        return _gensim_data_path(path)
    raise ValueError(f"pretrained vector file {path!r} does not exist.")


def _gensim_data_path(name):
    from gensim import downloader

    folder = os.path.join(downloader.BASE_DIR, name)
    if not os.path.isdir(folder):
        # gensim would download it here, or fail after a network time-out when offline.
        raise ValueError(
            f"pretrained={name!r} is neither an existing file nor a gensim-data model "
            f"downloaded to {downloader.BASE_DIR!r} (GENSIM_DATA_DIR). Give a path, or "
            f"download the model once: python -m gensim.downloader --download {name}"
        )
    try:
        # Offline, gensim falls back to the catalogue cached in its data directory.
        path = downloader.load(name, return_path=True)
    except ValueError as exc:
        raise ValueError(
            f"pretrained={name!r}: gensim-data cannot resolve this name ({exc})."
        ) from None
    if not os.path.isfile(path):
        raise ValueError(
            f"pretrained={name!r}: the gensim-data file {path!r} is missing; remove "
            f"{folder!r} and download the model again."
        )
    return path


def load_vectors(path, fmt="auto", keep=None, encoding="utf-8"):
    """Read word vectors from ``path``.

    Parameters
    ----------
    path : str or path-like
        The vector file, optionally gzip- or bzip2-compressed (recognised by
        its first bytes).
    fmt : {"auto", "word2vec", "glove", "binary"}
        ``"word2vec"``: text with a ``count dim`` header line; ``"glove"``: text
        without header; ``"binary"``: word2vec's binary format; ``"auto"``:
        detected from the content (a header followed by a text line, a header
        followed by binary floats, or no header).
    keep : set of str, optional
        Only words in this set are kept.

    Returns
    -------
    words : list of str
    vectors : ndarray of shape (len(words), dim), float32
    """
    path = os.fspath(path)
    if fmt not in FORMATS:
        raise ValueError(f"pretrained_format must be one of {FORMATS}, got {fmt!r}.")
    if not os.path.isfile(path):
        raise ValueError(f"pretrained vector file {path!r} does not exist.")
    kind, opener = _compression(path)
    try:
        with opener(path, "rb") as handle:
            blocks = _Blocks(handle)
            return _read(blocks, path, fmt, keep, encoding)
    except (EOFError, OSError, zlib.error) as exc:
        if kind is None:
            raise
        raise ValueError(
            f"{path} is a damaged {kind} file: {str(exc) or type(exc).__name__}."
        ) from None


def _compression(path):
    with open(path, "rb") as handle:
        start = handle.read(3)
    suffix = os.path.splitext(path)[1].lower()
    for name, (magic, opener) in _COMPRESSIONS.items():
        if start.startswith(magic):
            return name.lstrip("."), opener
    if suffix in _COMPRESSIONS:
        raise ValueError(
            f"{path} is named {suffix} but does not hold {suffix.lstrip('.')}-compressed "
            "data (damaged, or misnamed)."
        )
    return None, open


class _Blocks:
    """A binary stream read in large blocks, cut into lines or word2vec records."""

    def __init__(self, handle):
        self.handle = handle
        self.buffer = b""
        self.pos = 0

    def _more(self):
        block = self.handle.read(_BLOCK)
        if not block:
            return False
        self.buffer = self.buffer[self.pos :] + block
        self.pos = 0
        return True

    def line(self):
        """The next line without its newline, or ``None`` at the end."""
        while (end := self.buffer.find(b"\n", self.pos)) < 0:
            if not self._more():
                if self.pos == len(self.buffer):
                    return None
                end = len(self.buffer)
                break
        line = self.buffer[self.pos : end]
        self.pos = end + 1
        return line

    def peek_line(self):
        """The next line (at most ``_PEEK`` bytes of it), left unread."""
        while (end := self.buffer.find(b"\n", self.pos)) < 0:
            if len(self.buffer) - self.pos >= _PEEK or not self._more():
                end = len(self.buffer)
                break
        return self.buffer[self.pos : end][:_PEEK]

    def record(self, n_bytes):
        """The next ``word `` + ``n_bytes`` record, or ``None`` if the file ends first."""
        while True:
            space = self.buffer.find(b" ", self.pos)
            if space >= 0 and len(self.buffer) - space - 1 >= n_bytes:
                word = self.buffer[self.pos : space]
                self.pos = space + 1 + n_bytes
                return word.lstrip(b"\n"), self.buffer[space + 1 : self.pos]
            if not self._more():
                return None


def _parse_header(line):
    parts = line.split()
    if len(parts) == 2 and all(p.isdigit() for p in parts):
        return int(parts[0]), int(parts[1])
    return None


def _read(blocks, path, fmt, keep, encoding):
    first = blocks.peek_line()
    header = _parse_header(first.decode("latin-1"))
    if fmt == "glove" or (fmt == "auto" and header is None):
        return _read_body(blocks, path, "glove", None, keep, encoding)
    if header is None:
        kind = "binary" if fmt == "binary" else "text"
        raise ValueError(
            f"{path}, line 1: expected a 'count dimension' header for word2vec {kind} "
            f"(pretrained_format={fmt!r}), got {first[:60]!r}."
        )
    blocks.line()
    if fmt == "auto":
        fmt = "word2vec" if _is_text_record(blocks.peek_line(), header[1]) else "binary"
    return _read_body(blocks, path, fmt, header, keep, encoding)


def _is_text_record(line, dim):
    try:
        fields = line.decode("utf-8").rstrip(" \r").split(" ")
    except UnicodeDecodeError:
        return False
    return len(fields) == dim + 1 and all(_is_float(v) for v in fields[1:])


def _read_body(blocks, path, fmt, header, keep, encoding):
    if fmt == "binary":
        words, rows = _binary_rows(blocks, path, header, keep, encoding)
        count, dim = header
    else:
        words, rows, count, dim = _text_rows(blocks, path, header, keep, encoding)
    if count == 0:
        raise ValueError(f"pretrained vector file {path!r} holds no vectors.")
    return words, np.asarray(rows, dtype=np.float32).reshape(len(rows), dim)


def _text_rows(blocks, path, header, keep, encoding):
    words, rows = [], []
    expected, dim = header if header is not None else (None, None)
    lineno = 1 if header is not None else 0
    seen = 0
    while (raw := blocks.line()) is not None:
        lineno += 1
        try:
            line = raw.decode(encoding)
        except UnicodeDecodeError as exc:
            raise ValueError(
                f"{path}, line {lineno} is not valid {encoding} text ({exc.reason}); for "
                "word2vec's binary format use pretrained_format='binary'."
            ) from None
        parts = line.rstrip("\r").rstrip(" ").split(" ")
        if parts == [""]:
            continue
        if dim is None:
            dim = len(parts) - 1
            if dim < 1:
                raise ValueError(f"{path}, line {lineno}: a word with no vector.")
        if len(parts) != dim + 1:
            raise ValueError(
                f"{path}, line {lineno}: expected a word and {dim} numbers, "
                f"got {len(parts) - 1} values."
            )
        seen += 1
        # Numbers are parsed for kept words only: the count check above already
        # refuses a ragged or truncated file, and parsing 400k unused lines dominates.
        if keep is None or parts[0] in keep:
            words.append(parts[0])
            rows.append(_to_floats(parts[1:], path, lineno))
    if expected is not None and expected != seen:
        raise ValueError(
            f"{path}: the header announces {expected} vectors but the file holds {seen}."
        )
    return words, rows, seen, dim or 0


def _binary_rows(blocks, path, header, keep, encoding):
    count, dim = header
    words, indices, data = [], [], bytearray()
    for index in range(count):
        record = blocks.record(4 * dim)
        if record is None:
            raise ValueError(f"{path}: truncated after {index} of {count} vectors.")
        try:
            token = record[0].decode(encoding)
        except UnicodeDecodeError:
            raise ValueError(f"{path}: word {index + 1} is not valid {encoding}.") from None
        if keep is None or token in keep:
            words.append(token)
            indices.append(index)
            data += record[1]
    rows = np.frombuffer(bytes(data), dtype="<f4").reshape(len(words), dim)
    finite = np.isfinite(rows).all(axis=1)
    if not finite.all():
        bad = indices[int(np.argmin(finite))]
        raise ValueError(f"{path}: vector {bad + 1} holds NaN or infinity.")
    return words, rows


def _to_floats(values, path, lineno):
    try:
        row = np.asarray(values, dtype=np.float32)
    except ValueError:
        bad = next(v for v in values if not _is_float(v))
        raise ValueError(f"{path}, line {lineno}: {bad!r} is not a number.") from None
    if not np.all(np.isfinite(row)):
        raise ValueError(f"{path}, line {lineno}: the vector holds NaN or infinity.")
    return row


def _is_float(value):
    try:
        float(value)
    except ValueError:
        return False
    return True
