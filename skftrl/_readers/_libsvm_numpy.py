"""The LIBSVM parser in numpy: the reference for the compiled one.

:func:`parse_plain_libsvm_arrays` reads blocks of the common form (``label
index:value ...`` with plain decimal numbers) with a few dozen vectorised
numpy operations, and gives exactly what scikit-learn's ``load_svmlight_file``
gives; any other block is left to scikit-learn's parser (see :mod:`._libsvm`).
"""

import numpy as np

PLAIN = b"0123456789.+-: \t\r\n"
# Decimal numbers of at most 15 digits are parsed exactly as the integer of
# their digits divided by a power of ten: both are exact doubles (below 2**53
# and 10**22), so the one division is correctly rounded, as float() is.
MAX_DIGITS = 15


def digit_runs(buffer, starts, ends, max_length):
    """Integers of the digit-only byte spans ``[starts, ends)``, or None when
    a span is empty, longer than ``max_length`` or holds another byte."""
    if not starts.size:
        return np.zeros(0, dtype=np.int64)
    lengths = ends - starts
    if lengths.min() < 1 or lengths.max() > max_length:
        return None
    numbers = buffer[starts].astype(np.int64) - 48
    if not np.all((numbers >= 0) & (numbers <= 9)):
        return None
    for offset in range(1, int(lengths.max())):
        longer = np.flatnonzero(lengths > offset)
        digit = buffer[starts[longer] + offset].astype(np.int64) - 48
        if not np.all((digit >= 0) & (digit <= 9)):
            return None
        numbers[longer] = numbers[longer] * 10 + digit
    return numbers


def parse_decimals(buffer, starts, ends):
    """Floats of the byte spans ``[starts, ends)`` of ``buffer``, or None.

    Each span must be ``[+-]digits[.digits]`` (either digit run may be
    empty, not both) with at most MAX_DIGITS digits; otherwise None.
    """
    if not starts.size:
        return np.zeros(0)
    first = buffer[starts]
    signed = (first == ord("-")) | (first == ord("+"))
    negative = first == ord("-")
    if signed.any():
        starts = starts + signed
    lengths = ends - starts
    if lengths.min() < 1 or lengths.max() > MAX_DIGITS + 1:
        return None
    # Where the dot is, if any (spans of digits only, the common case, have none).
    dot_at = ends.copy()
    for offset in range(int(lengths.max())):
        longer = np.flatnonzero(lengths > offset)
        is_dot = buffer[starts[longer] + offset] == ord(".")
        if is_dot.any():
            dots = longer[is_dot]
            if np.any(dot_at[dots] != ends[dots]):
                return None  # a second dot
            dot_at[dots] = starts[dots] + offset
    whole_digits = dot_at - starts
    fraction_digits = np.maximum(ends - dot_at - 1, 0)
    if np.any(whole_digits + fraction_digits < 1) or np.any(
        whole_digits + fraction_digits > MAX_DIGITS
    ):
        return None
    if np.array_equal(dot_at, ends):  # integers: the common case
        mantissa = digit_runs(buffer, starts, ends, MAX_DIGITS)
        if mantissa is None:
            return None
        values = mantissa.astype(np.float64)
        return np.where(negative, -values, values)
    # "5." and ".5" have an empty run of digits: 0, with no digits.
    mantissa = np.zeros(starts.size, dtype=np.int64)
    whole = np.flatnonzero(whole_digits > 0)
    fraction = np.flatnonzero(fraction_digits > 0)
    whole_values = digit_runs(buffer, starts[whole], dot_at[whole], MAX_DIGITS)
    fraction_values = digit_runs(buffer, dot_at[fraction] + 1, ends[fraction], MAX_DIGITS)
    if whole_values is None or fraction_values is None:
        return None
    mantissa[whole] = whole_values * 10 ** fraction_digits[whole]
    mantissa[fraction] += fraction_values
    values = mantissa / 10.0**fraction_digits
    return np.where(negative, -values, values)


def parse_plain_libsvm_arrays(block, labels_required):
    """``(values, indices, indptr, y, line_offsets, width)`` of a block of plain
    LIBSVM lines, or None: the vectorised numpy parser, the reference.

    Plain: only digits, ``.+-:`` and whitespace; labels and values as
    :func:`parse_decimals` reads them; indices of at most 9 digits, in
    ascending order in each row. Gives exactly what ``load_svmlight_file(...,
    zero_based=True)`` gives (``width`` is the largest index + 1), or None for
    any other block. ``line_offsets`` counts the lines from the block's
    first; a line without tokens holds no row.
    """
    if not block or block.translate(None, PLAIN):  # a byte that is not plain is left
        return None
    buffer = np.frombuffer(block, dtype=np.uint8)
    # Tokens are the runs of bytes above the space: every other plain byte
    # is whitespace.
    space = buffer < 33
    edges = np.flatnonzero(space[1:] != space[:-1]) + 1
    if not space[0]:
        edges = np.concatenate(([0], edges))
    if not space[-1]:
        edges = np.concatenate((edges, [buffer.size]))
    starts, ends = edges[0::2], edges[1::2]
    if not starts.size:
        return None
    newlines = np.flatnonzero(buffer == ord("\n"))
    after_newline = np.searchsorted(starts, newlines)
    first_of_line = np.zeros(starts.size, dtype=bool)
    first_of_line[0] = True
    first_of_line[after_newline[after_newline < starts.size]] = True
    colons = np.flatnonzero(buffer == ord(":"))
    # The first colon at or after each line's first token: inside it or not.
    first_colon = np.searchsorted(colons, starts[first_of_line])
    labelled = np.ones(first_colon.size, dtype=bool)
    inside = first_colon < colons.size
    labelled[inside] = colons[first_colon[inside]] >= ends[first_of_line][inside]
    if labels_required and not labelled.all():
        return None
    is_label = np.zeros(starts.size, dtype=bool)
    is_label[np.flatnonzero(first_of_line)[labelled]] = True
    feature = ~is_label
    feature_starts, feature_ends = starts[feature], ends[feature]
    # One colon inside each feature token, and none elsewhere.
    if colons.size != feature_starts.size or np.any(
        (colons <= feature_starts) | (colons >= feature_ends - 1)
    ):
        return None
    indices = digit_runs(buffer, feature_starts, colons, 9)
    values = parse_decimals(buffer, colons + 1, feature_ends)
    if indices is None or values is None:
        return None
    row_of_token = np.cumsum(first_of_line) - 1
    feature_rows = row_of_token[feature]
    same_row = feature_rows[1:] == feature_rows[:-1]
    if np.any(same_row & (indices[1:] <= indices[:-1])):
        return None  # load_svmlight_file refuses it; let it say so
    y = None
    if labels_required:
        y = parse_decimals(buffer, starts[is_label], ends[is_label])
        if y is None:
            return None
    n_rows = int(first_of_line.sum())
    line_offsets = np.searchsorted(newlines, starts[first_of_line])
    indptr = np.concatenate(([0], np.cumsum(np.bincount(feature_rows, minlength=n_rows))))
    width = int(indices.max()) + 1 if indices.size else 0
    # 32-bit indices, as scipy.sparse keeps them (it would copy 64-bit ones).
    return values, indices.astype(np.int32), indptr.astype(np.int32), y, line_offsets, width
