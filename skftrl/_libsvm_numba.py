"""The plain LIBSVM parser of :mod:`._io` compiled with numba (optional).

:func:`parse_plain_libsvm_arrays` reads the same lines as
:func:`._io.parse_plain_libsvm_arrays`, the vectorised numpy parser that is
the reference, and gives the same arrays bit for bit (tests/test_io.py); like
it, it gives up (returns None) on anything else, which scikit-learn's parser
then reads or explains. It is one pass over the bytes instead of numpy's
dozens, and it releases the GIL. Importing this module needs numba
(``pip install "skftrl[fast]"``).
"""

import numpy as np
from numba import njit

# The exact doubles 10**0 to 10**15: a decimal of at most 15 digits is the
# integer of its digits divided by one of them, correctly rounded.
POWERS_OF_TEN = np.array([10.0**exponent for exponent in range(16)])
MAX_DIGITS = 15
MAX_INDEX_DIGITS = 9
FAILED = (-1, -1, -1)


def _decimal(buffer, start, end):
    """``(ok, value)`` of ``[+-]digits[.digits]`` in ``buffer[start:end]``, at most 15 digits."""
    negative = False
    if start < end and (buffer[start] == 45 or buffer[start] == 43):  # "-", "+"
        negative = buffer[start] == 45
        start += 1
    mantissa, digits, fraction_digits, seen_dot = 0, 0, 0, False
    for position in range(start, end):
        byte = buffer[position]
        if byte == 46:  # "."
            if seen_dot:
                return False, 0.0
            seen_dot = True
        elif 48 <= byte <= 57:
            digits += 1
            if digits > MAX_DIGITS:
                return False, 0.0
            mantissa = mantissa * 10 + (byte - 48)
            if seen_dot:
                fraction_digits += 1
        else:
            return False, 0.0
    if digits == 0:
        return False, 0.0
    value = mantissa / POWERS_OF_TEN[fraction_digits]
    return True, -value if negative else value


def _parse(buffer, labels_required, values, indices, indptr, labels, line_offsets):
    """Fill the arrays (as many values as colons, rows as lines); ``(n_rows, nnz,
    width)``, or FAILED when the block is not plain."""
    size = buffer.size
    n_rows, nnz, line, row_line, previous_index, largest = 0, 0, 0, -1, -1, -1
    position = 0
    while position < size:
        byte = buffer[position]
        if byte == 10:
            line += 1
            position += 1
            continue
        if byte == 32 or byte == 9 or byte == 13:
            position += 1
            continue
        # A token: bytes above the space, up to the next byte below 33.
        start, colon = position, -1
        while position < size and buffer[position] > 32:
            byte = buffer[position]
            if byte == 58:
                if colon >= 0:
                    return FAILED
                colon = position
            elif not (48 <= byte <= 57 or byte == 46 or byte == 43 or byte == 45):
                return FAILED
            position += 1
        end = position
        if position < size and not (
            buffer[position] == 32
            or buffer[position] == 9
            or buffer[position] == 13
            or buffer[position] == 10
        ):
            return FAILED
        if row_line != line:  # the line's first token starts a row
            row_line = line
            line_offsets[n_rows] = line
            n_rows += 1
            indptr[n_rows] = nnz
            previous_index = -1
            if colon < 0:  # a label
                if labels_required:
                    ok, label = _decimal(buffer, start, end)
                    if not ok:
                        return FAILED
                    labels[n_rows - 1] = label
                continue
            if labels_required:
                return FAILED
        # index:value, the colon neither first nor last
        if colon <= start or colon >= end - 1 or colon - start > MAX_INDEX_DIGITS:
            return FAILED
        index = 0
        for digit in range(start, colon):
            byte = buffer[digit]
            if not 48 <= byte <= 57:
                return FAILED
            index = index * 10 + (byte - 48)
        if index <= previous_index:
            return FAILED
        ok, value = _decimal(buffer, colon + 1, end)
        if not ok:
            return FAILED
        previous_index = index
        largest = max(largest, index)
        values[nnz] = value
        indices[nnz] = index
        nnz += 1
        indptr[n_rows] = nnz
    return n_rows, nnz, largest + 1


try:
    _decimal = njit(cache=True, nogil=True)(_decimal)
    _parse_compiled = njit(cache=True, nogil=True)(_parse)
except RuntimeError:  # no writable cache location (see skftrl._engines._numba_exact)
    _decimal = njit(nogil=True)(_decimal)
    _parse_compiled = njit(nogil=True)(_parse)


def parse_plain_libsvm_arrays(block, labels_required):
    """``(values, indices, indptr, y, line_offsets, width)`` of a plain block, or None."""
    if not block:
        return None
    n_values, n_lines = block.count(b":"), block.count(b"\n") + 1
    values, indices = np.empty(n_values), np.empty(n_values, dtype=np.int64)
    indptr = np.zeros(n_lines + 1, dtype=np.int64)
    labels, line_offsets = np.empty(n_lines), np.empty(n_lines, dtype=np.int64)
    n_rows, nnz, width = _parse_compiled(
        np.frombuffer(block, dtype=np.uint8),
        labels_required,
        values,
        indices,
        indptr,
        labels,
        line_offsets,
    )
    if n_rows <= 0:
        return None
    y = labels[:n_rows] if labels_required else None
    return (
        values[:nnz],
        indices[:nnz],
        indptr[: n_rows + 1],
        y,
        line_offsets[:n_rows],
        width,
    )
