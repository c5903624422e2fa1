"""A user's labelled texts for the main job: CSV or JSON Lines, plain or gzip-compressed."""

import csv
import gzip
import json
import os
import zlib

__all__ = ["read_labelled_file"]

# A CSV field may hold a whole document; the csv module's default limit is 128 KiB.
_MAX_FIELD = 2**26


def _open_text(path):
    opener = gzip.open if str(path).endswith(".gz") else open
    return opener(path, "rt", encoding="utf-8", newline="")


def _format(path):
    name = str(path).lower().removesuffix(".gz")
    if name.endswith(".csv"):
        return "csv"
    if name.endswith((".jsonl", ".ndjson", ".json")):
        return "jsonl"
    raise ValueError(
        f"--data {os.fspath(path)!r}: the file name must end in .csv, .jsonl, .ndjson or "
        ".json (JSON Lines: one object per line), optionally followed by .gz."
    )


def _csv_rows(fh):
    csv.field_size_limit(_MAX_FIELD)
    reader = csv.DictReader(fh)
    if reader.fieldnames is None:
        return [], []
    return list(reader.fieldnames), ((reader.line_num, row) for row in reader)


def _jsonl_rows(fh):
    def rows():
        for number, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"line {number} is not valid JSON ({exc.msg}).") from None
            if not isinstance(record, dict):
                raise ValueError(
                    f"line {number} holds a {type(record).__name__}; each line must be a "
                    'JSON object such as {"text": ..., "label": ...}.'
                )
            yield number, record

    return None, rows()


def read_labelled_file(path, text_column="text", label_column="label"):
    """Read ``(texts, labels)`` from a CSV or JSON Lines file.

    Parameters
    ----------
    path : str or path-like
        A ``.csv`` file with a header row, or a JSON Lines file (``.jsonl``,
        ``.ndjson``, ``.json``: one object per line); either may end in
        ``.gz``. UTF-8.
    text_column, label_column : str, default="text", "label"
        The column (CSV) or key (JSON) of each document's text and label.

    Returns
    -------
    texts : list of str
    labels : list
        Strings for CSV; the JSON values (strings, numbers or booleans) for
        JSON Lines.

    Raises
    ------
    ValueError
        The file does not exist, cannot be decoded, is empty, lacks one of the
        columns, has a row without a text or a label, or holds fewer than two
        classes.
    """
    kind = _format(path)
    if not os.path.isfile(path):
        raise ValueError(f"--data {os.fspath(path)!r} is not a file.")
    texts, labels = [], []
    where = f"--data {os.fspath(path)!r}"
    try:
        with _open_text(path) as fh:
            columns, rows = (_csv_rows if kind == "csv" else _jsonl_rows)(fh)
            for name, option in ((text_column, "--text-column"), (label_column, "--label-column")):
                if columns and name not in columns:
                    raise ValueError(
                        f"it has no column {option} {name!r}; its columns are {columns!r}."
                    )
            for number, row in rows:
                text, label = row.get(text_column), row.get(label_column)
                for value, name, option in (
                    (text, text_column, "--text-column"),
                    (label, label_column, "--label-column"),
                ):
                    if value is None or value == "":
                        raise ValueError(
                            f"line {number} has no {option} {name!r} value"
                            + ("" if columns else f" (its keys are {sorted(row)!r})")
                            + "."
                        )
                if not isinstance(text, str):
                    raise ValueError(
                        f"line {number}: the {text_column!r} value is a "
                        f"{type(text).__name__}, not a string."
                    )
                if not isinstance(label, (str, int, float, bool)):
                    raise ValueError(
                        f"line {number}: the {label_column!r} value is a "
                        f"{type(label).__name__}; labels must be strings, numbers or booleans."
                    )
                texts.append(text)
                labels.append(label)
    except UnicodeDecodeError as exc:
        raise ValueError(
            f"{where} is not UTF-8 text ({exc.reason} at byte {exc.start})."
        ) from None
    except (OSError, EOFError, zlib.error, csv.Error) as exc:
        raise ValueError(f"{where} cannot be read ({exc}).") from None
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from None
    if not texts:
        raise ValueError(f"{where} holds no documents.")
    if len({isinstance(label, str) for label in labels}) > 1:
        raise ValueError(f"{where}: its labels mix strings and numbers; use one kind.")
    classes = set(labels)
    if len(classes) < 2:
        raise ValueError(
            f"{where} holds one class only ({next(iter(classes))!r}); a classifier needs "
            "documents of at least 2 classes."
        )
    return texts, labels
