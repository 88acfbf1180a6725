"""The LIBSVM parser of :mod:`._libsvm_numpy` compiled with numba (optional).

:func:`parse_plain_libsvm_arrays` reads the lines of
:func:`._libsvm_numpy.parse_plain_libsvm_arrays`, the vectorised numpy parser, and
gives the same arrays bit for bit; it also reads what that parser leaves to
scikit-learn's (much slower) ``load_svmlight_file`` in the common cases:
comments, a ``qid:`` after the label, numbers with an exponent (``1e-05``,
as ``svm-scale`` writes them), giving what scikit-learn gives
(tests/test_io.py compares the readers with and without it, errors
included). Anything else (a malformed line among them) gives None, and the
block goes to those parsers, which read or explain it. It is one pass over
the bytes instead of numpy's dozens, and it releases the GIL. Importing this
module needs numba (``pip install "skftrl[fast]"``).
"""

import numpy as np
from numba import njit

# The exact doubles 10**0 to 10**22 (see _decimal).
MAX_POWER = 22
POWERS_OF_TEN = np.array([float(10**exponent) for exponent in range(MAX_POWER + 1)])
MAX_DIGITS = 15
MAX_INDEX_DIGITS = 9
FAILED = (-1, -1, -1)


def _decimal(buffer, start, end):
    """``(ok, value)`` of ``[+-]digits[.digits][(e|E)[+-]digits]`` in ``buffer[start:end]``.

    At most 15 digits before the exponent, and a power of ten (the exponent
    less the digits after the dot) within 10**-22 to 10**22: the integer of
    the digits and the power are then exact doubles, and the one
    multiplication or division is correctly rounded, as ``float()`` is.
    Anything else is not ok.
    """
    negative = False
    if start < end and (buffer[start] == 45 or buffer[start] == 43):  # "-", "+"
        negative = buffer[start] == 45
        start += 1
    mantissa, digits, fraction_digits, seen_dot = 0, 0, 0, False
    position = start
    while position < end:
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
        elif byte == 101 or byte == 69:  # "e", "E"
            break
        else:
            return False, 0.0
        position += 1
    if digits == 0:
        return False, 0.0
    power = -fraction_digits
    if position < end:  # the exponent
        position += 1
        exponent_negative = False
        if position < end and (buffer[position] == 45 or buffer[position] == 43):
            exponent_negative = buffer[position] == 45
            position += 1
        if position == end or end - position > 3:
            return False, 0.0
        exponent = 0
        while position < end:
            byte = buffer[position]
            if not 48 <= byte <= 57:
                return False, 0.0
            exponent = exponent * 10 + (byte - 48)
            position += 1
        power += -exponent if exponent_negative else exponent
    if power > MAX_POWER or power < -MAX_POWER:
        return False, 0.0
    if power >= 0:
        value = mantissa * POWERS_OF_TEN[power]
    else:
        value = mantissa / POWERS_OF_TEN[-power]
    return True, -value if negative else value


def _skip_line(buffer, position):
    """Where the line holding ``position`` ends (at its newline, or the end)."""
    while position < buffer.size and buffer[position] != 10:
        position += 1
    return position


def _qid(buffer, start, end):
    """Whether ``buffer[start:end]`` is ``qid:<integer>``, as scikit-learn reads it."""
    if end - start < 5 or not (
        buffer[start] == 113
        and buffer[start + 1] == 105
        and buffer[start + 2] == 100
        and buffer[start + 3] == 58
    ):  # "qid:"
        return False
    start += 4
    if buffer[start] == 45 or buffer[start] == 43:
        start += 1
    if start == end or end - start > 18:
        return False
    for position in range(start, end):
        if not 48 <= buffer[position] <= 57:
            return False
    return True


def _parse(buffer, labels_required, values, indices, indptr, labels, line_offsets):
    """Fill the arrays (as many values as colons, rows as lines); ``(n_rows, nnz,
    width)``, or FAILED when the block holds anything else."""
    size = buffer.size
    n_rows, nnz, line, row_line, previous_index, largest = 0, 0, 0, -1, -1, -1
    after_label = False  # the previous token was the line's label
    # Beyond the numpy parser's forms: a comment, a qid or an exponent; and a
    # label that is not a number, which only a prediction (labels not
    # required) reads. scikit-learn refuses both together.
    extended, bad_label = False, False
    position = 0
    while position < size:
        byte = buffer[position]
        if byte == 10:
            line += 1
            position += 1
            after_label = False
            continue
        if byte == 32 or byte == 9 or byte == 13:
            position += 1
            continue
        if byte == 35:  # "#": a comment, to the end of the line
            position = _skip_line(buffer, position)
            extended = True
            continue
        # The common tokens first: a line's label, then its "index:value"
        # pairs, plain decimals (the forms of _decimal without an exponent).
        # Any other token, or one the general path below would refuse, is
        # read by that path from its start. Written out here rather than in
        # functions: a call taking the buffer costs more than a token (numba
        # counts the array's references at each call).
        end, index = position, -1  # index -1: a label
        if row_line == line:
            index, digits = 0, 0
            while end < size:
                digit = np.int64(buffer[end]) - 48
                if digit < 0 or digit > 9:
                    break
                index = index * 10 + digit
                digits += 1
                end += 1
            if (
                digits == 0
                or digits > MAX_INDEX_DIGITS
                or index <= previous_index
                or end == size
                or buffer[end] != 58  # ":"
            ):
                index = -2  # not a plain feature
            end += 1
        if index != -2:
            negative = end < size and buffer[end] == 45  # "-"
            if end < size and (buffer[end] == 45 or buffer[end] == 43):
                end += 1
            mantissa, digits, fraction_digits, seen_dot = 0, 0, 0, False
            while end < size:
                digit = np.int64(buffer[end]) - 48
                if 0 <= digit <= 9:
                    mantissa = mantissa * 10 + digit
                    digits += 1
                    if seen_dot:
                        fraction_digits += 1
                elif digit == -2 and not seen_dot:  # "."
                    seen_dot = True
                else:
                    break
                end += 1
            if 0 < digits <= MAX_DIGITS and (
                end == size
                or buffer[end] == 32
                or buffer[end] == 9
                or buffer[end] == 13
                or buffer[end] == 10
                or buffer[end] == 35
            ):
                if fraction_digits == 0:
                    value = mantissa * POWERS_OF_TEN[0]
                else:
                    value = mantissa / POWERS_OF_TEN[fraction_digits]
                if negative:
                    value = -value
                if index >= 0:
                    values[nnz] = value
                    indices[nnz] = index
                    previous_index = index
                    largest = max(largest, index)
                    nnz += 1
                    indptr[n_rows] = nnz
                    # The line's next pair, most often after one space, read
                    # at once (about a tenth faster than going round).
                    if end + 1 < size and buffer[end] == 32 and 48 <= buffer[end + 1] <= 57:
                        position = end + 1
                        continue
                else:
                    row_line = line
                    line_offsets[n_rows] = line
                    labels[n_rows] = value
                    n_rows += 1
                    indptr[n_rows] = nnz
                    previous_index = -1
                after_label = index < 0
                position = end
                continue
        # A token: bytes above the space, up to the next byte below 33 or "#".
        start, colon, qid = position, -1, False
        while position < size and buffer[position] > 32 and buffer[position] != 35:
            byte = buffer[position]
            if byte == 58:
                if colon >= 0:
                    return FAILED
                colon = position
            elif byte == 101 or byte == 69:  # "e", "E"
                extended = True
            elif not (48 <= byte <= 57 or byte == 46 or byte == 43 or byte == 45):
                if not (after_label and _qid(buffer, start, _token_end(buffer, start))):
                    return FAILED
                qid = True
                position = _token_end(buffer, start)
                break
            position += 1
        end = position
        if position < size and not (
            buffer[position] == 32
            or buffer[position] == 9
            or buffer[position] == 13
            or buffer[position] == 10
            or buffer[position] == 35
        ):
            return FAILED
        if qid:  # the query id after the label, which the rows leave out
            after_label, extended = False, True
            continue
        after_label = False
        if row_line != line:  # the line's first token starts a row
            row_line = line
            line_offsets[n_rows] = line
            n_rows += 1
            indptr[n_rows] = nnz
            previous_index = -1
            if colon < 0:  # a label
                ok, label = _decimal(buffer, start, end)
                if labels_required and not ok:
                    return FAILED
                labels[n_rows - 1] = label
                bad_label = bad_label or not ok
                after_label = True
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
    if extended and bad_label:
        return FAILED
    return n_rows, nnz, largest + 1


def _count(buffer):
    """``(colons, newlines)`` in ``buffer``: the most values and (less one) rows
    of a block. One loop the compiler vectorises, several times faster than
    ``bytes.count`` twice."""
    colons, newlines = 0, 0
    for position in range(buffer.size):
        byte = buffer[position]
        colons += byte == 58
        newlines += byte == 10
    return colons, newlines


def _token_end(buffer, start):
    """Where the token starting at ``start`` ends: the next byte below 33 or "#"."""
    position = start
    while position < buffer.size and buffer[position] > 32 and buffer[position] != 35:
        position += 1
    return position


# What a scan has found so far, in one array (see _scan).
ROWS, LARGEST, LARGEST_LINE, SMALLEST, N_LABELS, TOO_MANY_LINE, OTHER_FORM_LINE = range(7)


def _scan(buffer, first_line, found, labels):
    """The labels and indices of a block of whole LIBSVM lines (the first of
    them ``first_line``), the values skipped: the first pass over a training
    file, several times cheaper than a parse.

    Adds the block's rows to ``found[ROWS]``, keeps ``found[LARGEST]`` (and
    the line where it first appears) and ``found[SMALLEST]``, and appends
    each new label to ``labels`` (``found[N_LABELS]`` of them; none if
    ``labels`` is empty). A label that would overflow ``labels`` stops the
    scan, its line in ``found[TOO_MANY_LINE]``. It reads the forms of the parser's common
    tokens (a plain decimal label, ``index:`` with 1 to 9 digits of index,
    whitespace, comments); any other form stops it, the line in
    ``found[OTHER_FORM_LINE]``, and the parser's own pass reads or explains
    the file instead. A value is skipped to the end of its token: the parse
    that learns from it checks it.
    """
    size = buffer.size
    line, row_line, position = first_line, -1, 0
    while position < size:
        byte = buffer[position]
        if byte == 10:
            line += 1
            position += 1
            continue
        if byte == 32 or byte == 9 or byte == 13:
            position += 1
            continue
        if byte == 35:  # "#": a comment, to the end of the line
            while position < size and buffer[position] != 10:
                position += 1
            continue
        if row_line != line:  # the line's label: a plain decimal
            negative = buffer[position] == 45  # "-"
            if buffer[position] == 45 or buffer[position] == 43:
                position += 1
            mantissa, digits, fraction_digits, seen_dot = 0, 0, 0, False
            while position < size:
                digit = np.int64(buffer[position]) - 48
                if 0 <= digit <= 9:
                    mantissa = mantissa * 10 + digit
                    digits += 1
                    if seen_dot:
                        fraction_digits += 1
                elif digit == -2 and not seen_dot:  # "."
                    seen_dot = True
                else:
                    break
                position += 1
            if not (0 < digits <= MAX_DIGITS) or not (
                position == size
                or buffer[position] == 32
                or buffer[position] == 9
                or buffer[position] == 13
                or buffer[position] == 10
                or buffer[position] == 35
            ):
                found[OTHER_FORM_LINE] = line
                return
            if fraction_digits == 0:
                label = mantissa * POWERS_OF_TEN[0]
            else:
                label = mantissa / POWERS_OF_TEN[fraction_digits]
            if negative:
                label = -label
            row_line = line
            found[ROWS] += 1
            if labels.size == 0:  # the labels are not collected
                continue
            known = False
            for seen in range(found[N_LABELS]):
                if labels[seen] == label:
                    known = True
                    break
            if not known:
                if found[N_LABELS] == labels.size:
                    found[TOO_MANY_LINE] = line
                    return
                labels[found[N_LABELS]] = label
                found[N_LABELS] += 1
            continue
        index, digits = 0, 0  # "index:", then the value skipped
        while position < size:
            digit = np.int64(buffer[position]) - 48
            if digit < 0 or digit > 9:
                break
            index = index * 10 + digit
            digits += 1
            position += 1
        if digits == 0 or digits > MAX_INDEX_DIGITS or position == size or buffer[position] != 58:
            found[OTHER_FORM_LINE] = line
            return
        while position < size and buffer[position] > 32 and buffer[position] != 35:
            position += 1
        if index > found[LARGEST]:
            found[LARGEST] = index
            found[LARGEST_LINE] = line
        found[SMALLEST] = min(found[SMALLEST], index)


try:
    njit(cache=True)(_skip_line)
    cache = True
except RuntimeError:  # no writable cache location (see skftrl._engines._compile)
    cache = False
_decimal = njit(cache=cache, nogil=True)(_decimal)
_skip_line = njit(cache=cache, nogil=True)(_skip_line)
_qid = njit(cache=cache, nogil=True)(_qid)
_token_end = njit(cache=cache, nogil=True)(_token_end)
_parse_compiled = njit(cache=cache, nogil=True)(_parse)
_count_compiled = njit(cache=cache, nogil=True)(_count)
_scan_compiled = njit(cache=cache, nogil=True)(_scan)


def parse_plain_libsvm_arrays(block, labels_required):
    """``(values, indices, indptr, y, line_offsets, width)`` of a block of whole
    LIBSVM lines, as :func:`._libsvm_numpy.parse_plain_libsvm_arrays` gives them, or None
    for a block this parser leaves to the others (see the module docstring)."""
    if not block:
        return None
    buffer = np.frombuffer(block, dtype=np.uint8)
    n_values, n_lines = _count_compiled(buffer)
    values, indices = np.empty(n_values), np.empty(n_values, dtype=np.int32)
    indptr = np.zeros(n_lines + 2, dtype=np.int32)
    labels, line_offsets = np.empty(n_lines + 1), np.empty(n_lines + 1, dtype=np.int64)
    n_rows, nnz, width = _parse_compiled(
        buffer,
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


def scan_block(block, first_line, found, labels):
    """:func:`_scan`, compiled, of a block of whole lines (bytes)."""
    _scan_compiled(np.frombuffer(block, dtype=np.uint8), first_line, found, labels)
