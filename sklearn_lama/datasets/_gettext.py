"""Parallel text from the gettext message catalogues installed on the machine."""

import hashlib
import os
import re
import struct
from numbers import Integral, Real
from pathlib import Path

from sklearn.utils import Bunch

__all__ = ["load_gettext"]

# Where Debian-like systems install the catalogues of their packages (``<prefix>/share/locale``).
DEFAULT_DIRECTORIES = ("/usr/share/locale", "/usr/local/share/locale")

_MO_MAGIC = {b"\xde\x12\x04\x95": "<", b"\x95\x04\x12\xde": ">"}
# Magic, revision, number of strings, the two table offsets, hash table size and offset.
_MO_HEADER_SIZE = 28
_CONTEXT_SEPARATOR = "\x04"
_PLURAL_SEPARATOR = "\x00"


def read_mo(path):
    """``(msgid, msgstr)`` pairs of a compiled catalogue, in file order.

    A message with a context keeps the ``context\\x04`` prefix, a plural message its
    ``\\x00``-joined forms, so that callers can recognise both; the header (empty ``msgid``) is
    included. Strings are decoded with the header's charset, undecodable bytes replaced.

    The file is read whole and checked before any string is decoded: its tables must lie in
    the file, every string too, and the strings must not add up to more bytes than the file
    holds (``msgfmt`` stores each string once), so memory stays within a small multiple of
    the file's size. Anything else raises ``ValueError`` naming the file.
    """
    data = Path(path).read_bytes()
    order = _MO_MAGIC.get(data[:4])
    if order is None:
        raise ValueError(f"{path} is not a gettext .mo file (bad magic number).")
    if len(data) < _MO_HEADER_SIZE:
        raise ValueError(f"{path} is a truncated .mo file ({len(data)} bytes).")
    revision, n, originals, translations = struct.unpack(order + "4I", data[4:20])
    if revision >> 16 not in (0, 1):
        raise ValueError(
            f"{path}: .mo format revision {revision >> 16}.{revision & 0xFFFF}; this reader "
            "knows revisions 0 and 1."
        )
    tables = []
    for name, start in (("message", originals), ("translation", translations)):
        if start + 8 * n > len(data):
            raise ValueError(
                f"{path} is a damaged .mo file: its table of {n:,} {name}s runs past the end "
                f"of the file ({len(data):,} bytes)."
            )
        entries = list(struct.iter_unpack(order + "2I", data[start : start + 8 * n]))
        if any(offset + length > len(data) for length, offset in entries):
            raise ValueError(f"{path} is a damaged .mo file: a {name} lies past its end.")
        tables.append(entries)
    if sum(length for entries in tables for length, _ in entries) > len(data):
        raise ValueError(
            f"{path} is a damaged .mo file: its strings overlap (together longer than the file)."
        )

    def strings(entries):
        return [data[offset : offset + length] for length, offset in entries]

    ids, texts = strings(tables[0]), strings(tables[1])
    charset = _charset(texts[0].decode("ascii", "replace")) if n and not ids[0] else "utf-8"
    try:
        return [
            (i.decode(charset, "replace"), t.decode(charset, "replace"))
            for i, t in zip(ids, texts)
        ]
    # An unknown charset (LookupError), or a codec that fails even when told to
    # replace (UnicodeError, e.g. "idna"): the header names something unusable.
    except (LookupError, UnicodeError) as exc:
        raise ValueError(
            f"{path}: cannot decode the catalogue with its declared charset {charset!r} ({exc})."
        ) from None


def _charset(header):
    match = re.search(r"charset=([\w.-]+)", header)
    return match.group(1) if match and match.group(1).upper() != "CHARSET" else "utf-8"


_PO_ESCAPES = {
    "n": "\n",
    "t": "\t",
    "r": "\r",
    '"': '"',
    "\\": "\\",
    "a": "\a",
    "b": "\b",
    "f": "\f",
    "v": "\v",
}


def _unquote(text):
    text = text.strip()
    if len(text) < 2 or text[0] != '"' or text[-1] != '"':
        raise ValueError(f"expected a quoted string, got {text[:60]!r}")
    return re.sub(r"\\(.)", lambda m: _PO_ESCAPES.get(m.group(1), m.group(1)), text[1:-1])


def read_po(path):
    """``(msgid, msgstr)`` pairs of a source catalogue, encoded as :func:`read_mo` encodes them.

    Fuzzy entries (a guess that no translator confirmed) and obsolete entries (``#~``) are skipped,
    as ``msgfmt`` skips them when it compiles the catalogue. The file is read as UTF-8 (a byte
    order mark skipped, undecodable bytes replaced), one line at a time; a keyword not followed
    by a quoted string raises ``ValueError`` naming the file and line.
    """
    entries, entry, fuzzy, key = [], {}, False, None

    def close():
        nonlocal entry, fuzzy, key
        # Each string is kept as its pieces until the entry ends: adding a
        # piece to a growing str would copy it, quadratic in the lines.
        entry = {k: "".join(pieces) for k, pieces in entry.items()}
        if "msgid" in entry and not fuzzy:
            msgid = entry["msgid"]
            if "msgid_plural" in entry:
                msgid += _PLURAL_SEPARATOR + entry["msgid_plural"]
                forms = sorted(k for k in entry if k.startswith("msgstr["))
                msgstr = _PLURAL_SEPARATOR.join(entry[k] for k in forms)
            else:
                msgstr = entry.get("msgstr", "")
            if "msgctxt" in entry:
                msgid = entry["msgctxt"] + _CONTEXT_SEPARATOR + msgid
            entries.append((msgid, msgstr))
        entry, fuzzy, key = {}, False, None

    with open(path, encoding="utf-8-sig", errors="replace") as lines:
        for lineno, line in enumerate(lines, 1):
            line = line.strip()
            if not line or line.startswith("#~"):
                continue
            if line.startswith("#"):
                if line.startswith("#,") and "fuzzy" in line:
                    if "msgid" in entry:
                        close()
                    fuzzy = True
                continue
            try:
                if line.startswith('"'):
                    if key is not None:
                        entry[key].append(_unquote(line))
                    continue
                word, _, rest = line.partition(" ")
                if word in ("msgctxt", "msgid") and "msgid" in entry:
                    close()
                if word in ("msgctxt", "msgid", "msgid_plural", "msgstr") or word.startswith(
                    "msgstr["
                ):
                    key = word
                    entry[key] = [_unquote(rest)]
            except ValueError as exc:
                raise ValueError(f"{path}, line {lineno}: {exc}.") from None
    close()
    return entries


def _folders(directory):
    """The folders that ``directory`` names (``None``: the system's that exist), each checked."""
    if directory is None:
        return [folder for folder in DEFAULT_DIRECTORIES if os.path.isdir(folder)]
    if isinstance(directory, (str, os.PathLike)):
        directory = [directory]
    elif not isinstance(directory, (list, tuple)):
        raise TypeError(
            f"directory must be a path or a list of paths, got a {type(directory).__name__}."
        )
    if not directory:
        raise ValueError("directory is empty: give at least one folder, or None.")
    for folder in directory:
        if not isinstance(folder, (str, os.PathLike)):
            raise TypeError(f"directory holds {folder!r}, which is not a path.")
        if not os.path.isdir(folder):
            raise ValueError(f"directory={os.fspath(folder)!r} is not an existing folder.")
    return list(directory)


def _catalogues(folders, language):
    files = []
    for folder in folders:
        messages = Path(folder) / language / "LC_MESSAGES"
        if messages.is_dir():
            # Regular files only: opening a FIFO named like a catalogue would block.
            files.extend(
                sorted(p for p in messages.iterdir() if p.suffix in (".mo", ".po") and p.is_file())
            )
    return files


def _no_catalogue(folders, language, directory):
    where = " and ".join(map(str, folders or DEFAULT_DIRECTORIES))
    languages = sorted(
        {
            child.name
            for folder in folders
            for child in Path(folder).iterdir()
            if (child / "LC_MESSAGES").is_dir()
        }
    )
    shown = ", ".join(languages[:20]) + (", ..." if len(languages) > 20 else "")
    found = f"languages found there: {shown}" if languages else "no <language>/LC_MESSAGES there"
    advice = (
        "install translated packages (their catalogues go to /usr/share/locale), or pass "
        "directory="
        if directory is None
        else "pass another language or directory"
    )
    return ValueError(
        f"No gettext catalogue (.mo or .po) for language={language!r} under {where} "
        f"(directory={directory!r}); {found}. To load pairs, {advice}."
    )


def _check_arguments(language, subset, test_size, min_words, max_words, return_X_y):
    if not isinstance(language, str):
        raise TypeError(f"language must be a str such as 'fr', got a {type(language).__name__}.")
    if language in ("", ".", "..") or re.search(r"[/\\\0]", language):
        raise ValueError(f"language must be a locale folder name such as 'fr', got {language!r}.")
    if subset not in ("train", "test", "all"):
        raise ValueError(f"subset must be 'train', 'test' or 'all', got {subset!r}.")
    if not isinstance(test_size, Real) or isinstance(test_size, bool):
        raise TypeError(f"test_size must be a number in [0, 1], got {test_size!r}.")
    if not 0.0 <= test_size <= 1.0:
        raise ValueError(f"test_size must lie in [0, 1], got {test_size!r}.")
    if (subset, test_size) in (("test", 0), ("train", 1)):
        raise ValueError(f"subset={subset!r} with test_size={test_size!r} selects no message.")
    for name, value, low in (("min_words", min_words, 0), ("max_words", max_words, 1)):
        if value is None:
            continue
        if not isinstance(value, Integral) or isinstance(value, bool):
            raise TypeError(f"{name} must be an int or None, got {value!r}.")
        if value < low:
            raise ValueError(f"{name} must be at least {low}, got {value}.")
    if min_words is not None and max_words is not None and min_words > max_words:
        raise ValueError(f"min_words={min_words} is above max_words={max_words}: no message fits.")
    if not isinstance(return_X_y, bool):
        raise TypeError(f"return_X_y must be True or False, got {return_X_y!r}.")


def _read_catalogue(path, directory):
    read = read_mo if path.suffix == ".mo" else read_po
    try:
        return read(path)
    except OSError as exc:
        raise ValueError(
            f"The catalogue {path} cannot be read ({exc.strerror or exc}); pass a "
            f"directory= other than {directory!r} to leave it out."
        ) from None
    except ValueError as exc:
        raise ValueError(
            f"A damaged catalogue under directory={directory!r}: {exc} Repair or remove "
            "it, or pass a directory= without it."
        ) from None


def _in_test(source, test_size):
    """Deterministic, order-free split: the same English message always lands on the same side."""
    digest = hashlib.sha1(source.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < test_size


def load_gettext(
    language="fr",
    *,
    directory=None,
    subset="train",
    test_size=0.1,
    min_words=3,
    max_words=40,
    return_X_y=False,
):
    """Load English → ``language`` message pairs from installed gettext catalogues.

    Every package that is translated installs its messages as a compiled catalogue
    ``<prefix>/share/locale/<language>/LC_MESSAGES/<domain>.mo``: the English
    message (``msgid``) and a human translation (``msgstr``). OPUS's GNOME, KDE
    and Ubuntu corpora are built from the same files. **Nothing is shipped with
    this package**: the pairs are read from what is installed on the machine, so
    their number and content depend on its packages (a minimal container has
    none: then this loader raises ``ValueError``).

    Kept: one-line messages of ``min_words`` to ``max_words`` whitespace-separated
    English words with a non-empty translation. Dropped: the catalogue header,
    untranslated messages (empty ``msgstr``, or one identical to the message:
    mostly names of places and languages copied unchanged), fuzzy and obsolete ``.po`` entries,
    plural messages (their forms follow per-language rules that a pair cannot
    carry), messages containing a line break or a tab, and duplicate pairs (the
    same message translated the same way by several packages, counted once). A
    message with a context (``msgctxt``) is kept without its context. The same
    English message may keep several different translations.

    The split is by a hash of the English message, so it does not depend on the
    order of files or pairs, and an English message never appears on both sides.

    Parameters
    ----------
    language : str, default="fr"
        Locale folder name of the target language, e.g. ``"fr"``, ``"de"``, ``"pt_BR"``.
    directory : str, path or list of them, default=None
        Existing folder(s) holding ``<language>/LC_MESSAGES/``; ``None`` reads
        those of ``/usr/share/locale`` and ``/usr/local/share/locale`` that
        exist. Both ``.mo`` and ``.po`` files are read.
    subset : {"train", "test", "all"}, default="train"
        Which side of the split to return.
    test_size : float, default=0.1
        Share of distinct English messages in the test side, in ``[0, 1]``
        (neither 0 with ``subset="test"`` nor 1 with ``subset="train"``).
    min_words, max_words : int or None, default=3 and 40
        Range of English message lengths kept, in whitespace-separated words
        (``None``: no bound); ``min_words >= 0``, ``max_words >= 1``.
    return_X_y : bool, default=False
        Return ``(data, target)`` instead of a Bunch.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        ``data`` (list of English str), ``target`` (list of translations),
        ``language``, ``catalogues`` (paths of the files read, including those
        that gave no pair), ``n_catalogues`` (files that gave at least one pair
        of this subset) and ``DESCR``.
    (data, target) : tuple if ``return_X_y`` is True

    Raises
    ------
    ValueError
        If ``directory`` names a folder that does not exist, no folder holds a
        catalogue for ``language`` (the message lists the languages found), a
        catalogue is damaged or cannot be read (the message names it), no pair
        passes the filters, or a parameter is out of range; raised before any
        pair is returned. Each catalogue is read whole, one at a time.
    TypeError
        If a parameter has the wrong type.

    Examples
    --------
    >>> from sklearn_lama.datasets import load_gettext
    >>> load_gettext("fr", directory="/nonexistent")
    Traceback (most recent call last):
    ...
    ValueError: directory='/nonexistent' is not an existing folder.
    """
    _check_arguments(language, subset, test_size, min_words, max_words, return_X_y)
    folders = _folders(directory)
    files = _catalogues(folders, language)
    if not files:
        raise _no_catalogue(folders, language, directory)
    seen, pairs, used = set(), [], set()
    for path in files:
        for msgid, msgstr in _read_catalogue(path, directory):
            msgid = msgid.rpartition(_CONTEXT_SEPARATOR)[2]
            if (
                not msgid
                or not msgstr.strip()
                or msgstr == msgid
                or _PLURAL_SEPARATOR in msgid
                or _PLURAL_SEPARATOR in msgstr
                or re.search(r"[\n\t\r]", msgid + msgstr)
            ):
                continue
            n_words = len(msgid.split())
            if (min_words is not None and n_words < min_words) or (
                max_words is not None and n_words > max_words
            ):
                continue
            if subset != "all" and _in_test(msgid, test_size) != (subset == "test"):
                continue
            if (msgid, msgstr) not in seen:
                seen.add((msgid, msgstr))
                pairs.append((msgid, msgstr))
                used.add(path)
    if not pairs:
        raise ValueError(
            f"The {len(files)} catalogues for language={language!r} hold no pair of "
            f"min_words={min_words} to max_words={max_words} English words in "
            f"subset={subset!r} (test_size={test_size!r})."
        )
    # An order that depends on the pairs alone, not on which package installed them first.
    pairs.sort(key=lambda pair: hashlib.sha1("\x00".join(pair).encode("utf-8")).digest())
    data = [source for source, _ in pairs]
    target = [translation for _, translation in pairs]
    if return_X_y:
        return data, target
    return Bunch(
        data=data,
        target=target,
        language=language,
        catalogues=[str(p) for p in files],
        n_catalogues=len(used),
        DESCR=(
            f"gettext messages, English -> {language}\n"
            "-----------------------------------\n"
            f"{len(pairs)} distinct pairs ({subset}) from {len(used)} of the {len(files)} "
            "catalogues installed on this machine (read at load time, not shipped). "
            "Translations by the packages' translators; cite the packages' projects."
        ),
    )
