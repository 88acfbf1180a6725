"""Vowpal Wabbit's text format in chunks: the common subset, hashed.

A line is ``[label [importance]] ['tag]|namespace[:weight] feature[:value] ...
|namespace ...``: a label (a number), an importance weight (a number >= 0,
the row's sample weight), a tag (a token starting with ``'``, or the token
written against the first ``|``), then namespaces of features. A namespace
named right after its ``|`` is a field of its own; ``| a b`` (a space after
the bar) holds the default namespace's features. A namespace's weight
multiplies the values of its features; a feature without ``:value`` has the
value 1. Tokens are separated by spaces and tabs (and the CR of a CRLF line
end), as Vowpal Wabbit separates them: other whitespace (a no-break space,
an ideographic space, a form feed ...) is part of its token. Blank lines
(of spaces and tabs only) hold no row. A value whose product with its
namespace's weight, a cross or a sum of values landing in one column of a
row overflows float64 is an error that names its line.

A feature ``f`` of the namespace ``ns`` is the hashed feature named
``ns=f`` (``f`` in the default namespace), as :mod:`._hashing` hashes every
name; a table's column ``ns`` holding the category ``f`` lands in the same
column. ``interactions`` cross namespaces as Vowpal Wabbit's ``-q ab`` (and
``--cubic abc``) do: each string names namespaces by their first letters, and
every feature of a namespace starting with ``a`` is crossed with every
feature of one starting with ``b`` in the same row.

Lines are parsed in Python, a block of whole lines at a time; what this
subset does not read (cost-sensitive or contextual-bandit labels, a base
prediction) is an error that names its line. A block without a ``:`` (no
feature values, no namespace weights: every feature's value is 1, as in most
click logs) is read by a shorter loop, :func:`plain_rows`, several times
faster than reading each token as :func:`full_rows` does; both give the same
rows. With numba installed, a block of ASCII text (with or without ``:``) is
read, hashed and made into its matrix, crosses included, by compiled code
(:mod:`._vw_numba`) in one pass, faster again, with the same result; only
the heads of its rows (label, weight, tag) are read in Python, each
distinct one once. Once the compiled reader has read a block, it reads the
input's smaller blocks too (its code is loaded), and the lines it counted
spare :func:`._sources.line_blocks` its own count.
"""

import itertools
import math
import re
from typing import NamedTuple

import numpy as np

from ._chunks import Chunk, rechunk
from ._hashing import (
    OVERFLOWS,
    Features,
    canonical_matrix,
    columns_of,
    concatenate_features,
    crossed_hashes,
    crosses,
    hash_names,
    hashed_matrix,
    listed,
    overflowing_sum,
)
from ._sources import ByteSource, DataError, line_blocks, newline_count, read_ahead

# What separates tokens: spaces and tabs, as Vowpal Wabbit reads them, and
# CRs (of CRLF line ends). str.split() splits on these and on other
# whitespace, which no block holds in most files: those that do are split by
# TOKEN.findall, which keeps the other whitespace in its tokens.
SEPARATORS = " \t\r"
TOKEN = re.compile(r"[^ \t\r]+")
# The whitespace str.split() splits on beyond SEPARATORS (and the line end):
# in ASCII, and beyond.
OTHER_ASCII_WHITESPACE = "\x0b\x0c\x1c\x1d\x1e\x1f"
OTHER_WHITESPACE = re.compile(
    "[\x0b\x0c\x1c-\x1f\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"
)


def tokens_of(text):
    """The function that splits the segments of ``text`` into tokens (at
    SEPARATORS): ``str.split`` where it splits the same."""
    if text.isascii():  # the common case: a few fast scans, not a regex's
        other = any(space in text for space in OTHER_ASCII_WHITESPACE)
    else:
        other = OTHER_WHITESPACE.search(text) is not None
    return TOKEN.findall if other else str.split


def is_blank(text):
    return not text.strip(SEPARATORS)


# Blocks of at least this many bytes go to the compiled reader: below, the
# import of numba and the load of the compiled code cost more than they save.
COMPILED_BYTES = 2**20


class VwLine(NamedTuple):
    label: float  # NaN without a label
    weight: float  # NaN without an importance weight
    tag: str  # "" without a tag
    features: list  # (namespace, name, value)


class VwRows(NamedTuple):
    """The rows of a block of lines: each row's ``heads`` (label, importance
    weight, tag, as :func:`parse_head` gives them) and line number, and each
    feature's row (counted from 0 in the block), name (``namespace=name``),
    value and namespace."""

    heads: list
    lines: list
    rows: list
    names: list
    values: list
    namespaces: list


def number(path, line, text, what):
    """A finite float of ``text``; DataError naming ``what`` otherwise."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise DataError(path, line, f"the {what} {text!r} is not a finite number")
    return value


def parse_head(path, line, head):
    """``(label, weight, tag)`` of the part of a line before its first ``|``."""
    tokens = tokens_of(head)(head)
    tag = ""
    if tokens and (tokens[-1].startswith("'") or head[-1] not in SEPARATORS):
        tag = tokens.pop().removeprefix("'")
    if len(tokens) > 2:
        raise DataError(
            path,
            line,
            f"{head.strip()!r} before the first '|': a label, an importance weight and a tag "
            "are read, not a base prediction",
        )
    label = weight = math.nan
    if tokens:
        if ":" in tokens[0]:
            raise DataError(
                path,
                line,
                f"the label {tokens[0]!r} is not a number (cost-sensitive and "
                "contextual-bandit labels are not read)",
            )
        label = number(path, line, tokens[0], "label")
    if len(tokens) == 2:
        weight = number(path, line, tokens[1], "importance weight")
        if weight < 0:
            raise DataError(path, line, f"the importance weight {tokens[1]!r} is negative")
    return label, weight, tag


def head_and_features(path, line, text):
    """``(head, rest)``: a line's text before its first ``|`` and after it."""
    head, bar, rest = text.partition("|")
    if not bar:
        raise DataError(
            path,
            line,
            "no '|' in the line: Vowpal Wabbit text is "
            "'label [importance] ['tag]|namespace feature[:value] ...'",
        )
    return head, rest


def named_namespace(segment, tokens):
    """Whether a segment (the text between two bars, split into ``tokens``)
    starts with its namespace's name: a bar followed by a space or nothing
    opens the default namespace."""
    return segment[:1] not in ("", " ", "\t") and bool(tokens)


def parse_line(path, line, text, split=str.split):
    """The :class:`VwLine` of one line of text (not blank), its segments
    split into tokens by ``split`` (see :func:`tokens_of`)."""
    head, rest = head_and_features(path, line, text)
    label, weight, tag = parse_head(path, line, head)
    features = []
    for segment in rest.split("|"):
        tokens = split(segment)
        namespace, scale = "", 1.0
        if named_namespace(segment, tokens):
            namespace, colon, scale_text = tokens.pop(0).partition(":")
            if colon:
                scale = number(path, line, scale_text, f"weight of namespace {namespace!r}")
        for token in tokens:
            name, colon, value_text = token.partition(":")
            value = scale
            if colon:
                number_ = number(path, line, value_text, f"value of feature {name!r}")
                value = scale * number_
                if math.isinf(value):
                    raise DataError(
                        path,
                        line,
                        f"the value of feature {name!r} ({number_!r}) times the weight of "
                        f"namespace {namespace!r} ({scale!r}) {OVERFLOWS}",
                    )
            if not name:
                raise DataError(path, line, f"the feature {token!r} has no name")
            features.append((namespace, name, value))
    return VwLine(label, weight, tag, features)


def full_rows(path, first_line, text):
    """The :class:`VwRows` of a block of lines (``text``, its first line
    numbered ``first_line``), each token read by :func:`parse_line`."""
    parsed = VwRows([], [], [], [], [], [])
    split = tokens_of(text)
    for line, line_text in enumerate(text.split("\n"), start=first_line):
        if is_blank(line_text):
            continue
        vw_line = parse_line(path, line, line_text, split)
        row = len(parsed.heads)
        parsed.heads.append(vw_line[:3])
        parsed.lines.append(line)
        for namespace, name, value in vw_line.features:
            parsed.rows.append(row)
            parsed.names.append(f"{namespace}={name}" if namespace else name)
            parsed.values.append(value)
            parsed.namespaces.append(namespace)
    return parsed


def plain_rows(path, first_line, text):
    """:func:`full_rows` of a block without a ``:``, whose features all have
    the value 1: each segment's tokens taken whole."""
    parsed = VwRows([], [], [], [], [], [])
    heads, lines, rows, names, values, namespaces = parsed
    head_of = {}  # a block's heads repeat (a few labels): each read once
    split = tokens_of(text)
    for line, line_text in enumerate(text.split("\n"), start=first_line):
        head, bar, rest = line_text.partition("|")
        if not bar:  # a blank line, or an error
            if not is_blank(line_text):
                head_and_features(path, line, line_text)
            continue
        row_head = head_of.get(head)
        if row_head is None:
            row_head = head_of[head] = parse_head(path, line, head)
        row = len(heads)
        heads.append(row_head)
        lines.append(line)
        for segment in rest.split("|"):
            tokens = split(segment)
            namespace = ""
            if named_namespace(segment, tokens):
                namespace = tokens.pop(0)
                names.extend(map((namespace + "=").__add__, tokens))
            else:
                names.extend(tokens)
            rows.extend([row] * len(tokens))
            namespaces.extend([namespace] * len(tokens))
    values.extend([1.0] * len(names))
    return parsed


def head_arrays(heads):
    """The labels, importance weights (NaN where none) and tags of rows'
    heads (as :func:`parse_head` gives them), as three arrays."""
    labels = np.array([label for label, _, _ in heads], dtype=np.float64)
    weights = np.array([weight for _, weight, _ in heads], dtype=np.float64)
    return labels, weights, np.array([tag for _, _, tag in heads], dtype=object)


def compiled_reader():
    """The module :mod:`._vw_numba` (the compiled reader and matrix), or None without numba."""
    global _compiled_reader
    if _compiled_reader is False:
        try:
            from . import _vw_numba as compiled
        except ImportError:
            compiled = None
        _compiled_reader = compiled
    return _compiled_reader


_compiled_reader = False  # not looked for yet


def check_interactions(interactions):
    """VW's interactions: strings of two or more namespace first letters."""
    interactions = [] if interactions is None else list(interactions)
    for letters in interactions:
        if not isinstance(letters, str) or len(letters) < 2:
            raise ValueError(
                "each interaction is a string of two or more namespace first letters, "
                f"as Vowpal Wabbit's -q ab or --cubic abc; got {letters!r}"
            )
    return interactions


class VwParser:
    """Blocks of VW text into :class:`~._chunks.Chunk` pieces hashed into
    ``2**hash_bits`` columns, with each row's tag."""

    def __init__(self, path, hash_bits, interactions=(), labels_required=True):
        self.path = path
        self.hash_bits = hash_bits
        self.interactions = check_interactions(interactions)
        self.labels_required = labels_required
        self.labelled = None  # whether rows have labels: the first row tells
        # Each interaction's letters as code points, a row each (-1 past its
        # end), and their numbers: as the compiled code takes them.
        lengths = np.array([len(crossed) for crossed in self.interactions], dtype=np.int64)
        codes = np.full((len(lengths), max(lengths, default=0)), -1, dtype=np.int64)
        for t, crossed in enumerate(self.interactions):
            codes[t, : len(crossed)] = [ord(letter) for letter in crossed]
        self.codes = codes, lengths
        self.compiled = False  # whether the compiled reader has read a block
        self.newlines = None  # (block, its newlines) of the compiled reader's last block

    def parse(self, first_line, block):
        """The :class:`~._chunks.Chunk` of a block of whole lines, with its tags."""
        compiled = compiled_reader() if len(block) >= COMPILED_BYTES or self.compiled else None
        read = None if compiled is None else self.compiled_rows(compiled, first_line, block)
        if read is None:
            heads, lines, features, letters = self.python_rows(first_line, block)
            X = self.hashed(features, letters, len(lines))
            self.newlines = None
        else:
            heads, lines, X = read
            # Once its code is loaded, the compiled reader reads blocks of any size.
            self.compiled = True
        labels, weights, tags = heads
        y = self.labels(labels, lines)
        sample_weight = None
        if not np.isnan(weights).all():
            sample_weight = np.where(np.isnan(weights), 1.0, weights)
        if not np.isfinite(X.data).all():
            row = np.searchsorted(X.indptr, np.flatnonzero(~np.isfinite(X.data))[0], "right") - 1
            line = int(lines[row])
            text = block.split(b"\n")[line - first_line].decode("utf-8")
            raise self.overflow(line, text)
        return Chunk(X, y, np.asarray(lines, dtype=np.int64), sample_weight, tags)

    def newline_count(self, block):
        """The newlines of a block: those the compiled reader counted, if it
        read this block last."""
        if self.newlines is not None and self.newlines[0] is block:
            return self.newlines[1]
        return newline_count(block)

    def overflow(self, line, text):
        """The DataError of a line whose row's matrix holds a value beyond
        float64 (of finite values): a value times its namespace's weight
        (:func:`parse_line` raises it), a cross, or a sum of the values that
        land in one column, in the order :meth:`hashed` adds them."""
        features = parse_line(self.path, line, text, tokens_of(text)).features
        named = [
            (f"{namespace}={name}" if namespace else name, value, namespace[:1] or " ")
            for namespace, name, value in features
            if value != 0
        ]
        hashes = hash_names([name for name, _, _ in named]).tolist()
        entries = [(name, value, hash_) for (name, value, _), hash_ in zip(named, hashes)]
        for interaction in self.interactions:
            of_letter = [
                [k for k, (_, _, first) in enumerate(named) if first == letter]
                for letter in interaction
            ]
            for ks in itertools.product(*of_letter):
                hash_, value = hashes[ks[0]], named[ks[0]][1]
                for k in ks[1:]:
                    hash_ = int(crossed_hashes(np.int64(hash_), np.int64(hashes[k])))
                    value *= named[k][1]
                if math.isinf(value):
                    parts = [f"{named[k][0]!r} ({named[k][1]!r})" for k in ks]
                    return DataError(self.path, line, f"the cross of {listed(parts)} {OVERFLOWS}")
                entries.append(("^".join(named[k][0] for k in ks), value, hash_))
        columns = columns_of(np.array([hash_ for _, _, hash_ in entries]), self.hash_bits)
        names, values, _ = zip(*entries)
        message = overflowing_sum(zip(names, values, columns.tolist()))
        return DataError(self.path, line, message or f"a value of the row {OVERFLOWS}")

    def python_rows(self, first_line, block):
        """``(heads, lines, features, letters)`` of a block read in Python:
        the rows' heads (:func:`head_arrays`) and lines, their
        :class:`~._hashing.Features`, and each feature's namespace's first
        letter (its code point, that of a space for the default namespace)."""
        try:
            text = block.decode("utf-8")
        except UnicodeDecodeError as error:
            line = first_line + block.count(b"\n", 0, error.start)
            raise DataError(
                self.path, line, f"a byte is not UTF-8 text ({error.reason})"
            ) from None
        parsed = (plain_rows if ":" not in text else full_rows)(self.path, first_line, text)
        heads, lines, rows, names, values, namespaces = parsed
        distinct = list(dict.fromkeys(names))
        hash_of = dict(zip(distinct, hash_names(distinct).tolist()))
        n_features = len(names)
        features = Features(
            np.fromiter(rows, dtype=np.int64, count=n_features),
            np.fromiter(map(hash_of.__getitem__, names), dtype=np.int64, count=n_features),
            np.fromiter(values, dtype=np.float64, count=n_features),
        )
        letters = np.array([ord(namespace[:1] or " ") for namespace in namespaces], dtype=np.int64)
        return head_arrays(heads), lines, features, letters

    def compiled_rows(self, compiled, first_line, block):
        """``(heads, lines, X)`` of a block (as :meth:`python_rows` and
        :meth:`hashed` make them), by :func:`._vw_numba.read_block` (of the
        module ``compiled``); None where it leaves the block to Python."""
        read = compiled.read_block(block, *self.codes, self.hash_bits)
        if read is None:
            return None
        newlines, block_lines, heads, codes, indptr, indices, values = read
        self.newlines = (block, newlines)
        lines = first_line + block_lines
        # A block's heads repeat (a few labels): each distinct one is read once,
        # at its first row (whose line an error names).
        distinct = head_arrays(
            [
                parse_head(self.path, int(lines[row]), block[start:stop].decode())
                for start, stop, row in heads.tolist()
            ]
        )
        X = canonical_matrix(indptr, indices, values, (len(lines), 2**self.hash_bits))
        return [part[codes] for part in distinct], lines, X

    def labels(self, labels, lines):
        """The labels of the rows (``labels``, NaN where a row has none), or
        None: every row has a label when ``labels_required`` is True, none is
        read when it is False, and the first row tells when it is None."""
        if self.labels_required is False or not len(labels):
            return None
        missing = np.isnan(labels)
        if self.labelled is None:
            self.labelled = bool(self.labels_required) or not missing[0]
        wrong = np.flatnonzero(missing if self.labelled else ~missing)
        if wrong.size:
            if self.labels_required:
                problem = "no label: every row of a training file has one"
            else:
                has = "no label" if self.labelled else "a label"
                problem = f"{has}, unlike the first row: label every row or none"
            raise DataError(self.path, int(lines[wrong[0]]), problem)
        return labels if self.labelled else None

    def hashed(self, features, letters, n_rows, compiled=None):
        """The CSR matrix of the rows' :class:`~._hashing.Features` and of
        their crosses (``letters``: each feature's namespace's first letter, a
        code point): by :func:`._vw_numba.rows_matrix` with the module
        ``compiled``, the same matrix."""
        nonzero = features.values != 0
        if not nonzero.all():
            features, letters = features.take(nonzero), letters[nonzero]
        if compiled is not None:
            rows = compiled.rows_matrix(
                *features[:3], letters, *self.codes, n_rows, self.hash_bits
            )
            return canonical_matrix(*rows, (n_rows, 2**self.hash_bits))
        parts = [features]
        if self.interactions:
            crossed = [tuple(interaction) for interaction in self.interactions]
            by_letter = {
                letter: features.take(np.flatnonzero(letters == ord(letter)))
                for letter in set().union(*crossed)
            }
            parts += crosses(by_letter, crossed, n_rows)
        return hashed_matrix(concatenate_features(parts), n_rows, self.hash_bits)


def vw_pieces(path, hash_bits, interactions=(), labels_required=True):
    """Parsed blocks of a VW text input, each a :class:`~._chunks.Chunk` with its tags."""
    source = ByteSource(path)
    try:
        parser = VwParser(source.path, hash_bits, interactions, labels_required)
        for first_line, block in line_blocks(source, count_lines=parser.newline_count):
            yield parser.parse(first_line, block)
    finally:
        source.close()


def read_vw(path, chunk_size, hash_bits, interactions=(), labels_required=True, start=read_ahead):
    """Chunks of exactly ``chunk_size`` rows (the last may be shorter) of VW
    text, parsed ahead in a thread (``start``: :func:`~._sources.read_ahead`,
    or :func:`~._sources.read_on_demand` for none)."""
    # numba imported in this thread, before the reader's starts: two threads
    # importing it at once (the reader's and a learner's) can deadlock on its
    # circular imports.
    compiled_reader()
    pieces = vw_pieces(path, hash_bits, interactions, labels_required)
    return rechunk(start(pieces), chunk_size)
