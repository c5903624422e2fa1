"""Reading word vectors from word2vec text/binary and GloVe files, plain or compressed.

The readers parse the files themselves (nothing is unpickled, no code shipped
with a download is imported), stream them in blocks, keep only the words asked
for (memory O(kept words × dim), never the whole file's table), and report the
file and line of anything malformed. Whatever the bytes, a read ends: at the
end of the stream, or with a ``ValueError`` as soon as a line, a word or a
declared dimension exceeds the bounds below, before anything of that size is
held in memory.
"""

import bz2
import codecs
import contextlib
import gzip
import os
import time
import zlib

import numpy as np

FORMATS = ("auto", "word2vec", "glove", "binary")

# Compressions recognised by their magic bytes; the suffix only cross-checks.
# Each wraps the open file, whose position then tells how much of it is read.
_COMPRESSIONS = {
    ".gz": (b"\x1f\x8b", lambda raw: gzip.GzipFile(fileobj=raw, mode="rb")),
    ".bz2": (b"BZh", bz2.BZ2File),
}
_BLOCK = 1 << 20  # bytes read at a time
# Largest vector dimension accepted (published vectors have 50 to a few thousand).
MAX_DIM = 1 << 16
# Longest line (or binary word) accepted: a text line of MAX_DIM numbers fits several times.
MAX_LINE = 1 << 24
# A first line this long is no "count dimension" header.
_HEADER_PEEK = 64
_BOM = codecs.BOM_UTF8


def load_vectors(path, fmt="auto", keep=None, encoding="utf-8", sink=None):
    """Read word vectors from ``path``.

    The file is streamed in blocks of 1 MiB; memory is that of the kept
    vectors plus one block and one line. Reading ends on any content: a
    malformed, truncated or foreign file raises ``ValueError``.

    Parameters
    ----------
    path : str or path-like
        The vector file, optionally gzip- or bzip2-compressed (recognised by
        its first bytes).
    fmt : {"auto", "word2vec", "glove", "binary"}, default="auto"
        ``"word2vec"``: text with a ``count dim`` header line; ``"glove"``: text
        without header; ``"binary"``: word2vec's binary format; ``"auto"``:
        detected from the content (a header followed by a text line, a header
        followed by binary floats, or no header). A UTF-8 byte order mark at
        the start of the file is skipped.
    keep : set of str, default=None
        Only words in this set are kept; ``None`` keeps every word.
    encoding : str, default="utf-8"
        Encoding of the words (and, for text files, of the numbers).
    sink : callable, default=None
        Called with a line of progress each time another tenth of the file
        (of its size on disk) is read, and with a summary at the end;
        ``None`` reports nothing.

    Returns
    -------
    words : list of str
        The kept words, in file order.
    vectors : ndarray of shape (len(words), dim), float32
        Their vectors.

    Raises
    ------
    ValueError
        If ``path`` is not a regular file, ``fmt`` or ``encoding`` is unknown,
        or the content is not a vector file of that format (the message names
        the file, and the line for text files): a declared dimension above
        ``MAX_DIM`` or below 1, a line or binary word longer than
        ``MAX_LINE`` bytes, a header count that disagrees with the records, a
        damaged compressed stream, non-numeric, NaN or infinite values.
    """
    path = os.fspath(path)
    if fmt not in FORMATS:
        raise ValueError(f"pretrained_format must be one of {FORMATS}, got {fmt!r}.")
    try:
        codecs.getincrementaldecoder(encoding)
    except LookupError:
        raise ValueError(f"encoding={encoding!r} is not a text encoding Python knows.") from None
    if not os.path.isfile(path):
        raise ValueError(f"pretrained vector file {path!r} does not exist.")
    kind, wrap = _compression(path)
    start = time.perf_counter()
    try:
        with open(path, "rb") as raw, wrap(raw) as handle:
            progress = None if sink is None else _Progress(raw, path, sink)
            blocks = _Blocks(handle, path, progress)
            words, vectors, n_read = _read(blocks, path, fmt, keep, encoding)
    except (EOFError, OSError, zlib.error) as exc:
        if kind is None:
            raise
        raise ValueError(
            f"{path} is a damaged {kind} file: {str(exc) or type(exc).__name__}."
        ) from None
    if sink is not None:
        sink(
            f"read {n_read:,} vectors of dimension {vectors.shape[1]} from "
            f"{os.path.basename(path)} in {time.perf_counter() - start:.1f} s; "
            f"kept {len(words):,}"
        )
    return words, vectors


def _compression(path):
    with open(path, "rb") as handle:
        start = handle.read(3)
    suffix = os.path.splitext(path)[1].lower()
    for name, (magic, wrap) in _COMPRESSIONS.items():
        if start.startswith(magic):
            return name.lstrip("."), wrap
    if suffix in _COMPRESSIONS:
        raise ValueError(
            f"{path} is named {suffix} but does not hold {suffix.lstrip('.')}-compressed "
            "data (damaged, or misnamed)."
        )
    return None, contextlib.nullcontext


class _Progress:
    """Reports how much of the file (on disk) is read, once per tenth crossed."""

    def __init__(self, raw, path, sink):
        self.raw = raw
        self.name = os.path.basename(path)
        self.sink = sink
        self.size = os.fstat(raw.fileno()).st_size
        self.reported = 0  # tenths already reported

    def __call__(self):
        if self.size <= _BLOCK:
            return  # read in one go: the summary says all there is
        done = self.raw.tell()
        tenths = 10 * done // self.size
        if tenths > self.reported:
            self.reported = tenths
            self.sink(
                f"reading {self.name}: {tenths * 10}% "
                f"({done / 1e6:,.1f} of {self.size / 1e6:,.1f} MB)"
            )


class _Blocks:
    """A binary stream read in large blocks, cut into lines or word2vec records.

    The buffer holds the unread part of the current block(s): one block, plus
    the line or record in progress, which :data:`MAX_LINE` bounds.
    """

    def __init__(self, handle, path, on_block=None):
        self.handle = handle
        self.path = path
        self.on_block = on_block
        self.buffer = b""
        self.pos = 0

    def _more(self):
        """Append the next block to the unread bytes; ``False`` at the end of the stream."""
        block = self.handle.read(_BLOCK)
        if not block:
            return False
        # Copies the unread bytes: at most one block plus a line of MAX_LINE bytes.
        self.buffer = self.buffer[self.pos :] + block
        self.pos = 0
        if self.on_block is not None:
            self.on_block()
        return True

    def _too_long(self, what):
        return ValueError(
            f"{self.path}: {what} longer than {MAX_LINE:,} bytes; not a vector file of this "
            "format (binary read as text, or text without line breaks?)."
        )

    def skip(self, prefix):
        """Skip ``prefix`` if the unread bytes start with it."""
        while len(self.buffer) - self.pos < len(prefix) and self._more():
            pass
        if self.buffer.startswith(prefix, self.pos):
            self.pos += len(prefix)

    def line(self):
        """The next line without its newline (the last one may lack it), or ``None`` at the end."""
        searched = 0  # unread bytes already known to hold no newline
        while (end := self.buffer.find(b"\n", self.pos + searched)) < 0:
            searched = len(self.buffer) - self.pos
            if searched > MAX_LINE:
                raise self._too_long("a line")
            if not self._more():
                if not searched:
                    return None
                end = len(self.buffer)
                break
        line = self.buffer[self.pos : end]
        self.pos = min(end + 1, len(self.buffer))
        return line

    def peek_line(self, limit):
        """The next line without its newline, or its first ``limit`` bytes, left unread."""
        while (end := self.buffer.find(b"\n", self.pos, self.pos + limit)) < 0:
            if len(self.buffer) - self.pos >= limit or not self._more():
                end = min(len(self.buffer), self.pos + limit)
                break
        return self.buffer[self.pos : end]

    def record(self, n_bytes):
        """The next ``word `` + ``n_bytes`` record, or ``None`` if the file ends first."""
        while True:
            space = self.buffer.find(b" ", self.pos)
            if space >= 0 and len(self.buffer) - space - 1 >= n_bytes:
                word = self.buffer[self.pos : space]
                self.pos = space + 1 + n_bytes
                return word.lstrip(b"\n"), self.buffer[space + 1 : self.pos]
            if space < 0 and len(self.buffer) - self.pos > MAX_LINE:
                raise self._too_long("a word")
            if not self._more():
                return None

    def only_space_left(self):
        """Whether nothing but whitespace remains to be read (it is consumed)."""
        while True:
            if self.buffer[self.pos :].strip():
                return False
            self.pos = len(self.buffer)
            if not self._more():
                return True


def _parse_header(line):
    # bytes.isdigit() accepts ASCII digits only (str.isdigit() also takes "²").
    parts = line.split()
    if len(parts) == 2 and all(p.isdigit() for p in parts):
        return int(parts[0]), int(parts[1])
    return None


def _read(blocks, path, fmt, keep, encoding):
    if codecs.lookup(encoding).name == "utf-8":
        blocks.skip(_BOM)
    first = blocks.peek_line(_HEADER_PEEK)
    header = _parse_header(first) if len(first) < _HEADER_PEEK else None
    if fmt == "glove" or (fmt == "auto" and header is None):
        return _read_body(blocks, path, "glove", None, keep, encoding)
    if header is None:
        kind = "binary" if fmt == "binary" else "text"
        raise ValueError(
            f"{path}, line 1: expected a 'count dimension' header for word2vec {kind} "
            f"(pretrained_format={fmt!r}), got {first[:60]!r}."
        )
    if not 1 <= header[1] <= MAX_DIM:
        raise ValueError(
            f"{path}, line 1: the header declares vectors of dimension {header[1]:,}; "
            f"this reader accepts 1 to {MAX_DIM:,}."
        )
    blocks.line()
    if fmt == "auto":
        fmt = "word2vec" if _is_text_record(blocks.peek_line(MAX_LINE), header[1]) else "binary"
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
    return words, np.asarray(rows, dtype=np.float32).reshape(len(rows), dim), count


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
            if dim > MAX_DIM:
                raise ValueError(
                    f"{path}, line {lineno}: a vector of dimension {dim:,}; this reader "
                    f"accepts 1 to {MAX_DIM:,}."
                )
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
        if b"\n" in record[0]:
            # word2vec separates records by whitespace; a line break inside a
            # word means the records are misaligned (e.g. a text file whose
            # header gives the wrong dimension).
            raise ValueError(
                f"{path}: word {index + 1} holds a line break: not word2vec binary with "
                f"vectors of dimension {dim}."
            )
        try:
            token = record[0].decode(encoding)
        except UnicodeDecodeError:
            raise ValueError(f"{path}: word {index + 1} is not valid {encoding}.") from None
        if keep is None or token in keep:
            words.append(token)
            indices.append(index)
            data += record[1]
    if not blocks.only_space_left():
        raise ValueError(
            f"{path}: the header announces {count} vectors but more data follows them."
        )
    rows = np.frombuffer(bytes(data), dtype="<f4").reshape(len(words), dim)
    finite = np.isfinite(rows).all(axis=1)
    if not finite.all():
        bad = indices[int(np.argmin(finite))]
        raise ValueError(f"{path}: vector {bad + 1} holds NaN or infinity.")
    return words, rows


def _to_floats(values, path, lineno):
    try:
        # Overflow to infinity is refused below, with the line.
        with np.errstate(over="ignore"):
            row = np.asarray(values, dtype=np.float32)
    except ValueError:
        bad = next((v for v in values if not _is_float(v)), values[0])
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
