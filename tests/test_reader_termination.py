"""Every reader of a file format ends, whatever the bytes (issue 27).

The readers: word vectors (word2vec text and binary, GloVe; plain, gzip,
bzip2), gettext ``.mo`` and ``.po`` catalogues, ``load_gettext`` over folders
of them, and ``load_weights``. Each is run on generated files, on files
mutated in the ways real files differ (line endings, byte order marks, blank
lines, missing or extra final newlines, headers that lie), on every
truncation of a small file, on random bytes, and on files that declare huge
sizes. Every read runs under a time limit that the test enforces itself, so a
hang fails the test instead of stalling the suite; where a file declares huge
sizes, the memory the read allocated is measured too.
"""

import bz2
import gettext
import gzip
import json
import os
import struct
import tracemalloc

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sklearn_lama import Word2VecVectorizer, __version__, load_weights, save_weights
from sklearn_lama._main._files import read_labelled_file
from sklearn_lama.datasets import load_gettext
from sklearn_lama.datasets._gettext import read_mo, read_po
from sklearn_lama.text import _vector_files
from sklearn_lama.text._vector_files import MAX_DIM, MAX_LINE, load_vectors
from sklearn_lama.utils import _persistence
from tests._time_limit import time_limit
from tests._tolerances import Exact, assert_identical

from .test_gettext import PO, mo_bytes

# Fixed examples (derandomize) so that CI runs are reproducible; the deadline
# is replaced by the time limit below, which also covers shrinking.
BOUNDED = settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# Every file here is at most a few kilobytes and reads in milliseconds; the
# limit only has to tell a hang from a slow, shared CI machine.
LIMIT_S = 5.0


def outcome(read, *args, **kwargs):
    """What ``read`` gives within the time limit: its result, or the ValueError it raised.

    Any other exception (IndexError, struct.error, UnicodeDecodeError, ...)
    propagates and fails the test: bad content must be a ValueError.
    """
    with time_limit(LIMIT_S):
        try:
            return read(*args, **kwargs)
        except ValueError as exc:
            return exc


def traced(read, *args, **kwargs):
    """:func:`outcome`, and the peak of the memory allocated meanwhile (numpy's included)."""
    tracemalloc.start()
    try:
        return outcome(read, *args, **kwargs), tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def truncations(data):
    """Every strict prefix of ``data``, the empty one included."""
    return (data[:end] for end in range(len(data)))


@st.composite
def mutated(draw, data):
    """``data`` with a few bytes replaced, deleted or inserted."""
    data = bytearray(data)
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(data)))
        op = draw(st.sampled_from(["replace", "delete", "insert"]))
        if op == "replace" and at < len(data):
            data[at] = draw(st.integers(0, 255))
        elif op == "delete":
            del data[at : at + draw(st.integers(1, 8))]
        else:
            data[at:at] = draw(st.binary(min_size=1, max_size=8))
    return bytes(data)


# ------------------------------------------------------------------ word vectors
COMPRESS = {"": lambda b: b, ".gz": gzip.compress, ".bz2": bz2.compress}
# Whitespace and control characters separate fields; a BOM would be skipped.
WORD = st.text(
    st.characters(
        blacklist_categories=("Cs", "Cc", "Zs", "Zl", "Zp"), blacklist_characters="\ufeff"
    ),
    min_size=1,
    max_size=5,
)
FLOAT = st.floats(width=32, allow_nan=False, allow_infinity=False)


def _vector_file(rows, form, newline=b"\n", final=b"\n", blank=None, bom=b"", shift=0):
    """A vector file of ``rows`` (word -> float32 values) in ``form``.

    ``newline`` ends each text line, ``final`` replaces the newline after the
    last record, ``blank`` (text only; ``None``: none) is a blank line put
    after the first record, ``bom`` starts the file, ``shift`` is added to the
    count the header announces.
    """
    dim = len(next(iter(rows.values())))
    header = f"{len(rows) + shift} {dim}".encode() + newline
    if form == "binary":
        records = b"".join(
            w.encode() + b" " + np.asarray(v, "<f4").tobytes() + b"\n" for w, v in rows.items()
        )
        return bom + header + records[:-1] + final
    lines = [w.encode() + b" " + " ".join(map(repr, v)).encode() for w, v in rows.items()]
    if blank is not None:
        lines.insert(1, blank)
    body = newline.join(lines) + final.replace(b"\n", newline)
    return bom + (header if form == "word2vec" else b"") + body


def _write(tmp_path, name, data):
    path = tmp_path / name
    path.write_bytes(data)
    return path


@st.composite
def vector_files(draw):
    words = draw(st.lists(WORD, min_size=1, max_size=4, unique=True))
    dim = draw(st.integers(1, 3))
    rows = {
        w: [float(np.float32(x)) for x in draw(st.lists(FLOAT, min_size=dim, max_size=dim))]
        for w in words
    }
    form = draw(st.sampled_from(["glove", "word2vec", "binary"]))
    text = form != "binary"
    options = dict(
        newline=draw(st.sampled_from([b"\n", b"\r\n"])) if text else b"\n",
        final=draw(st.sampled_from([b"", b"\n", b"\n\n"])),
        blank=draw(st.sampled_from([None, b"", b"  "])) if text else None,
        bom=draw(st.sampled_from([b"", b"\xef\xbb\xbf"])),
        # A header count below 0 is no header: the file would be GloVe.
        shift=draw(st.integers(-min(2, len(words)), 2)) if form != "glove" else 0,
    )
    suffix = draw(st.sampled_from(list(COMPRESS)))
    return rows, form, options, suffix


@BOUNDED
@given(vector_files(), st.booleans())
def test_vector_files_read_exactly_or_refuse_a_lying_header(tmp_path_factory, case, auto):
    rows, form, options, suffix = case
    path = _write(
        tmp_path_factory.mktemp("v"),
        f"vectors{suffix}",
        COMPRESS[suffix](_vector_file(rows, form, **options)),
    )
    # "auto" on binary floats may see a text line by chance; binary is tested explicitly.
    fmt = "auto" if auto and form != "binary" else form
    result = outcome(load_vectors, path, fmt)
    if options["shift"]:
        assert isinstance(result, ValueError)
        assert str(path) in str(result)
    else:
        assert not isinstance(result, ValueError), result
        words, vectors = result
        assert words == list(rows)
        assert_identical(vectors, np.array(list(rows.values()), np.float32), why=Exact.COPY)


@pytest.mark.parametrize("suffix", list(COMPRESS))
@pytest.mark.parametrize("form", ["glove", "word2vec", "binary"])
def test_vector_files_end_at_every_truncation(tmp_path, form, suffix):
    rows = {"cat": [1.0, 0.5], "dog": [0.0, -2.0], "été": [3.0, 1e-3]}
    data = COMPRESS[suffix](_vector_file(rows, form))
    for fmt in ("auto", form):
        for prefix in truncations(data):
            result = outcome(load_vectors, _write(tmp_path, f"v{suffix}", prefix), fmt)
            if not isinstance(result, ValueError):
                # A truncated file gives a prefix of its vectors, all exact but the
                # last, whose last number may be cut (a final newline is optional;
                # a GloVe file cut in its first line holds one shorter vector).
                words, vectors = result
                assert words == list(rows)[: len(words)]
                if len(words) > 1:
                    assert_identical(vectors[:-1], [rows[w] for w in words[:-1]], why=Exact.COPY)


@BOUNDED
@given(st.data())
def test_mutated_vector_files_end(tmp_path_factory, data):
    rows, form, options, suffix = data.draw(vector_files())
    content = _vector_file(rows, form, **options)
    if data.draw(st.booleans()):
        content = COMPRESS[suffix](data.draw(mutated(content)))
    else:
        content = data.draw(mutated(COMPRESS[suffix](content)))
    path = _write(tmp_path_factory.mktemp("v"), f"vectors{suffix}", content)
    outcome(load_vectors, path, data.draw(st.sampled_from(_vector_files.FORMATS)))


@BOUNDED
@given(st.binary(max_size=300), st.sampled_from(_vector_files.FORMATS))
def test_random_bytes_as_vector_files_end(tmp_path_factory, content, fmt):
    outcome(load_vectors, _write(tmp_path_factory.mktemp("v"), "vectors", content), fmt)


def test_empty_and_one_byte_vector_files_are_refused(tmp_path):
    for content in [b"", *(bytes([i]) for i in range(256))]:
        for fmt in _vector_files.FORMATS:
            result = outcome(load_vectors, _write(tmp_path, "v.txt", content), fmt)
            assert isinstance(result, ValueError), (content, fmt, result)


@pytest.mark.parametrize("suffix", list(COMPRESS))
def test_file_without_final_newline_issue_27(tmp_path, suffix):
    # The issue's case: a well-formed GloVe file whose last line has no
    # newline (and a .gz file written with "\n".join(lines)) made fit spin.
    lines = ["cat 1 0", "dog 0 1", "bird 1 1"]
    path = _write(tmp_path, f"glove.txt{suffix}", COMPRESS[suffix]("\n".join(lines).encode()))
    vec = Word2VecVectorizer(pretrained=path, min_count=1, oov_vectors="drop")
    with time_limit(LIMIT_S):
        vec.fit(["cat dog", "dog bird"])
    assert_identical(vec.embedding_[vec.vocabulary_["bird"]], [1, 1], why=Exact.COPY)
    # And in the other forms.
    rows = {"cat": [1.0, 0.0], "dog": [0.0, 1.0]}
    for form in ("word2vec", "binary"):
        data = COMPRESS[suffix](_vector_file(rows, form, final=b""))
        words, vectors = outcome(load_vectors, _write(tmp_path, f"v{suffix}", data), form)
        assert words == ["cat", "dog"]
        assert_identical(vectors, [[1, 0], [0, 1]], why=Exact.COPY)


def test_huge_declared_sizes_are_refused_without_allocating(tmp_path):
    text = b"cat 1 0\ndog 0 1\n"
    binary = _vector_file({"cat": [1.0, 0.0], "dog": [0.0, 1.0]}, "binary").partition(b"\n")[2]
    cases = [
        (f"3 {dim}\n".encode() + binary, fmt, "dimension")
        for dim in (MAX_DIM + 1, 10**12, 10**40, 0)
        for fmt in ("auto", "word2vec", "binary")
    ]
    cases += [
        (b"1000000000000000000 2\n" + text, "word2vec", "announces 1000000000000000000 vectors"),
        (
            b"1000000000000000000 2\n" + binary,
            "binary",
            "truncated after 2 of 1000000000000000000",
        ),
        (b"1000000000000000000 2\n" + binary, "auto", "truncated after 2 of 1000000000000000000"),
    ]
    for content, fmt, match in cases:
        result, peak = traced(load_vectors, _write(tmp_path, "v", content), fmt)
        assert isinstance(result, ValueError) and match in str(result), (content[:30], result)
        assert peak < 4 * 2**20  # a block of 1 MiB as read, and a copy or two


def test_line_and_word_lengths_are_bounded(tmp_path):
    # 20 MiB without a line break, or a binary word without its space, read
    # from a 20-KiB gzip file: refused once MAX_LINE bytes are held.
    blob = gzip.compress(b"a" * (20 * 2**20))
    for data, fmt, what in [
        (blob, "glove", "a line longer"),
        (gzip.compress(b"2 3\n" + b"a" * (20 * 2**20)), "binary", "a word longer"),
    ]:
        result, peak = traced(load_vectors, _write(tmp_path, "v.gz", data), fmt)
        assert isinstance(result, ValueError) and what in str(result), result
        assert peak < 3 * MAX_LINE  # the line so far and its copy as a block is added


def test_a_vector_beyond_the_dimension_bound_is_refused(tmp_path):
    line = b"cat" + b" 0" * (MAX_DIM + 1) + b"\n"
    result = outcome(load_vectors, _write(tmp_path, "v.txt", line), "glove")
    assert isinstance(result, ValueError) and "dimension 65,537" in str(result)


def test_binary_header_that_undercounts_or_hides_text(tmp_path):
    rows = {"cat": [1.0, 0.0], "dog": [0.0, 1.0]}
    result = outcome(
        load_vectors, _write(tmp_path, "v.bin", _vector_file(rows, "binary", shift=-1))
    )
    assert isinstance(result, ValueError) and "more data follows" in str(result)
    # A text file whose header gives a wrong dimension, read as binary.
    text = b"2 1\ncat 1.0 0.0\ndog 0.0 1.0\n"
    result = outcome(load_vectors, _write(tmp_path, "v.txt", text), "binary")
    assert isinstance(result, ValueError) and "line break" in str(result)


# ------------------------------------------------------------------ gettext .mo
MESSAGE = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\0"), max_size=8
)
UTF8_HEADER = ("", "Content-Type: text/plain; charset=UTF-8\n")


@BOUNDED
@given(st.dictionaries(MESSAGE.filter(bool), MESSAGE, max_size=5), st.sampled_from("<>"))
def test_mo_files_read_as_python_gettext_reads_them(tmp_path_factory, messages, order):
    # Python's GNUTranslations is the reference reader of the format.
    pairs = [UTF8_HEADER, *messages.items()]
    path = _write(tmp_path_factory.mktemp("mo"), "x.mo", mo_bytes(pairs, order))
    read = outcome(read_mo, path)
    assert read == sorted(pairs)
    with open(path, "rb") as file:
        reference = gettext.GNUTranslations(file)._catalog
    assert dict(read) == reference


SMALL_MO = mo_bytes([UTF8_HEADER, ("File not found", "Fichier introuvable"), ("a\x04b", "c")])


def test_mo_files_end_at_every_truncation(tmp_path):
    for prefix in truncations(SMALL_MO):
        result = outcome(read_mo, _write(tmp_path, "x.mo", prefix))
        # Only the last string's closing NUL may go missing unnoticed.
        assert isinstance(result, ValueError) or len(prefix) == len(SMALL_MO) - 1


@BOUNDED
@given(
    st.one_of(mutated(SMALL_MO), mutated(mo_bytes([UTF8_HEADER], ">")), st.binary(max_size=200))
)
def test_mutated_mo_files_end(tmp_path_factory, content):
    outcome(read_mo, _write(tmp_path_factory.mktemp("mo"), "x.mo", content))


def test_empty_and_one_byte_mo_files_are_refused(tmp_path):
    for content in [b"", *(bytes([i]) for i in range(256))]:
        assert isinstance(outcome(read_mo, _write(tmp_path, "x.mo", content)), ValueError)


def _mo_with(n, tables=None, entries=None, revision=0):
    """A .mo header announcing ``n`` strings, with ``entries`` as both tables."""
    entries = entries or []
    table = b"".join(struct.pack("<2I", length, offset) for length, offset in entries)
    start = 28 if tables is None else tables
    return struct.pack("<7I", 0x950412DE, revision, n, start, start, 0, 0) + table + b"x" * 1024


@pytest.mark.parametrize(
    "content, match",
    [
        (_mo_with(2**32 - 1), "table of 4,294,967,295 messages runs past the end"),
        (_mo_with(1, tables=2**32 - 8), "runs past the end"),
        (_mo_with(1, entries=[(2**32 - 1, 0)]), "lies past its end"),
        (_mo_with(1, entries=[(8, 2**32 - 4)]), "lies past its end"),
        # 100 entries pointing at the same kilobyte: 100 KB of strings from 2 KB.
        (_mo_with(100, entries=[(1000, 20)] * 100), "strings overlap"),
        (_mo_with(0, revision=2 << 16), "revision 2.0"),
        (mo_bytes([("", "charset=rot13\n"), ("a", "b")]), "charset 'rot13'"),
        (mo_bytes([("", "charset=no-such-codec\n"), ("a", "b")]), "charset 'no-such-codec'"),
        (mo_bytes([("", "charset=idna\n"), ("a", "." * 100)]), "charset 'idna'"),
    ],
)
def test_mo_files_that_declare_too_much_are_refused(tmp_path, content, match):
    result, peak = traced(read_mo, _write(tmp_path, "x.mo", content))
    assert isinstance(result, ValueError) and match in str(result), result
    assert "x.mo" in str(result)
    assert peak < 2**20


# ------------------------------------------------------------------ gettext .po
def _po_string(text, pieces):
    """``text`` quoted as in a .po file, cut into about ``pieces`` continuation lines."""
    size = max(1, -(-len(text) // pieces))
    chunks = [text[i : i + size] for i in range(0, len(text), size)] or [""]
    escapes = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t"}
    return "\n".join('"' + "".join(escapes.get(c, c) for c in chunk) + '"' for chunk in chunks)


PO_TEXT = st.text(
    st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp"), whitelist_characters="\n\t"),
    max_size=12,
)


@BOUNDED
@given(
    st.dictionaries(PO_TEXT.filter(bool), PO_TEXT, min_size=1, max_size=4),
    st.integers(1, 3),
    st.sampled_from(["\n", "\r\n"]),
    st.sampled_from(["", "\n", "\n\n"]),
    st.booleans(),
)
def test_po_files_read_exactly(tmp_path_factory, messages, pieces, newline, final, bom):
    entries = [
        f"msgid {_po_string(k, pieces)}\nmsgstr {_po_string(v, pieces)}"
        for k, v in messages.items()
    ]
    text = ("\ufeff" if bom else "") + "\n\n".join(["# comment", *entries]) + final
    path = _write(tmp_path_factory.mktemp("po"), "x.po", text.replace("\n", newline).encode())
    assert outcome(read_po, path) == list(messages.items())


def test_po_files_end_at_every_truncation(tmp_path):
    data = PO.encode()
    for prefix in truncations(data):
        result = outcome(read_po, _write(tmp_path, "x.po", prefix))
        assert isinstance(result, (list, ValueError))


@BOUNDED
@given(st.one_of(mutated(PO.encode()[:400]), st.binary(max_size=200)))
def test_mutated_po_files_end(tmp_path_factory, content):
    result = outcome(read_po, _write(tmp_path_factory.mktemp("po"), "x.po", content))
    assert isinstance(result, (list, ValueError))
    if isinstance(result, ValueError):
        assert "x.po, line " in str(result)


def test_empty_and_one_byte_po_files_end(tmp_path):
    for content in [b"", *(bytes([i]) for i in range(256))]:
        assert outcome(read_po, _write(tmp_path, "x.po", content)) == []


def test_po_string_of_many_lines_ends(tmp_path):
    # 200,000 continuation lines: adding each to a growing str copied it,
    # about 200 GB of copying in all.
    path = _write(tmp_path, "x.po", b'msgid "a"\nmsgstr ""\n' + b'"0123456789"\n' * 200_000)
    assert outcome(read_po, path) == [("a", "0123456789" * 200_000)]


# ------------------------------------------------------------------ load_gettext
def _locale(folder, files):
    messages = folder / "fr" / "LC_MESSAGES"
    messages.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        (messages / name).write_bytes(content)
    return folder


@BOUNDED
@given(st.one_of(mutated(SMALL_MO), mutated(PO.encode())), st.sampled_from(["x.mo", "x.po"]))
def test_load_gettext_ends_on_damaged_catalogues(tmp_path_factory, content, name):
    folder = _locale(tmp_path_factory.mktemp("locale"), {name: content, "ok.po": PO.encode()})
    result = outcome(load_gettext, "fr", directory=folder, subset="all", min_words=1)
    if isinstance(result, ValueError):
        assert "x.mo" in str(result) or "x.po" in str(result)
    else:
        assert len(result.data) >= 4  # the intact catalogue's pairs at least


def test_load_gettext_does_not_open_a_fifo(tmp_path):
    folder = _locale(tmp_path, {"ok.po": PO.encode()})
    os.mkfifo(folder / "fr" / "LC_MESSAGES" / "blocked.mo")
    result = outcome(load_gettext, "fr", directory=folder, subset="all")
    assert result.catalogues == [str(folder / "fr" / "LC_MESSAGES" / "ok.po")]
    (folder / "fr" / "LC_MESSAGES" / "ok.po").unlink()
    result = outcome(load_gettext, "fr", directory=folder)
    assert isinstance(result, ValueError) and "No gettext catalogue" in str(result)


# ------------------------------------------------------------------ load_weights
@pytest.fixture(scope="module")
def weights(tmp_path_factory):
    """The bytes of a small weights file (a fitted Word2VecVectorizer)."""
    vec = Word2VecVectorizer(pretrained=None, vector_size=2, min_count=1, epochs=1, random_state=0)
    path = tmp_path_factory.mktemp("weights") / "w.pt"
    save_weights(vec.fit(["a b", "b c"]), path)
    return path.read_bytes()


def _signed(data):
    """``data`` with a valid digest when its header parses (what a forger would write)."""
    try:
        header, size = _persistence._parse_header(data)
    except ValueError:
        return data
    body = data[8 + size :]
    metadata = header.setdefault("__metadata__", {})
    metadata["sha256"] = _persistence._digest(header, body)
    text = json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + body


def _forged(header, body=b""):
    """A signed file of ``header`` (the file's own metadata added) and tensor bytes ``body``."""
    metadata = {
        "format": "sklearn_lama.weights",
        "format_version": "3",
        "library_version": __version__,
        "estimator": '{"class": "Word2VecVectorizer", "params": {}, "state": {}}',
    }
    text = json.dumps({"__metadata__": metadata, **header}).encode()
    return _signed(struct.pack("<Q", len(text)) + text + body)


def test_weights_file_reads_back(weights, tmp_path):
    loaded = outcome(load_weights, _write(tmp_path, "w.pt", weights))
    assert isinstance(loaded, Word2VecVectorizer)
    # The header written again by json (other spacing), signed again: it still reads.
    assert outcome(load_weights, _write(tmp_path, "w.pt", _signed(weights))).vocabulary_


def test_weights_file_refused_at_every_truncation(weights, tmp_path):
    for prefix in truncations(weights):
        assert isinstance(outcome(load_weights, _write(tmp_path, "w.pt", prefix)), ValueError)


@BOUNDED
@given(data=st.data())
def test_mutated_weights_files_end(weights, tmp_path_factory, data):
    folder = tmp_path_factory.mktemp("w")
    damaged = data.draw(mutated(weights))
    if damaged != weights:  # the digest catches any change of the stored bytes
        assert isinstance(outcome(load_weights, _write(folder, "w.pt", damaged)), ValueError)
    # A forged file passes the digest: safetensors' reader, the JSON and the rebuilding
    # must end too.
    forged = _signed(data.draw(mutated(weights)))
    outcome(load_weights, _write(folder, "w.pt", forged))


@pytest.mark.parametrize(
    "change",
    [
        lambda data: b"",
        lambda data: data[:1],
        lambda data: b"\xef\xbb\xbf" + data,  # a BOM
        lambda data: data[:8] + data[8:].replace(b",", b",\r\n", 1),  # a line break
        lambda data: data + b"\n",
        lambda data: data[: 8 + int.from_bytes(data[:8], "little")],  # the header alone
    ],
)
def test_weights_files_changed_as_text_are_refused(weights, tmp_path, change):
    assert isinstance(outcome(load_weights, _write(tmp_path, "w.pt", change(weights))), ValueError)


@pytest.mark.parametrize(
    "header, body",
    [
        # A tensor that declares 10**12 elements backed by 4 bytes.
        ({"x": {"dtype": "F32", "shape": [10**12], "data_offsets": [0, 4]}}, b"\0" * 4),
        # Offsets past the end of the file.
        ({"x": {"dtype": "F32", "shape": [2**40], "data_offsets": [0, 2**42]}}, b""),
        # A shape whose element count overflows 64 bits.
        ({"x": {"dtype": "F32", "shape": [2**40] * 3, "data_offsets": [0, 4]}}, b"\0" * 4),
    ],
)
def test_forged_weights_that_declare_huge_sizes_are_refused(tmp_path, header, body):
    result, peak = traced(load_weights, _write(tmp_path, "w.pt", _forged(header, body)))
    assert isinstance(result, ValueError) and "SafetensorError" in str(result), result
    assert peak < 10**7


def test_weights_header_that_declares_a_huge_length_is_refused(weights, tmp_path):
    data = struct.pack("<Q", 2**63) + weights[8:]
    result, peak = traced(load_weights, _write(tmp_path, "w.pt", data))
    assert isinstance(result, ValueError) and "longer than the file" in str(result)
    assert peak < 10**7


def test_deeply_nested_json_is_refused(tmp_path):
    deep = "[" * 100_000 + "]" * 100_000
    header = b'{"__metadata__": ' + deep.encode() + b"}"
    in_header = struct.pack("<Q", len(header)) + header
    result = outcome(load_weights, _write(tmp_path, "w.pt", in_header))
    assert isinstance(result, ValueError) and "not JSON" in str(result)
    metadata = {
        "format": "sklearn_lama.weights",
        "format_version": "3",
        "library_version": __version__,
        "estimator": deep,
    }
    in_metadata = _persistence._signed({}, metadata)
    result = outcome(load_weights, _write(tmp_path, "w.pt", in_metadata))
    assert isinstance(result, ValueError) and "RecursionError" in str(result)


def test_weights_paths_that_never_end_are_refused(tmp_path):
    os.mkfifo(tmp_path / "fifo.pt")
    for path in (tmp_path / "fifo.pt", "/dev/zero", tmp_path):
        result = outcome(load_weights, path)
        assert isinstance(result, ValueError), result


# The main job's labelled files (``python -m sklearn_lama --data``): CSV and JSON Lines.
LABELLED_CSV = b'text,label\n"a ""quoted"", text",pos\nplain text,neg\n"two\nlines",pos\n'
LABELLED_JSONL = b'{"text": "a text", "label": "pos"}\n{"text": "more", "label": "neg"}\n'


@pytest.mark.parametrize("name, content", [("d.csv", LABELLED_CSV), ("d.jsonl", LABELLED_JSONL)])
def test_labelled_files_end_at_every_truncation(tmp_path, name, content):
    for suffix, compress in (("", bytes), (".gz", gzip.compress)):
        for part in truncations(content):
            path = _write(tmp_path, name + suffix, compress(part))
            result = outcome(read_labelled_file, path)
            if not isinstance(result, ValueError):
                texts, labels = result
                assert len(texts) == len(labels) >= 2


@BOUNDED
@given(
    st.one_of(mutated(LABELLED_CSV), mutated(LABELLED_JSONL), st.binary(max_size=200)),
    st.sampled_from(["d.csv", "d.jsonl", "d.csv.gz"]),
)
def test_mutated_labelled_files_end(tmp_path_factory, content, name):
    path = _write(tmp_path_factory.mktemp("l"), name, content)
    outcome(read_labelled_file, path)
