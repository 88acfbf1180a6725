"""CSV values: missing markers, numbers, labels and sample weights.

A value is missing when it is empty or one of :data:`MISSING` (after
stripping and lower-casing). Every error names the line of the first value
at fault. A column's values are an object array of strings (one a row), a
:class:`~._hashing.Factorized` column (pyarrow's parser), whose distinct
values are parsed once each, or a numeric column's floats, which pyarrow's
parser has read as numbers (NaN where missing).
"""

from itertools import product

import numpy as np

from ._hashing import Factorized, factorize
from ._sources import DataError

# CSV values that mean "missing" (compared after strip and lower-casing):
# a missing value adds no feature.
MISSING = frozenset({"", "na", "nan", "n/a", "null"})
# The values that are missing without spaces around them: every spelling of
# MISSING in upper and lower case (no other character lower-cases to n, a,
# u, l or /).
MISSING_SPELLINGS = sorted(
    "".join(letters)
    for marker in MISSING
    for letters in product(*({c.lower(), c.upper()} for c in marker))
)
# The characters str.strip() removes (str.isspace()), which a CSV value
# read as missing may have around it.
WHITESPACE = (
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004"
    "\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)


def is_missing(value):
    return value.strip().lower() in MISSING


def missing_mask(values):
    """Which distinct values of a :class:`~._hashing.Factorized` column are
    missing (computed for those some row holds, when not known)."""
    if values.missing is not None:
        return values.missing
    used = values.used()
    missing = np.zeros(len(values.distinct), dtype=bool)
    missing[used] = [is_missing(value) for value in values.distinct[used]]
    return missing


def parse_numbers(values):
    """Floats of CSV values, NaN for missing ones; None if one is not a number."""
    if isinstance(values, np.ndarray) and values.dtype == np.float64:  # read as numbers
        return values
    if isinstance(values, Factorized):
        if values.numbers is not None:  # parsed with the text
            return values.per_row(values.numbers, np.nan)
        read = values.used() & ~missing_mask(values)
        numbers = parse_numbers(values.distinct[read])
        if numbers is None:
            return None
        of_distinct = np.full(len(values.distinct), np.nan)
        of_distinct[read] = numbers
        return values.per_row(of_distinct, np.nan)
    try:
        numbers = np.array(values, dtype=np.float64)  # float() of each string
    except ValueError:  # missing markers such as "" or "NA", or words
        try:
            numbers = np.array([np.nan if is_missing(value) else float(value) for value in values])
        except ValueError:
            return None
    return numbers


def distinct_values(values):
    """The set of the distinct values of a column."""
    if isinstance(values, Factorized):
        return set(values.present())
    return set(values)


def as_strings(values):
    """A column's values as a numpy array of str, one a row."""
    if isinstance(values, Factorized):
        values = values.values()
    return np.array(values, dtype=str)


def text_categories(values):
    """The :class:`~._hashing.Factorized` categories of a column, its missing
    values made missing."""
    if not isinstance(values, Factorized):
        values = factorize(values)
    return values.without(missing_mask(values))


def check_labels_present(path, label_values, lines):
    """DataError at the first row whose label is missing."""
    if isinstance(label_values, Factorized):
        missing = missing_mask(label_values)
        some_missing = missing.any() and missing[label_values.used()].any()
    else:
        some_missing = any(is_missing(value) for value in set(label_values))
    if some_missing:
        for value, line in zip(label_values, lines):
            if is_missing(value):
                raise DataError(path, int(line), f"missing label {value!r}")


def first_non_number(values, lines, missing_allowed):
    """The first value that is not a finite number (or missing, if allowed), and its line."""
    for value, line in zip(values, lines):
        if missing_allowed and is_missing(value):
            continue
        try:
            number = float(value)
        except ValueError:
            return value, int(line)
        if not (np.isfinite(number) or (missing_allowed and np.isnan(number))):
            return value, int(line)
    raise ValueError("every value is a number")


def parse_targets(path, label_values, lines, what="label"):
    """The labels as floats; DataError at the first one that is not a number."""
    targets = parse_numbers(label_values)
    if targets is None or not np.all(np.isfinite(targets)):
        value, line = first_non_number(label_values, lines, missing_allowed=False)
        raise DataError(path, line, f"the {what} {value!r} is not a finite number")
    return targets


def parse_weights(path, values, lines, column):
    """Sample weights of a weight column: finite numbers >= 0."""
    weights = parse_targets(path, values, lines, what=f"weight (column {column!r})")
    negative = np.flatnonzero(weights < 0)
    if negative.size:
        raise DataError(
            path, int(lines[negative[0]]), f"the weight {values[negative[0]]!r} is negative"
        )
    return weights


# How an error names what reads a column as categories: the command line's
# option, or the argument of ColumnHasher (skftrl.readers).
CATEGORICAL_HINT = "--categorical {column}"
PYTHON_CATEGORICAL_HINT = "ColumnHasher(categorical=[{column!r}])"


def numeric_values(path, column, values, lines, hint=CATEGORICAL_HINT):
    """A numeric column's values, NaN where missing; DataError at a value that is not a number."""
    numbers = parse_numbers(values)
    if numbers is None or np.isinf(numbers).any():
        value, line = first_non_number(values, lines, missing_allowed=True)
        raise DataError(
            path,
            line,
            f"column {column!r} holds numbers, but this value is {value!r} "
            f"({hint.format(column=column)} reads every value as a category)",
        )
    return numbers
