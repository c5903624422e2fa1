"""Reading word vectors from word2vec text/binary and GloVe files.

The readers parse the files themselves (nothing is unpickled) and report the file
and line of anything malformed.
"""

import os

import numpy as np

FORMATS = ("auto", "word2vec", "glove", "binary")


def _resolve_format(path, fmt):
    if fmt not in FORMATS:
        raise ValueError(f"pretrained_format must be one of {FORMATS}, got {fmt!r}.")
    if fmt != "auto":
        return fmt
    return "binary" if str(path).endswith(".bin") else "text"


def load_vectors(path, fmt="auto", keep=None, encoding="utf-8"):
    """Read word vectors from ``path``.

    Parameters
    ----------
    path : str or path-like
        The vector file.
    fmt : {"auto", "word2vec", "glove", "binary"}
        ``"word2vec"``: text with a ``count dim`` header line; ``"glove"``: text
        without header; ``"binary"``: word2vec's binary format; ``"auto"``:
        binary for a ``.bin`` suffix, otherwise text with the header detected.
    keep : set of str, optional
        Only words in this set are kept (the others are still validated).

    Returns
    -------
    words : list of str
    vectors : ndarray of shape (len(words), dim), float32
    """
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise ValueError(f"pretrained vector file {path!r} does not exist.")
    fmt = _resolve_format(path, fmt)
    if fmt == "binary":
        return _load_binary(path, keep, encoding)
    return _load_text(path, fmt, keep, encoding)


def _parse_header(line):
    parts = line.split()
    if len(parts) == 2 and all(p.isdigit() for p in parts):
        return int(parts[0]), int(parts[1])
    return None


def _load_text(path, fmt, keep, encoding):
    words, rows = [], []
    dim = expected = None
    seen = 0
    with open(path, encoding=encoding, errors="strict") as handle:
        try:
            for lineno, line in enumerate(handle, start=1):
                if lineno == 1 and fmt != "glove":
                    header = _parse_header(line)
                    if header is not None:
                        expected, dim = header
                        continue
                    if fmt == "word2vec":
                        raise ValueError(
                            f"{path}, line 1: expected a 'count dimension' header for "
                            f"pretrained_format='word2vec', got {line[:60]!r}."
                        )
                parts = line.rstrip("\n").rstrip(" ").split(" ")
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
                if keep is not None and parts[0] not in keep:
                    # Still validate the numbers so a corrupt file is never half-read.
                    _to_floats(parts[1:], path, lineno)
                    continue
                words.append(parts[0])
                rows.append(_to_floats(parts[1:], path, lineno))
        except UnicodeDecodeError as exc:
            raise ValueError(
                f"{path} is not valid {encoding} text ({exc.reason}); for word2vec's "
                "binary format use pretrained_format='binary'."
            ) from None
    if seen == 0:
        raise ValueError(f"pretrained vector file {path!r} holds no vectors.")
    if expected is not None and expected != seen:
        raise ValueError(
            f"{path}: the header announces {expected} vectors but the file holds {seen}."
        )
    vectors = np.asarray(rows, dtype=np.float32).reshape(len(rows), dim)
    return words, vectors


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


def _load_binary(path, keep, encoding):
    with open(path, "rb") as handle:
        header = _parse_header(handle.readline().decode("ascii", errors="replace"))
        if header is None:
            raise ValueError(
                f"{path}, line 1: word2vec binary files start with a 'count dimension' "
                "header."
            )
        count, dim = header
        words, rows = [], []
        for index in range(count):
            word = bytearray()
            while True:
                ch = handle.read(1)
                if ch == b"":
                    raise ValueError(
                        f"{path}: truncated after {index} of {count} vectors."
                    )
                if ch == b" ":
                    break
                if ch != b"\n":
                    word += ch
            raw = handle.read(4 * dim)
            if len(raw) != 4 * dim:
                raise ValueError(f"{path}: truncated after {index} of {count} vectors.")
            try:
                token = word.decode(encoding)
            except UnicodeDecodeError:
                raise ValueError(
                    f"{path}: word {index + 1} is not valid {encoding}."
                ) from None
            row = np.frombuffer(raw, dtype="<f4")
            if not np.all(np.isfinite(row)):
                raise ValueError(f"{path}: vector {index + 1} holds NaN or infinity.")
            if keep is None or token in keep:
                words.append(token)
                rows.append(row)
    if count == 0:
        raise ValueError(f"pretrained vector file {path!r} holds no vectors.")
    return words, np.asarray(rows, dtype=np.float32).reshape(len(rows), dim)
