"""Raw features hashed into ``2**hash_bits`` columns: one implementation for every input.

A *field* is a column of a table or a namespace of Vowpal Wabbit text. A
feature of a row has a name and a value:

- a category (a string, or any value of a field hashed by value) is the name
  ``field=value`` with the value 1;
- a number is the name ``field`` with the number as its value (a zero adds no
  feature, as in any sparse matrix);
- a missing value adds no feature.

A name's column is ``abs(h) mod 2**hash_bits``, ``h`` the signed 32-bit
MurmurHash3 of its UTF-8 bytes (seed 0): scikit-learn's ``FeatureHasher``
with ``alternate_sign=False``, so that a weight reads as the feature's
effect. A cross of features with hashes ``h1, h2, ...`` has the value of their
product and the hash ``((h1 * FNV_PRIME) ^ h2) mod 2**32`` (then with ``h3``,
...), taken as a signed 32-bit number: Vowpal Wabbit's combination for
``-q``. Values of the same column in a row are added up (collisions). A
product or a sum of finite values beyond float64 is an error naming them.

A category's value has one text, whatever table holds it
(:func:`value_text`), so that the same value is the same feature from every
input.

Strings are hashed once per distinct value of a batch (:class:`Factorized`
columns); every other step is an array operation over the rows.
"""

import functools
from typing import NamedTuple, Optional

import numpy as np
import scipy.sparse as sp

from ._value_text import value_text

# The 32-bit FNV prime, as Vowpal Wabbit multiplies the first hash of a cross.
FNV_PRIME = 16777619
MASK_32 = 2**32 - 1
# Why a product or a sum of finite values is refused.
OVERFLOWS = "overflows float64 (whose largest value is about 1.8e308)"


class RowError(ValueError):
    """A value of row ``row`` of a table that cannot be hashed: readers name
    the row's line (or place in its file) instead."""

    def __init__(self, row, message):
        super().__init__(f"row {row}: {message}")
        self.row = row
        self.message = message


class Factorized:
    """A column as its distinct values and each row's position among them.

    ``codes[i]`` is row ``i``'s index into ``distinct`` (an object array;
    given as a pyarrow array, it is made one when first asked for), -1
    where the row's value is missing. Slicing (``column[start:stop]``)
    slices the codes and keeps the distinct values. A CSV reader may know
    more of the distinct values: ``missing`` marks those it reads as missing,
    and ``numbers`` holds their numbers (NaN where missing) when every one
    is a number or missing.

    A reader's block of rows, every distinct value of which some row holds,
    is made ``cached``: the hashes of its values (:meth:`hashes_of`) are
    computed once, for all the chunks cut from it. Others (a pandas
    categorical may list categories no row holds) hash the values their rows
    use, chunk by chunk.

    A column of integers (:meth:`of_integers`) keeps its distinct values as
    int64 too (``integers``), which numba hashes without Python strings.
    """

    __slots__ = ("lazy", "codes", "missing", "numbers", "cache", "parts", "text", "integers")

    def __init__(
        self, distinct, codes, missing=None, numbers=None, cached=False, text=None, integers=None
    ):
        # A pyarrow array (a reader's dictionary) becomes Python strings only
        # when they are asked for: the hashing reads its bytes (``text``).
        if not isinstance(distinct, LazyValues):
            if hasattr(distinct, "to_pylist"):
                distinct = LazyValues(distinct.to_pylist, len(distinct))
            else:
                distinct = LazyValues.of(distinct)
        self.lazy = distinct
        codes = np.asarray(codes)
        # pyarrow's int32 codes are kept: half the memory of a block in flight.
        self.codes = codes if codes.dtype in (np.int32, np.intp) else codes.astype(np.intp)
        self.missing = missing
        self.numbers = numbers
        # field -> hashes of the distinct values, shared by the block's slices.
        self.cache = {} if cached else None
        self.parts = None  # of a concatenation of cached columns: those columns
        # Of strings read by pyarrow: their UTF-8 bytes and offsets
        # (tables.arrow_text), which numba hashes without Python strings.
        self.text = text
        self.integers = integers

    @classmethod
    def of_integers(cls, distinct, codes):
        """The ``cached`` column of a numpy integer array of distinct values,
        each held by a row, and the codes of the rows (-1: missing): Python
        ints when asked for (exact, beyond 2**53), int64 for numba."""
        exact = distinct.dtype.kind == "i" or not len(distinct) or distinct.max() < 2**63
        integers = distinct.astype(np.int64) if exact else None
        lazy = LazyValues(distinct.tolist, len(distinct))
        return cls(lazy, codes, cached=True, integers=integers)

    @property
    def distinct(self):
        """The distinct values, an object array."""
        return self.lazy.get()

    @property
    def n_distinct(self):
        return self.lazy.size

    def with_codes(self, codes, missing=None, numbers=None):
        """The same distinct values (and their hashes) with other codes."""
        column = Factorized(
            self.lazy, codes, missing, numbers, text=self.text, integers=self.integers
        )
        column.cache, column.parts = self.cache, self.parts
        return column

    def __len__(self):
        return len(self.codes)

    def __getitem__(self, rows):
        if isinstance(rows, slice):
            return self.with_codes(self.codes[rows], self.missing, self.numbers)
        code = self.codes[rows]
        return None if code < 0 else self.distinct[code]

    def __iter__(self):
        return iter(self.values())

    def values(self):
        """Each row's value (None where missing), as an object array."""
        return self.per_row(self.distinct, None)

    def used(self):
        """A mask of the distinct values some row holds."""
        # A missing row's code (-1) marks the extra last entry.
        mask = np.zeros(self.n_distinct + 1, dtype=bool)
        # numpy indexes with intp codes about twice as fast as with int32 ones.
        mask[self.codes.astype(np.intp, copy=False)] = True
        return mask[:-1]

    def present(self):
        """The distinct values some row holds."""
        return self.distinct[self.used()]

    def per_row(self, of_distinct, missing):
        """``of_distinct`` (one entry a distinct value) spread over the rows,
        ``missing`` where a row's value is missing."""
        if not len(of_distinct):
            return np.full(len(self.codes), missing, dtype=np.asarray(of_distinct).dtype)
        spread = of_distinct[self.codes]
        absent = self.codes < 0
        if absent.any():
            spread[absent] = missing
        return spread

    def without(self, missing):
        """This column with the rows whose value is one where the mask
        ``missing`` (one entry a distinct value) is True made missing."""
        if not missing.any():
            return self
        recoded = np.where(missing, -1, np.arange(self.n_distinct))
        return self.with_codes(self.per_row(recoded, -1))

    def hashes_of(self, field):
        """The hashes of ``field=value`` of every distinct value (as
        :func:`hash_names`) of a ``cached`` column, computed once; None for
        others."""
        if self.cache is None:
            return None
        hashes = self.cache.get(field)
        if hashes is None:
            compiled = compiled_hashing()
            prefix = np.frombuffer(f"{field}=".encode(), dtype=np.uint8)
            if self.parts is not None:
                hashes = np.concatenate([part.hashes_of(field) for part in self.parts])
            elif compiled is not None and self.text is not None:
                hashes = compiled.hash_prefixed(prefix, *self.text)
            elif compiled is not None and self.integers is not None:
                hashes = compiled.hash_integers(prefix, self.integers)
            else:
                hashes = hash_names(category_names(field, self.distinct))
            self.cache[field] = hashes
        return hashes


class LazyValues:
    """Distinct values made an object array when first asked for: once for a
    block of rows and every slice of it, which share this."""

    __slots__ = ("make", "values", "size")

    def __init__(self, make, size):
        self.make, self.values, self.size = make, None, size

    @classmethod
    def of(cls, values):
        """Values already an array (or a sequence)."""
        values = np.asarray(values, dtype=object)
        lazy = cls(None, len(values))
        lazy.values = values
        return lazy

    def get(self):
        if self.values is None:
            self.values = np.asarray(self.make(), dtype=object)
            self.make = None
        return self.values


def factorize(values):
    """The :class:`Factorized` column of a sequence of hashable values (none missing)."""
    values = list(values)
    distinct = list(dict.fromkeys(values))
    code_of = {value: code for code, value in enumerate(distinct)}
    codes = np.fromiter(map(code_of.__getitem__, values), dtype=np.intp, count=len(values))
    array = np.empty(len(distinct), dtype=object)
    array[:] = distinct
    return Factorized(array, codes, cached=True)


def concatenate_factorized(columns):
    """One :class:`Factorized` column of the rows of ``columns``, in order
    (``cached`` if they all are: its hashes are theirs)."""
    if len(columns) == 1:
        return columns[0]
    offsets = np.cumsum([0] + [column.n_distinct for column in columns[:-1]])
    codes = [
        np.where(column.codes >= 0, column.codes + offset, -1)
        for column, offset in zip(columns, offsets)
    ]
    known = {}
    for name in ("missing", "numbers"):
        parts = [getattr(column, name) for column in columns]
        known[name] = None if any(part is None for part in parts) else np.concatenate(parts)
    cached = all(column.cache is not None for column in columns)
    size = sum(column.n_distinct for column in columns)
    concatenated = Factorized(
        LazyValues(functools.partial(joined_distinct, tuple(columns)), size),
        np.concatenate(codes),
        **known,
        cached=cached,
    )
    if cached:
        concatenated.parts = tuple(columns)
    return concatenated


def joined_distinct(columns):
    """The distinct values of :class:`Factorized` columns, one after the other."""
    return np.concatenate([column.distinct for column in columns])


def listed(parts):
    """``a``, ``a and b``, ``a, b and c``."""
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def overflowing_sum(entries):
    """Of a row's entries ``(name, value, column)`` added up in order by
    column: the message naming those of the first column whose sum of
    finite values overflows, or None."""
    sums = {}
    for name, value, column in entries:
        total, parts = sums.get(column, (0.0, []))
        parts = [*parts, f"{name!r} ({float(value)!r})"]
        sums[column] = total + float(value), parts
        if np.isinf(total + float(value)):
            return f"the sum of {listed(parts)}, which land in one column, {OVERFLOWS}"
    return None


def hash_names(names):
    """The signed 32-bit MurmurHash3 (seed 0) of each name's UTF-8 bytes, as int64."""
    from sklearn.utils import murmurhash3_32  # only when something is hashed

    return np.array(list(map(murmurhash3_32, names)), dtype=np.int64).reshape(-1)


def columns_of(hashes, hash_bits):
    """The column of each hash: ``abs(h) mod 2**hash_bits``, as FeatureHasher puts it."""
    return np.abs(hashes) & (2**hash_bits - 1)


def crossed_hashes(first, second):
    """The hash of crosses of features hashed ``first`` and ``second`` (signed 32-bit)."""
    combined = ((first & MASK_32) * FNV_PRIME ^ (second & MASK_32)) & MASK_32
    return np.where(combined >= 2**31, combined - 2**32, combined)


class Features(NamedTuple):
    """Features of a batch of rows: each one's row, hash and value, and its
    name when names are asked for (else None)."""

    rows: np.ndarray
    hashes: np.ndarray
    values: np.ndarray
    names: Optional[np.ndarray] = None

    @classmethod
    def none(cls, named=False):
        empty = np.zeros(0, np.int64)
        return cls(empty, empty, np.zeros(0), np.zeros(0, dtype=object) if named else None)

    def take(self, positions):
        return Features(
            self.rows[positions],
            self.hashes[positions],
            self.values[positions],
            None if self.names is None else self.names[positions],
        )


def concatenate_features(parts, named=False):
    """The features of ``parts`` (each a :class:`Features`), in that order."""
    parts = [part for part in parts if len(part.rows)]
    if not parts:
        return Features.none(named)
    if len(parts) == 1:
        return parts[0]
    return Features(
        *(np.concatenate([part[i] for part in parts]) for i in range(3)),
        np.concatenate([part.names for part in parts]) if named else None,
    )


class Column(NamedTuple):
    """A field's values in a batch: its numbers (NaN where a row holds none)
    and its categories (a :class:`Factorized`, -1 where a row holds none);
    either may be None, and a row holds a number or a category, not both."""

    numbers: Optional[np.ndarray] = None
    categories: Optional[Factorized] = None


class FieldRows(NamedTuple):
    """A field's features in a batch of rows, at most one a row (a column of
    a table, or a cross of such columns): each row's hash and value, NaN
    where the row has none, and its name when names are asked for (else
    None)."""

    hashes: np.ndarray
    values: np.ndarray
    names: Optional[np.ndarray] = None

    def features(self):
        """The same as :class:`Features` (of the rows that have one)."""
        rows = np.flatnonzero(~np.isnan(self.values))
        names = None if self.names is None else self.names[rows]
        return Features(rows, self.hashes[rows], self.values[rows], names)


def category_names(field, values):
    """The names ``field=value`` of categories."""
    prefix = f"{field}="
    try:
        return [prefix + value for value in values]  # strings: the common case
    except TypeError:
        return [prefix + value_text(value) for value in values]


def field_rows(field, column, n_rows, named=False, out=None):
    """The :class:`FieldRows` of a field's :class:`Column` of ``n_rows`` rows;
    ``out``, two arrays of ``n_rows`` (int64 and float64), receives its
    hashes and values (rows of a table's arrays: see :func:`table_fields`)."""
    if out is None:
        out = np.empty(n_rows, dtype=np.int64), np.empty(n_rows)
    hashes, values = out
    names = None
    if named:
        names = np.full(n_rows, None, dtype=object)
    numbers, categories = column
    if numbers is not None:
        hashes.fill(hash_names([field])[0])
        # A zero adds no feature; NaN (missing) is not one.
        np.copyto(values, numbers)
        values[numbers == 0] = np.nan
        if named:
            names[(numbers != 0) & ~np.isnan(numbers)] = field
    if categories is not None:
        distinct_hashes = None if named else categories.hashes_of(field)
        if distinct_hashes is None:
            used = categories.used()
            distinct_names = np.empty(len(categories.distinct), dtype=object)
            distinct_names[used] = category_names(field, categories.distinct[used])
            distinct_hashes = np.zeros(len(categories.distinct), dtype=np.int64)
            distinct_hashes[used] = hash_names(distinct_names[used])
        # numpy indexes with intp codes about twice as fast as with int32 ones.
        codes = categories.codes.astype(np.intp, copy=False)
        has = codes >= 0
        if numbers is None and has.all():  # the common case, without the copies of a mask
            # "clip" (the codes are in range): "raise" would buffer the result.
            np.take(distinct_hashes, codes, out=hashes, mode="clip")
            values.fill(1.0)
        else:
            if numbers is None:
                hashes.fill(0)
                values.fill(np.nan)
            hashes[has] = distinct_hashes[codes[has]]
            values[has] = 1.0
        if named:
            names[has] = distinct_names[codes[has]]
    if numbers is None and categories is None:  # a column of neither: no feature
        hashes.fill(0)
        values.fill(np.nan)
    return FieldRows(hashes, values, names)


def crossed_rows(fields):
    """The :class:`FieldRows` of the cross of ``fields`` (each a
    :class:`FieldRows`): a row's cross combines its features, and it has
    none where one of them is missing (NaN times any value is NaN)."""
    hashes, values, names = fields[0]
    for other in fields[1:]:
        hashes = crossed_hashes(hashes, other.hashes)
        with np.errstate(over="ignore"):  # found, and explained, by table_fields
            values = values * other.values
        if names is not None:
            has = ~np.isnan(values)
            crossed = np.full(len(values), None, dtype=object)
            crossed[has] = names[has] + "^" + other.names[has]
            names = crossed
    return FieldRows(hashes, values, names)


class TableFields(list):
    """The :class:`FieldRows` of a table's fields (a list), whose hashes and
    values are the rows of two arrays ``(n_fields, n_rows)``: ``hashes``
    and ``values``, which :func:`fields_matrix` reads without a copy.
    ``only_categories``: no field holds numbers, so every value is 1 (or
    missing) and a row's sums are at most its number of fields."""

    def __init__(self, fields, hashes, values, only_categories=False):
        super().__init__(fields)
        self.hashes, self.values = hashes, values
        self.only_categories = only_categories


def table_fields(columns, n_rows, interactions=(), named=False):
    """The :class:`TableFields` of ``columns`` (field -> :class:`Column`),
    then of each interaction (a tuple of fields)."""
    n_fields = len(columns) + len(interactions)
    hashes, values = np.empty((n_fields, n_rows), dtype=np.int64), np.empty((n_fields, n_rows))
    fields = {
        field: field_rows(field, column, n_rows, named, (hashes[f], values[f]))
        for f, (field, column) in enumerate(columns.items())
    }
    # A field no row has (a key of no dict of a list of rows) crosses to none.
    none = field_rows("", Column(), n_rows, named)
    crossed_fields = []
    for f, crossed in enumerate(interactions, start=len(columns)):
        of_fields = [fields.get(field, none) for field in crossed]
        cross_rows = crossed_rows(of_fields)
        hashes[f], values[f] = cross_rows.hashes, cross_rows.values
        crossed_fields.append(FieldRows(hashes[f], values[f], cross_rows.names))
        overflows = np.isinf(values[f])
        if overflows.any():
            row = int(np.flatnonzero(overflows)[0])
            parts = [
                f"{field!r} ({float(rows.values[row])!r})"
                for field, rows in zip(crossed, of_fields)
            ]
            raise RowError(row, f"the cross of {listed(parts)} {OVERFLOWS}")
    only_categories = all(column.numbers is None for column in columns.values())
    return TableFields([*fields.values(), *crossed_fields], hashes, values, only_categories)


def cross(first, second, n_rows):
    """Every pair of a feature of ``first`` and one of ``second`` (ordered by
    row) in the same row, ordered as ``first``."""
    per_row = np.bincount(second.rows, minlength=n_rows)
    starts = np.cumsum(per_row) - per_row
    repeats = per_row[first.rows]
    left = np.repeat(np.arange(len(first.rows)), repeats)
    within = np.arange(left.size) - np.repeat(np.cumsum(repeats) - repeats, repeats)
    right = starts[first.rows][left] + within
    names = None
    if first.names is not None:
        names = first.names[left] + "^" + second.names[right]
    with np.errstate(over="ignore"):  # found, and explained, by the reader
        values = first.values[left] * second.values[right]
    return Features(
        first.rows[left],
        crossed_hashes(first.hashes[left], second.hashes[right]),
        values,
        names,
    )


def crosses(features_of, interactions, n_rows, named=False):
    """The features of each interaction (a tuple of fields) of ``features_of``
    (field -> :class:`Features`); a field without features crosses to none."""
    parts = []
    for fields in interactions:
        crossed = features_of.get(fields[0], Features.none(named))
        for field in fields[1:]:
            crossed = cross(crossed, features_of.get(field, Features.none(named)), n_rows)
        parts.append(crossed)
    return parts


def hashed_matrix(features, n_rows, hash_bits):
    """The CSR matrix ``(n_rows, 2**hash_bits)`` of :class:`Features`, each
    row's columns sorted, the values of a column added up in the order of
    the features."""
    columns = columns_of(features.hashes, hash_bits)
    order = np.lexsort((columns, features.rows))  # stable: ties stay in order
    rows = summed_rows(features.rows[order], columns[order], features.values[order], n_rows)
    return canonical_matrix(*rows, (n_rows, 2**hash_bits))


def canonical_matrix(indptr, indices, data, shape):
    """The CSR matrix of arrays whose rows' columns are sorted and distinct."""
    X = sp.csr_matrix((data, indices, indptr), shape=shape)
    # Known, so that no later check pays a pass over the indices to find it.
    X.has_canonical_format = True
    return X


def fields_matrix(fields, n_rows, hash_bits):
    """The CSR matrix ``(n_rows, 2**hash_bits)`` of :class:`TableFields`:
    each row's columns in order, the values of a column added up in the
    order of the fields (:func:`hashed_rows`)."""
    shape = (n_rows, 2**hash_bits)
    if not fields:
        return sp.csr_matrix(shape)
    return canonical_matrix(*hashed_rows(fields.hashes, fields.values, hash_bits), shape)


def hashed_rows(hashes, values, hash_bits):
    """:func:`canonical_rows` of the columns of ``hashes`` (:func:`columns_of`)."""
    compiled = compiled_hashing()
    if compiled is not None:  # the columns taken as the rows are gathered
        return compiled.hashed_rows(hashes, values, hash_bits)
    return canonical_rows(columns_of(hashes, hash_bits), values)


def canonical_rows(columns, values):
    """``(indptr, indices, data)`` of the CSR matrix of the entries
    ``(i, columns[f, i]) = values[f, i]`` (NaN: no entry), each row's columns
    sorted, the values of a column added up in the order of ``f``: by numba
    where it is installed (:mod:`._hashing_numba`, the same arrays)."""
    compiled = compiled_hashing()
    if compiled is not None:
        return compiled.canonical_rows(columns, values)
    n_fields, n_rows = columns.shape
    # Sort each row's keys (column, field): a key's field, in its low bits,
    # keeps the fields' order among a column's values; no entry sorts last.
    shift = max(1, (n_fields - 1).bit_length())
    none = np.iinfo(np.int64).max
    keys = (columns << shift) | np.arange(n_fields)[:, None]
    absent = np.isnan(values)
    keys[absent] = none
    keys = np.sort(keys.T, axis=1).ravel()
    rows = np.repeat(np.arange(n_rows), n_fields)
    if absent.any():
        present = keys != none
        rows, keys = rows[present], keys[present]
    column, field = keys >> shift, keys & ((1 << shift) - 1)
    return summed_rows(rows, column, values[field, rows], n_rows)


def summed_rows(rows, columns, values, n_rows):
    """``(indptr, indices, data)`` of the CSR matrix of entries sorted by row
    and column, the values of a row's column added up in their order."""
    first = np.ones(len(rows), dtype=bool)  # of the entries of a row's column
    first[1:] = (columns[1:] != columns[:-1]) | (rows[1:] != rows[:-1])
    if not first.all():
        # bincount adds in order, as the compiled code does.
        values = np.bincount(np.cumsum(first) - 1, weights=values)
        rows, columns = rows[first], columns[first]
    indptr = np.zeros(n_rows + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=n_rows), out=indptr[1:])
    return indptr, columns.astype(np.int32), values.astype(np.float64, copy=False)


def compiled_hashing():
    """The module :mod:`._hashing_numba` (the compiled :func:`canonical_rows`
    and MurmurHash3 of Arrow's strings), or None without numba."""
    global _compiled_hashing
    if _compiled_hashing is False:
        try:
            from . import _hashing_numba as compiled
        except ImportError:
            compiled = None
        _compiled_hashing = compiled
    return _compiled_hashing


_compiled_hashing = False  # not looked for yet


def names_by_column(features, hash_bits):
    """``{column: sorted names}`` of named :class:`Features`."""
    by_column = {}
    for column, name in set(zip(columns_of(features.hashes, hash_bits).tolist(), features.names)):
        by_column.setdefault(column, []).append(name)
    return {column: sorted(by_column[column]) for column in sorted(by_column)}


class FeatureNames:
    """The names of hashed features (column -> names), at most ``limit`` a field."""

    def __init__(self, by_index=None, limit=1000):
        self.by_index = {} if by_index is None else by_index
        self.limit = limit
        self.count = {}  # field -> names recorded
        self.seen = {}  # field -> the values recorded
        # field -> {a block's distinct values (its LazyValues): a mask of those
        # the rows looked at held}, for the blocks of the field's last chunk,
        # whose next chunks share them. Only a shortcut: new_values filters.
        self.looked = {}

    def wants(self, field):
        return self.count.get(field, 0) < self.limit

    def unlooked(self, field, column):
        """The distinct values some row of ``column`` (a :class:`Factorized`)
        holds that may be new, in their order: not held by a row of an earlier
        column with the same distinct values (a block's chunks, which come in
        order), nor recorded already."""
        blocks = column.parts or (column,)
        before = self.looked.get(field, {})
        seen = self.seen.get(field, set())
        # A new block's values already recorded count as looked at: once the
        # field's every value is, its chunks are passed over.
        masks = [
            before[block.lazy]
            if block.lazy in before
            else np.fromiter(map(seen.__contains__, block.distinct), bool, block.n_distinct)
            for block in blocks
        ]
        if all(mask.all() for mask in masks):
            self.looked[field] = {block.lazy: mask for block, mask in zip(blocks, masks)}
            return ()
        looked = np.concatenate(masks)
        used = column.used()
        fresh = used & ~looked
        looked |= used
        offsets = np.cumsum([0] + [block.n_distinct for block in blocks])
        self.looked[field] = {
            block.lazy: looked[start:stop]
            for block, start, stop in zip(blocks, offsets[:-1], offsets[1:])
        }
        return column.distinct[fresh] if fresh.any() else ()

    def new_values(self, field, values):
        """The values of ``values`` this record has not seen for ``field``
        (each once, in order), at most as many as it still wants."""
        seen = self.seen.setdefault(field, set())
        new = list(dict.fromkeys(value for value in values if value not in seen))
        return new[: self.limit - self.count.get(field, 0)]

    def add(self, field, values, names_by_index):
        """Record ``names_by_index`` (column -> names) of ``field``'s ``values``."""
        self.seen.setdefault(field, set()).update(values)
        for index, names in names_by_index.items():
            here = self.by_index.setdefault(int(index), [])
            for name in names:
                if name not in here and self.wants(field):
                    here.append(name)
                    self.count[field] = self.count.get(field, 0) + 1
        if not self.wants(field):  # never looked at again: its values may go
            self.looked.pop(field, None)


def record_names(names, hasher, columns):
    """Record in ``names`` (a :class:`FeatureNames`) the names of the
    features of ``columns`` (field -> :class:`Factorized` categories, or
    numbers) it has not seen, while it wants more: ``field=value`` of each
    category, the field's name of numbers."""
    for name, column in columns.items():
        if not names.wants(name):
            continue
        if isinstance(column, Factorized):
            new = names.new_values(name, names.unlooked(name, column))
            if new:
                categories = Factorized(np.array(new, dtype=object), np.arange(len(new)))
                names.add(name, new, hasher.hashed_names({name: categories}))
        elif names.new_values(name, [name]):
            names.add(name, [name], hasher.hashed_names({name: np.ones(1)}))


# A numeric column is one weight times its value, and FTRL's steps grow with
# the value: a column with values beyond this in the first chunk spoils a
# model (a9a with one more column of noise or of signal: no harm up to about
# a thousand, a worse log loss from ten thousand, a useless model beyond).
LARGE_VALUE = 1e4


def large_values(numbers_of):
    """``{name: largest absolute value}`` of the columns with finite values
    beyond LARGE_VALUE."""
    large = {}
    for name, values in numbers_of.items():
        finite = np.abs(values[np.isfinite(values)])
        if finite.size and finite.max() > LARGE_VALUE:
            large[name] = float(finite.max())
    return large


def warn_large_values(numbers_of, path):
    """A UserWarning (the Python readers') when the first chunk's numeric
    columns ``numbers_of`` hold values too large for FTRL's steps, as the
    command line warns."""
    import warnings

    large = large_values(numbers_of)
    if not large:
        return
    rows = len(next(iter(numbers_of.values())))
    listed = ", ".join(f"{name!r} (up to {top:,.10g})" for name, top in large.items())
    several = len(large) > 1
    it = "them" if several else "it"
    warnings.warn(
        f"{path}: the numeric column{'s' if several else ''} {listed} "
        f"hold{'' if several else 's'} values beyond {LARGE_VALUE:,.0f} in the first "
        f"{rows:,} rows: a numeric column is one weight times its value, and values this "
        f"large spoil FTRL's steps. Scale {it} (a logarithm, a division) or read {it} as "
        f"categories with ColumnHasher(categorical={list(large)!r})",
        UserWarning,
        stacklevel=4,
    )
