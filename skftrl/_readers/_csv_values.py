"""CSV values: missing markers, numbers, labels and sample weights.

A value is missing when it is empty or one of :data:`MISSING` (after
stripping and lower-casing). Every error names the line of the first value
at fault.
"""

import numpy as np

from ._sources import DataError

# CSV values that mean "missing" (compared after strip and lower-casing):
# a missing value adds no feature.
MISSING = frozenset({"", "na", "nan", "n/a", "null"})


def is_missing(value):
    return value.strip().lower() in MISSING


def parse_numbers(values):
    """Floats of CSV values, NaN for missing ones; None if one is not a number."""
    try:
        numbers = np.array(values, dtype=np.float64)  # float() of each string
    except ValueError:  # missing markers such as "" or "NA", or words
        try:
            numbers = np.array([np.nan if is_missing(value) else float(value) for value in values])
        except ValueError:
            return None
    return numbers


def check_labels_present(path, label_values, lines):
    """DataError at the first row whose label is missing."""
    if any(is_missing(value) for value in set(label_values)):
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


def numeric_values(path, column, values, lines):
    """A numeric column's values, NaN where missing; DataError at a value that is not a number."""
    numbers = parse_numbers(values)
    if numbers is None or np.isinf(numbers).any():
        value, line = first_non_number(values, lines, missing_allowed=True)
        raise DataError(
            path,
            line,
            f"column {column!r} holds numbers, but this value is {value!r} "
            f"(--categorical {column} reads every value as a category)",
        )
    return numbers
