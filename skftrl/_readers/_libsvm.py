"""LIBSVM (svmlight) files in chunks: parsing, a model's columns, and the first pass.

Blocks are parsed by :func:`~._libsvm_numpy.parse_plain_libsvm_arrays`, the
vectorised numpy parser of the common form (``label index:value ...`` with
plain decimal numbers), which gives exactly what scikit-learn's
``load_svmlight_file`` gives; any other block (comments, ``qid``, exponents,
long numbers, and every malformed line) goes to ``load_svmlight_file``
itself, whose errors are then explained line by line by
:func:`libsvm_line_problem`. With numba installed, large blocks go first to
the same parser compiled (:mod:`._libsvm_numba`), which also reads comments,
``qid`` and exponents with identical results; the numpy parser stays the
reference. Blocks are read, parsed and cut into chunks ahead in a thread
(:func:`~._sources.read_ahead`).

Indices are parsed as written; :func:`fit_to_model` makes them a model's
columns, as its :class:`~._spec.LibsvmSpec` says.
"""

import io
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from ._chunks import MAX_CLASSES, Chunk, collect_classes, rechunk, row_at, too_many_labels
from ._libsvm_numpy import parse_plain_libsvm_arrays
from ._sources import IMPORT_LOCK, ByteSource, DataError, line_blocks, read_ahead, source_name

# Parsed chunks kept ready ahead of the one being used: about two blocks of
# text (see _sources.BLOCK_SIZE), enough for the parser to keep ahead while
# memory stays flat in the file size.
CHUNK_BYTES_AHEAD = 32 * 2**20

# Feature indices of a LIBSVM file must fit the 32-bit integers of the parser.
MAX_INDEX = 2**31 - 1

# Blocks of at least this many bytes go to the compiled parser: below, the
# import of numba and the load of the compiled code cost more than they save.
COMPILED_PARSER_BYTES = 2**20


def libsvm_line_problem(line, labels_required):
    """What is wrong with one LIBSVM line, or None if it is well formed.

    Mirrors what scikit-learn's ``load_svmlight_file`` accepts: an optional
    ``# comment``, a label (optional when ``labels_required`` is False, as for
    prediction), an optional ``qid:<id>``, then ``index:value`` pairs with
    indices in ascending order, without repeats.
    """
    tokens = line.split(b"#", 1)[0].split()
    if not tokens:
        return None
    if labels_required or b":" not in tokens[0]:
        label, tokens = tokens[0], tokens[1:]
        # Where labels are optional, multilabel lines ("1,3") are accepted too.
        try:
            for part in [label] if labels_required else label.split(b","):
                float(part)
        except ValueError:
            return f"the label {label.decode(errors='replace')!r} is not a number"
    if tokens and tokens[0].startswith(b"qid"):
        if b":" not in tokens[0]:
            return f"{tokens[0].decode(errors='replace')!r} is not qid:<id>"
        tokens = tokens[1:]
    previous = -1
    for token in tokens:
        text = token.decode(errors="replace")
        index, colon, value = token.partition(b":")
        if not colon:
            return f"{text!r} is not index:value"
        try:
            index = int(index)
        except ValueError:
            return f"the feature index in {text!r} is not an integer"
        if not 0 <= index <= MAX_INDEX:
            return f"the feature index in {text!r} is outside [0, {MAX_INDEX}]"
        if index <= previous:
            return (
                f"feature index {index} after {previous}: indices must be in "
                "ascending order, without repeats"
            )
        try:
            float(value)
        except ValueError:
            return f"the feature value in {text!r} is not a number"
        previous = index
    return None


def has_data(line):
    """Whether a LIBSVM line holds a row (not blank, not only a comment)."""
    return bool(line.split(b"#", 1)[0].split())


def compiled_plain_parser():
    """The numba-compiled :func:`parse_plain_libsvm_arrays` (identical
    results, much faster; it also reads comments, qid and exponents as
    scikit-learn does), or None without numba."""
    global _compiled_parser
    if _compiled_parser is False:
        try:
            from ._libsvm_numba import parse_plain_libsvm_arrays as compiled
        except ImportError:
            compiled = None
        _compiled_parser = compiled
    return _compiled_parser


_compiled_parser = False  # not looked for yet


def parse_plain_libsvm(block, labels_required, compiled=True):
    """``(X, y, line_offsets)`` of a block of plain LIBSVM lines (see
    :func:`parse_plain_libsvm_arrays`), or None; by the compiled parser when
    numba is installed, ``compiled`` and the block has COMPILED_PARSER_BYTES
    or more (so that a small file does not import numba)."""
    use_compiled = compiled and len(block) >= COMPILED_PARSER_BYTES
    parse = (use_compiled and compiled_plain_parser()) or parse_plain_libsvm_arrays
    parsed = parse(block, labels_required)
    if parsed is None:
        return None
    values, indices, indptr, y, line_offsets, width = parsed
    X = sp.csr_matrix((values, indices, indptr), shape=(len(line_offsets), width))
    return X, y, line_offsets


def parse_libsvm_block(path, first_line, block, labels_required=True):
    """Parse a block of whole LIBSVM lines; indices are returned as written.

    Returns a Chunk whose ``X`` is as wide as its largest index + 1, with
    ``y`` None when ``labels_required`` is False (labels are then optional
    and ignored). Raises DataError naming the first malformed line.
    """
    plain = parse_plain_libsvm(block, labels_required)
    if plain is not None:
        # At most 15 digits and powers of ten within 10**+-22: always finite.
        X, y, line_offsets = plain
        return Chunk(X, y, first_line + line_offsets)
    chunk = parse_with_sklearn(path, first_line, block, labels_required)
    check_finite(path, chunk)
    return chunk


def parse_with_sklearn(path, first_line, block, labels_required):
    """:func:`parse_libsvm_block` by scikit-learn's parser: any form it accepts."""
    with IMPORT_LOCK:
        from sklearn.datasets import load_svmlight_file

    lines = io.BytesIO(block).readlines()  # split at "\n" only, as load_svmlight_file
    try:
        # Multilabel mode accepts lines without a label, which prediction allows.
        X, y = load_svmlight_file(
            io.BytesIO(block), dtype=np.float64, zero_based=True, multilabel=not labels_required
        )
    except (ValueError, OverflowError, TypeError) as error:
        # Find the line, with the slower parser that explains it.
        for number, line in enumerate(lines, start=first_line):
            problem = libsvm_line_problem(line, labels_required)
            if problem is not None:
                raise DataError(path, number, problem) from None
        last_line = first_line + len(lines) - 1
        raise DataError(path, first_line, f"in lines {first_line}-{last_line}: {error}") from None
    if X.shape[0] == len(lines):
        line_numbers = np.arange(first_line, first_line + len(lines))
    else:  # blank or comment lines hold no row
        line_numbers = np.array(
            [n for n, line in enumerate(lines, start=first_line) if has_data(line)],
            dtype=np.int64,
        )
    y = np.asarray(y, dtype=np.float64) if labels_required else None
    return Chunk(X, y, line_numbers)


def check_finite(path, chunk):
    """Raise DataError at the first row with a non-finite value or label."""
    bad = np.flatnonzero(~np.isfinite(chunk.X.data))
    if bad.size:
        line = int(chunk.lines[row_at(chunk.X, bad[0])])
        raise DataError(path, line, f"the feature value {chunk.X.data[bad[0]]} is not finite")
    if chunk.y is not None:
        bad = np.flatnonzero(~np.isfinite(chunk.y))
        if bad.size:
            raise DataError(
                path, int(chunk.lines[bad[0]]), f"the label {chunk.y[bad[0]]} is not finite"
            )


def libsvm_pieces(path, labels_required=True):
    """Parsed blocks of a LIBSVM input (any number of rows each), indices as written."""
    source = ByteSource(path)
    try:
        for first_line, block in line_blocks(source):
            yield parse_libsvm_block(source.path, first_line, block, labels_required)
    finally:
        source.close()


def libsvm_row_chunks(path, chunk_size, labels_required=True, start=read_ahead):
    """Chunks of exactly ``chunk_size`` rows (the last may be shorter), indices as written.

    The input is read, parsed and cut into chunks ahead in a thread
    (``start``: :func:`read_ahead`, :class:`~._sources.ReadAhead` to start
    at once, or :func:`~._sources.read_on_demand` for no thread),
    CHUNK_BYTES_AHEAD of chunks at most, so that this work overlaps with the
    work on the chunk being used.
    """
    chunks = rechunk(libsvm_pieces(path, labels_required), chunk_size)
    return start(chunks, CHUNK_BYTES_AHEAD, lambda chunk: chunk.nbytes)


# What the errors of fit_to_model suggest: the command line's options, or
# the arguments of skftrl.readers.iter_libsvm.
COMMAND_LINE_HINTS = {
    "zero_based": "its training file had no index 0; --zero-based reads indices from 0",
    "wider": "train with --n-features for a wider model, or --hash-bits; "
    "--drop-extra-features leaves such indices out",
}
PYTHON_HINTS = {
    "zero_based": "zero_based=True reads indices from 0",
    "wider": "a larger n_features, or hash_bits, reads them",
}


def fit_to_model(path, chunk, spec, hints=COMMAND_LINE_HINTS, drop_extra=False):
    """A chunk of indices as written, made into the columns of a model whose
    input is ``spec`` (a :class:`~._spec.LibsvmSpec`).

    Indices are made zero-based; an index the model does not have is an
    error naming its line (and what ``hints`` suggests), or with
    ``drop_extra``, an index beyond the model's width is left out. With
    ``hash_bits``, an index is taken modulo ``2**hash_bits`` and values of the
    same column in a row are added up.
    """
    X = chunk.X
    if spec.hash_bits is not None:
        columns = X.indices.astype(np.int64) & (2**spec.hash_bits - 1)
        X = sp.csr_matrix((X.data, columns, X.indptr), shape=(X.shape[0], spec.n_features))
        X.sum_duplicates()
        return chunk._replace(X=X)
    zero_based, n_features = spec.zero_based, spec.n_features
    offset = 0 if zero_based else 1
    if X.nnz:
        if not zero_based and X.indices.min() == 0:
            position = int(np.argmin(X.indices))
            raise DataError(
                path,
                int(chunk.lines[row_at(X, position)]),
                f"feature index 0, but this model's indices start at 1 ({hints['zero_based']})",
            )
        if drop_extra:
            X = drop_columns_from(X, n_features + offset)
        position = int(np.argmax(X.indices)) if X.nnz else 0
        if X.nnz and X.indices[position] - offset >= n_features:
            raise DataError(
                path,
                int(chunk.lines[row_at(X, position)]),
                f"feature index {X.indices[position]} is beyond the model's "
                f"{n_features} features (indices {offset} to {n_features - 1 + offset}; "
                f"{hints['wider']})",
            )
    indices = X.indices - offset if offset else X.indices
    X = sp.csr_matrix((X.data, indices, X.indptr), shape=(X.shape[0], n_features))
    return chunk._replace(X=X)


def drop_columns_from(X, first):
    """``X`` (CSR) without its values in the columns ``first`` and beyond."""
    kept = X.indices < first
    if kept.all():
        return X
    kept_before = np.concatenate(([0], np.cumsum(kept)))  # values kept before each one
    indptr = kept_before[X.indptr]
    return sp.csr_matrix((X.data[kept], X.indices[kept], indptr), shape=X.shape)


def read_libsvm(
    path,
    chunk_size,
    spec,
    labels_required=True,
    hints=COMMAND_LINE_HINTS,
    drop_extra=False,
    start=read_ahead,
):
    """Chunks of a LIBSVM input in a model's columns (see :func:`fit_to_model`),
    read ahead as ``start`` says (see :func:`libsvm_row_chunks`)."""
    name = source_name(path)
    for chunk in libsvm_row_chunks(path, chunk_size, labels_required, start):
        yield fit_to_model(name, chunk, spec, hints, drop_extra)


class LibsvmScan(NamedTuple):
    """What a first pass over a LIBSVM training file found."""

    n_rows: int
    n_features: int  # the width a model needs: the largest index + 1 - offset
    zero_based: bool  # whether some index is 0 (as load_svmlight_file's "auto")
    largest_index: int  # as written in the file; -1 if there is no feature
    largest_index_line: int  # where it first appears
    labels: np.ndarray  # the sorted distinct labels (classification), else None


def scan_libsvm(path, chunk_size, collect_labels, progress=None, cache=None, chunks=None):
    """A first streaming pass over a LIBSVM training file.

    ``collect_labels`` gathers the distinct labels (at most MAX_CLASSES);
    ``progress(rows)`` is called after each chunk; ``cache`` (a ChunkCache)
    keeps every chunk, so that training need not parse the text again.
    ``chunks`` are the file's chunks when they are being read already
    (:func:`libsvm_row_chunks` by default).
    """
    n_rows, largest, largest_line, zero_based = 0, -1, 0, False
    labels = set()
    if chunks is None:
        chunks = libsvm_row_chunks(path, chunk_size)
    for chunk in chunks:
        if chunk.X.nnz:
            position = int(np.argmax(chunk.X.indices))
            if chunk.X.indices[position] > largest:
                largest = int(chunk.X.indices[position])
                largest_line = int(chunk.lines[row_at(chunk.X, position)])
            zero_based = zero_based or bool(chunk.X.indices.min() == 0)
        if collect_labels:
            collect_classes(path, int(chunk.lines[-1]), np.unique(chunk.y).tolist(), labels)
        if cache is not None:
            cache.write(chunk)
        n_rows += chunk.n_rows
        if progress is not None:
            progress(n_rows)
    if n_rows == 0:
        raise DataError(path, None, "no data rows")
    offset = 0 if zero_based else 1
    return LibsvmScan(
        n_rows,
        max(largest + 1 - offset, 1),
        zero_based,
        largest,
        largest_line,
        np.array(sorted(labels)) if collect_labels else None,
    )


def quick_scan_libsvm(path, collect_labels, stop=None):
    """The :class:`LibsvmScan` of a training file by the compiled scan of its
    labels and indices (values skipped), or None without numba or when the
    file holds a form that scan leaves to the parser (:func:`scan_libsvm`
    then reads it). Its findings equal :func:`scan_libsvm`'s on every file
    it reads; a value it skips is checked by the parse that learns from it.
    When ``stop`` (a :class:`threading.Event`) is set, the scan ends at the
    next block and returns None.
    """
    try:
        from ._libsvm_numba import (
            LARGEST,
            LARGEST_LINE,
            N_LABELS,
            OTHER_FORM_LINE,
            ROWS,
            SMALLEST,
            TOO_MANY_LINE,
            scan_block,
        )
    except ImportError:
        return None
    found = np.zeros(7, dtype=np.int64)
    found[LARGEST], found[SMALLEST] = -1, MAX_INDEX + 1
    labels = np.empty(MAX_CLASSES if collect_labels else 0)  # one more stops the scan
    source = ByteSource(path)
    try:
        for first_line, block in line_blocks(source):
            if stop is not None and stop.is_set():
                return None
            scan_block(block, first_line, found, labels)
            if found[OTHER_FORM_LINE]:
                return None
            if found[TOO_MANY_LINE]:
                raise too_many_labels(path, int(found[TOO_MANY_LINE]))
    finally:
        source.close()
    if not found[ROWS]:
        raise DataError(path, None, "no data rows")
    zero_based = bool(found[SMALLEST] == 0)
    offset = 0 if zero_based else 1
    largest = int(found[LARGEST])
    return LibsvmScan(
        int(found[ROWS]),
        max(largest + 1 - offset, 1),
        zero_based,
        largest,
        int(found[LARGEST_LINE]) if largest >= 0 else 0,
        np.array(sorted(labels[: found[N_LABELS]].tolist())) if collect_labels else None,
    )
