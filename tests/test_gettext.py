"""The gettext catalogue loader, on small catalogues written by the tests."""

import shutil
import struct
import subprocess

import pytest

from sklearn_lama.datasets import load_gettext
from sklearn_lama.datasets._gettext import read_mo, read_po

PO = r"""# A test catalogue.
msgid ""
msgstr ""
"Content-Type: text/plain; charset=UTF-8\n"

#: main.c:1
msgid "File not found"
msgstr "Fichier introuvable"

msgid "Could not open %s for writing"
msgstr "Impossible d'ouvrir %s en écriture"

msgid "This one is "
"split over lines"
msgstr "Celui-ci est "
"coupé en lignes"

#, fuzzy
msgid "A guess nobody checked"
msgstr "Une supposition"

msgid "Nobody translated this"
msgstr ""

msgctxt "menu"
msgid "Open the file"
msgstr "Ouvrir le fichier"

msgid "One file was deleted"
msgid_plural "%d files were deleted"
msgstr[0] "Un fichier supprimé"
msgstr[1] "%d fichiers supprimés"

msgid "Two\nlines here"
msgstr "Deux\nlignes ici"

msgid "Saint Pierre et Miquelon"
msgstr "Saint Pierre et Miquelon"

msgid "Too short"
msgstr "Trop court"

#~ msgid "An obsolete message here"
#~ msgstr "Un message obsolète"
"""

KEPT = {
    "File not found": "Fichier introuvable",
    "Could not open %s for writing": "Impossible d'ouvrir %s en écriture",
    "This one is split over lines": "Celui-ci est coupé en lignes",
    "Open the file": "Ouvrir le fichier",
}


def mo_bytes(pairs, order="<"):
    """A .mo file (GNU format: header, two string tables, the strings); ``order`` as struct's."""
    pairs = sorted(pairs)
    n = len(pairs)
    ids = [k.encode() for k, _ in pairs]
    strs = [v.encode() for _, v in pairs]
    start = 28 + 16 * n
    blob, orig, trans = b"", [], []
    for table, items in ((orig, ids), (trans, strs)):
        for item in items:
            table.append((len(item), start + len(blob)))
            blob += item + b"\0"
    header = struct.pack(order + "7I", 0x950412DE, 0, n, 28, 28 + 8 * n, 0, 0)
    tables = b"".join(struct.pack(order + "2I", *e) for e in orig + trans)
    return header + tables + blob


def write_mo(path, pairs):
    """Write a little-endian .mo file of ``pairs`` to ``path``."""
    path.write_bytes(mo_bytes(pairs))


@pytest.fixture
def locale_dir(tmp_path):
    folder = tmp_path / "locale" / "fr" / "LC_MESSAGES"
    folder.mkdir(parents=True)
    (folder / "app.po").write_text(PO, encoding="utf-8")
    write_mo(
        folder / "other.mo",
        [
            ("", "Content-Type: text/plain; charset=UTF-8\n"),
            ("File not found", "Fichier introuvable"),  # the same pair again: counted once
            ("File not found", "Fichier non trouvé"),  # another translation: kept
            ("Save the document now", "Enregistrer le document maintenant"),
            ("ctx\x04Close this window", "Fermer cette fenêtre"),
            ("one item\x00%d items", "un élément\x00%d éléments"),
        ],
    )
    return tmp_path / "locale"


def test_read_po_entries(locale_dir):
    pairs = dict(read_po(locale_dir / "fr" / "LC_MESSAGES" / "app.po"))
    assert pairs["File not found"] == "Fichier introuvable"
    assert pairs["This one is split over lines"] == "Celui-ci est coupé en lignes"
    assert pairs["menu\x04Open the file"] == "Ouvrir le fichier"
    assert pairs["One file was deleted\x00%d files were deleted"].startswith("Un fichier")
    assert pairs["Two\nlines here"] == "Deux\nlignes ici"
    assert "A guess nobody checked" not in pairs
    assert "An obsolete message here" not in pairs


def test_read_mo_round_trip(tmp_path):
    path = tmp_path / "x.mo"
    pairs = [("", "charset=UTF-8"), ("héllo wörld", "bonjour le monde"), ("a\x04b", "c")]
    write_mo(path, pairs)
    assert read_mo(path) == sorted(pairs)


@pytest.mark.skipif(shutil.which("msgfmt") is None, reason="GNU gettext's msgfmt is not installed")
def test_read_mo_reads_what_msgfmt_compiles(locale_dir, tmp_path):
    po = locale_dir / "fr" / "LC_MESSAGES" / "app.po"
    mo = tmp_path / "app.mo"
    subprocess.run(["msgfmt", "-o", str(mo), str(po)], check=True)
    from_po = {k: v for k, v in read_po(po) if v}
    assert dict(read_mo(mo)) == from_po


def test_load_gettext_filters_and_deduplicates(locale_dir):
    bunch = load_gettext("fr", directory=locale_dir, subset="all")
    pairs = set(zip(bunch.data, bunch.target))
    assert set(KEPT.items()) <= pairs
    assert ("File not found", "Fichier non trouvé") in pairs
    assert ("Save the document now", "Enregistrer le document maintenant") in pairs
    assert ("Close this window", "Fermer cette fenêtre") in pairs
    assert len(pairs) == len(bunch.data) == len(KEPT) + 3
    assert bunch.n_catalogues == 2 and len(bunch.catalogues) == 2
    assert "not shipped" in bunch.DESCR


def test_load_gettext_split_is_deterministic_and_disjoint(locale_dir):
    train = load_gettext("fr", directory=locale_dir, test_size=0.5)
    test = load_gettext("fr", directory=locale_dir, subset="test", test_size=0.5)
    assert not set(train.data) & set(test.data)
    assert sorted(train.data + test.data) == sorted(
        load_gettext("fr", directory=locale_dir, subset="all").data
    )
    again = load_gettext("fr", directory=[locale_dir], test_size=0.5, return_X_y=True)
    assert again == (train.data, train.target)


def test_load_gettext_word_range_and_missing_language(locale_dir):
    X, _ = load_gettext(
        "fr", directory=locale_dir, subset="all", min_words=1, max_words=None, return_X_y=True
    )
    assert "Too short" in X
    X, _ = load_gettext("fr", directory=locale_dir, subset="all", max_words=3, return_X_y=True)
    assert X and all(len(x.split()) == 3 for x in X)
    with pytest.raises(ValueError, match=r"language='de' .*languages found there: fr\."):
        load_gettext("de", directory=locale_dir)


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"subset": "dev"}, ValueError, "subset"),
        ({"test_size": 1.5}, ValueError, "test_size"),
        ({"test_size": float("nan")}, ValueError, "test_size"),
        ({"test_size": "0.1"}, TypeError, "test_size"),
        ({"subset": "test", "test_size": 0}, ValueError, "selects no message"),
        ({"subset": "train", "test_size": 1.0}, ValueError, "selects no message"),
        ({"language": ""}, ValueError, "language"),
        ({"language": ".."}, ValueError, "language"),
        ({"language": "fr/../de"}, ValueError, "language"),
        ({"language": None}, TypeError, "language"),
        ({"min_words": -1}, ValueError, "min_words"),
        ({"max_words": 0}, ValueError, "max_words"),
        ({"min_words": 5, "max_words": 4}, ValueError, "min_words=5 is above max_words=4"),
        ({"min_words": 2.5}, TypeError, "min_words"),
        ({"max_words": True}, TypeError, "max_words"),
        ({"return_X_y": "yes"}, TypeError, "return_X_y"),
        ({"min_words": 30}, ValueError, "hold no pair of min_words=30"),
    ],
)
def test_load_gettext_bad_arguments(locale_dir, kwargs, error, match):
    with pytest.raises(error, match=match):
        load_gettext(**{"language": "fr", "directory": locale_dir, **kwargs})


def test_load_gettext_bad_directories(locale_dir, tmp_path):
    for directory, error, match in [
        (tmp_path / "missing", ValueError, "missing' is not an existing folder"),
        ("", ValueError, "directory='' is not an existing folder"),
        ([], ValueError, "directory is empty"),
        ([locale_dir, 3], TypeError, "directory holds 3"),
        (3, TypeError, "directory must be a path"),
        (locale_dir / "fr" / "LC_MESSAGES" / "app.po", ValueError, "not an existing folder"),
        (tmp_path / "empty", ValueError, "no <language>/LC_MESSAGES there"),
    ]:
        (tmp_path / "empty").mkdir(exist_ok=True)
        with pytest.raises(error, match=match):
            load_gettext("fr", directory=directory)


def test_load_gettext_names_a_damaged_catalogue(locale_dir):
    mo = locale_dir / "fr" / "LC_MESSAGES" / "other.mo"
    mo.write_bytes(mo.read_bytes()[:40])
    with pytest.raises(ValueError, match=r"damaged catalogue under directory=.*other\.mo"):
        load_gettext("fr", directory=locale_dir)
    mo.unlink()
    po = locale_dir / "fr" / "LC_MESSAGES" / "app.po"
    po.write_text(PO.replace('msgstr "Trop court"', "msgstr Trop court"), encoding="utf-8")
    with pytest.raises(ValueError, match=r"app\.po, line \d+: expected a quoted string"):
        load_gettext("fr", directory=locale_dir)
