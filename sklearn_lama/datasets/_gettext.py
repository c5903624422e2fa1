"""Parallel text from the gettext message catalogues installed on the machine."""

import hashlib
import os
import re
import struct
from pathlib import Path

from sklearn.utils import Bunch

__all__ = ["load_gettext"]

# Where Debian-like systems install the catalogues of their packages (``<prefix>/share/locale``).
DEFAULT_DIRECTORIES = ("/usr/share/locale", "/usr/local/share/locale")

_MO_MAGIC = {b"\xde\x12\x04\x95": "<", b"\x95\x04\x12\xde": ">"}
_CONTEXT_SEPARATOR = "\x04"
_PLURAL_SEPARATOR = "\x00"


def read_mo(path):
    """``(msgid, msgstr)`` pairs of a compiled catalogue, in file order.

    A message with a context keeps the ``context\\x04`` prefix, a plural message its
    ``\\x00``-joined forms, so that callers can recognise both; the header (empty ``msgid``) is
    included.
    """
    data = Path(path).read_bytes()
    order = _MO_MAGIC.get(data[:4])
    if order is None:
        raise ValueError(f"{path} is not a gettext .mo file (bad magic number).")
    n, originals, translations = struct.unpack(order + "3I", data[8:20])

    def string(table, i):
        length, offset = struct.unpack(order + "2I", data[table + 8 * i : table + 8 * i + 8])
        return data[offset : offset + length]

    charset = _charset(string(translations, 0).decode("ascii", "replace")) if n else "utf-8"
    return [
        (
            string(originals, i).decode(charset, "replace"),
            string(translations, i).decode(charset, "replace"),
        )
        for i in range(n)
    ]


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
        raise ValueError(f"expected a quoted string, got {text!r}")
    return re.sub(r"\\(.)", lambda m: _PO_ESCAPES.get(m.group(1), m.group(1)), text[1:-1])


def read_po(path):
    """``(msgid, msgstr)`` pairs of a source catalogue, encoded as :func:`read_mo` encodes them.

    Fuzzy entries (a guess that no translator confirmed) and obsolete entries (``#~``) are skipped,
    as ``msgfmt`` skips them when it compiles the catalogue.
    """
    entries, entry, fuzzy, key = [], {}, False, None

    def close():
        nonlocal entry, fuzzy, key
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

    with open(path, encoding="utf-8", errors="replace") as lines:
        for line in lines:
            line = line.strip()
            if not line or line.startswith("#~"):
                continue
            if line.startswith("#"):
                if line.startswith("#,") and "fuzzy" in line:
                    if "msgid" in entry:
                        close()
                    fuzzy = True
                continue
            if line.startswith('"'):
                if key is not None:
                    entry[key] += _unquote(line)
                continue
            word, _, rest = line.partition(" ")
            if word in ("msgctxt", "msgid") and "msgid" in entry:
                close()
            if word in ("msgctxt", "msgid", "msgid_plural", "msgstr") or word.startswith(
                "msgstr["
            ):
                key = word
                entry[key] = _unquote(rest)
    close()
    return entries


def _catalogues(directories, language):
    files = []
    for directory in directories:
        folder = Path(directory) / language / "LC_MESSAGES"
        if folder.is_dir():
            files.extend(sorted(p for p in folder.iterdir() if p.suffix in (".mo", ".po")))
    return files


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
    their number and content depend on its packages (this loader returns
    nothing useful on a minimal container).

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
        Folder(s) holding ``<language>/LC_MESSAGES/``; ``None`` reads
        ``/usr/share/locale`` and ``/usr/local/share/locale``. Both ``.mo`` and
        ``.po`` files are read.
    subset : {"train", "test", "all"}, default="train"
        Which side of the split to return.
    test_size : float, default=0.1
        Share of distinct English messages in the test side, in ``[0, 1]``.
    min_words, max_words : int or None, default=3 and 40
        Range of English message lengths kept, in whitespace-separated words
        (``None``: no bound).
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

    Examples
    --------
    >>> from sklearn_lama.datasets import load_gettext
    >>> bunch = load_gettext("fr", directory="/nonexistent")
    >>> len(bunch.data), bunch.n_catalogues
    (0, 0)
    """
    if subset not in ("train", "test", "all"):
        raise ValueError(f"subset must be 'train', 'test' or 'all', got {subset!r}.")
    if not 0.0 <= test_size <= 1.0:
        raise ValueError(f"test_size must lie in [0, 1], got {test_size!r}.")
    if not isinstance(language, str) or not language or os.sep in language:
        raise ValueError(f"language must be a locale folder name such as 'fr', got {language!r}.")
    if directory is None:
        directories = DEFAULT_DIRECTORIES
    elif isinstance(directory, (str, os.PathLike)):
        directories = (directory,)
    else:
        directories = tuple(directory)

    files = _catalogues(directories, language)
    seen, pairs, used = set(), [], set()
    for path in files:
        read = read_mo if path.suffix == ".mo" else read_po
        for msgid, msgstr in read(path):
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
