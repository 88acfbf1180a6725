"""The warnings ``skftrl train`` gives about a file's columns before it learns:
a column that holds a different value in almost every row (an id), columns of
values too large for FTRL's steps, and columns that reproduce the label."""

import contextlib

import numpy as np

from .._readers._csv import CATEGORICAL, open_csv_input
from .._readers._csv_values import text_categories
from .._readers._hashing import LARGE_VALUE, large_values
from .._readers._sources import is_regular_file

# The label-leak check fits the label on the numeric columns of the first
# chunk: a fit this good means some columns are derived from the label.
LEAK_R2 = 0.99

# A categorical column whose first chunk holds a different value in at
# least this share of its rows (and ID_ROWS rows or more) is taken for an id.
ID_SHARE = 0.95
ID_ROWS = 100


def check_id_columns(args, spec, report):
    """A warning naming each categorical column of a CSV or Parquet training
    file whose first chunk holds a different value in (almost) every row, as
    an id does: hashed, each value is a feature that no other row shares.

    The first chunk is read again for it (a stream cannot be: not checked)."""
    if spec.format not in ("csv", "parquet") or not is_regular_file(args.data):
        return
    rows = min(args.chunk_size, 10_000)
    if spec.format == "csv":
        names = [name for name, kind in spec.kinds.items() if kind == CATEGORICAL]
        counts = csv_distinct_counts(args, spec, names, rows)
    else:
        counts = parquet_distinct_counts(args.data, spec, rows)
    for name, (distinct, present) in counts.items():
        if present >= ID_ROWS and distinct >= ID_SHARE * present:
            report.warn(
                f"the categorical column {name!r} holds a different value in {distinct:,} of "
                f"its first {present:,} rows, as an id does: hashed, each value is a feature "
                f"that hardly another row shares. If it is an id, leave it out with "
                f"--ignore {name} (skftrl predict --id-column {name} writes it beside each "
                "prediction)"
            )


def csv_distinct_counts(args, spec, names, rows):
    """``{name: (distinct values, rows with a value)}`` of the columns
    ``names`` in the first ``rows`` rows of the CSV training file."""
    if not names:
        return {}
    source = open_csv_input(args.data, delimiter=spec.delimiter, column_names=args.column_names)
    with contextlib.closing(source):
        first = next(source.row_chunks(rows), None)
        if first is None:
            return {}
        counts = {}
        for name in names:
            values = text_categories(first.columns[source.position(name, "feature")])
            present = int(np.count_nonzero(values.codes >= 0))
            counts[name] = (len(values.present()), present)
    return counts


def parquet_distinct_counts(path, spec, rows):
    """``{name: (distinct values, rows with a value)}`` of the categorical
    columns of a Parquet training file, in its first ``rows`` rows."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from .._readers._parquet import holds_numbers, open_parquet

    with contextlib.closing(open_parquet(path)) as parquet:
        schema = parquet.schema_arrow
        names = [
            name
            for name in spec.features
            if name in spec.categorical or not holds_numbers(schema.field(name).type)
        ]
        if not names:
            return {}
        batch = next(parquet.iter_batches(batch_size=rows, columns=names), None)
    if batch is None:
        return {}
    counts = {}
    for name in names:
        column = batch.column(name)
        if pa.types.is_dictionary(column.type):  # strings (see open_parquet)
            column = column.dictionary_decode()
        present = len(column) - column.null_count
        counts[name] = (int(pc.count_distinct(column, mode="only_valid").as_py()), present)
    return counts


def first_chunk_checks(spec, report):
    """``check(numbers_of, y)`` for the first chunk of a CSV or Parquet
    training file: a warning when columns of numbers reproduce the label, and
    one when numeric columns hold values too large for FTRL's steps."""
    label_column = spec.label_column
    if spec.format == "csv":
        numeric = {name for name, kind in spec.kinds.items() if kind == "numeric"}
    else:  # Parquet: its columns of numbers not read as categories
        numeric = set(spec.features) - set(spec.categorical)

    def check(numbers_of, y):
        large = large_values({name: v for name, v in numbers_of.items() if name in numeric})
        if large:
            rows = len(next(iter(numbers_of.values())))
            report.warn(large_values_message(large, rows))
        leaks, explained = label_leaks(numbers_of, y)
        if leaks:
            several = len(leaks) > 1
            report.warn(
                f"the column{'s' if several else ''} {', '.join(map(repr, leaks))} "
                f"reproduce{'' if several else 's'} the label {label_column!r} "
                f"almost exactly (R^2 = {explained:.4f} over the first {len(y):,} rows): "
                f"derived from it? Leave {'them' if several else 'it'} out with "
                f"--ignore {','.join(leaks)}"
            )

    return check


def large_values_message(large, rows):
    """The warning about the columns of ``large_values`` in the first ``rows``."""
    if len(large) == 1:
        [(name, largest)] = large.items()
        found, it = f"the numeric column {name!r} holds values up to {largest:,.10g}", "it"
    else:
        listed = ", ".join(f"{name!r} (up to {top:,.10g})" for name, top in large.items())
        found = f"the numeric columns {listed} hold values beyond {LARGE_VALUE:,.0f}"
        it = "them"
    return (
        f"{found} in the first {rows:,} rows: a numeric column is one weight times its value, "
        f"and values this large spoil FTRL's steps. Scale {it} (a logarithm, a division) or "
        f"read {it} as categories with --categorical {','.join(large)}"
    )


def large_features_message(spec, X):
    """The warning (or None) about the features of ``X``, a first chunk of
    ``spec``'s format, with values beyond LARGE_VALUE in size: LIBSVM's named
    by their index as written, hashed ones counted."""
    large = np.abs(X.data) > LARGE_VALUE
    if not large.any():
        return None
    columns, where = np.unique(X.indices[large], return_inverse=True)
    largest = np.zeros(len(columns))
    np.maximum.at(largest, where.ravel(), np.abs(X.data[large]))
    rows = f"in the first {X.shape[0]:,} rows"
    if spec.format == "libsvm" and spec.hash_bits is None:
        indices = columns + (0 if spec.zero_based else 1)
        if len(columns) == 1:
            found = f"the feature index {indices[0]} holds values up to {largest[0]:,.10g} {rows}"
        else:
            listed = ", ".join(
                f"{index} (up to {top:,.10g})" for index, top in zip(indices[:5], largest[:5])
            )
            more = f" and {len(columns) - 5:,} more" if len(columns) > 5 else ""
            found = (
                f"the feature indices {listed}{more} hold values beyond {LARGE_VALUE:,.0f} {rows}"
            )
    else:
        several = len(columns) > 1
        found = (
            f"{len(columns):,} feature{'s' if several else ''} hold{'' if several else 's'} "
            f"values beyond {LARGE_VALUE:,.0f} {rows} (up to {largest.max():,.10g})"
        )
    return (
        f"{found}: a feature is one weight times its value, and values this large spoil "
        f"FTRL's steps. Scale {'it' if len(columns) == 1 else 'them'} (a logarithm, a "
        "division) before training"
    )


def label_leaks(numbers_of, y):
    """Columns of numbers that, together, reproduce the label almost exactly.

    Least squares of the label on the columns of numbers of the first chunk
    (with an intercept): when they explain over LEAK_R2 of its variance, the
    columns without which they no longer do are returned, with the R^2.
    """
    names = [name for name, values in numbers_of.items() if np.isfinite(values).all()]
    if not names or y is None or y.dtype.kind != "f" or len(y) <= len(names) + 1:
        return [], 0.0
    variance = np.var(y)
    if variance == 0:
        return [], 0.0

    def r2(columns):
        A = np.column_stack([np.ones(len(y))] + [numbers_of[name] for name in columns])
        residual = y - A @ np.linalg.lstsq(A, y, rcond=None)[0]
        return 1 - np.mean(residual**2) / variance

    explained = r2(names)
    if explained < LEAK_R2:
        return [], explained
    needed = [name for name in names if r2([other for other in names if other != name]) < LEAK_R2]
    return needed or names, explained
