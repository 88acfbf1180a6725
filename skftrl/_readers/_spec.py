"""Input specifications: how the rows of a file become a model's columns.

A model reads every file as the file it was trained on: the command line
resolves one spec per training run, stores it in the model file as a plain
dict (``dataclasses.asdict``, so that a model file holds no type of its own)
and reads it back with :func:`spec_from_dict`.
"""

import contextlib
import dataclasses
from dataclasses import dataclass, field
from typing import Optional, Union

from ._csv import read_csv
from ._libsvm import read_libsvm
from ._sources import source_name
from ._vw import read_vw


@dataclass(frozen=True)
class LibsvmSpec:
    """LIBSVM rows as a model's columns: indices from 0 (``zero_based``) or 1,
    into ``n_features`` columns; with ``hash_bits``, each index modulo
    ``2**hash_bits`` (and ``n_features = 2**hash_bits``)."""

    format: str = field(default="libsvm", init=False)
    n_features: int
    zero_based: bool
    hash_bits: Optional[int] = None

    def describe(self):
        if self.hash_bits is not None:
            return f"LIBSVM, indices hashed into 2**{self.hash_bits} features"
        first = 0 if self.zero_based else 1
        return f"LIBSVM, {self.n_features:,} features (indices from {first})"

    def chunks(self, path, chunk_size, labels=True, drop_extra=False):
        """The chunks of a LIBSVM input, in this spec's columns; with
        ``drop_extra``, indices beyond them are left out instead of refused."""
        return read_libsvm(path, chunk_size, self, labels_required=labels, drop_extra=drop_extra)


@dataclass(frozen=True)
class CsvSpec:
    """CSV rows as a model's columns: the label column (numbers, or strings
    without ``numeric_labels``), the feature columns' ``kinds`` (column ->
    ``"numeric"`` or ``"categorical"``) hashed into ``2**hash_bits``
    features, the sample weights' column if any, the ``ignored`` columns of
    the header, and the ``delimiter`` of the fields."""

    format: str = field(default="csv", init=False)
    label_column: str
    kinds: dict
    numeric_labels: bool
    hash_bits: int
    weight_column: Optional[str] = None
    ignored: list = field(default_factory=list)
    delimiter: str = ","

    def describe(self):
        kinds = list(self.kinds.values())
        text = (
            f"CSV, label column {self.label_column!r}, "
            f"{kinds.count('numeric')} numeric and {kinds.count('categorical')} "
            f"categorical columns hashed into 2**{self.hash_bits} features"
        )
        if self.weight_column:
            text += f", weights from {self.weight_column!r}"
        if self.ignored:
            text += f", {len(self.ignored)} columns ignored"
        if self.delimiter != ",":
            text += f", fields separated by {self.delimiter!r}"
        return text

    def chunks(self, path, chunk_size, labels=True, tag_column=None, column_names=None):
        """The chunks of a CSV input, hashed as this spec says; with
        ``tag_column``, that column's values are the chunks' ``tags``;
        ``column_names`` are those of a file without a header line."""
        return read_csv(
            path, self, chunk_size, labels, tag_column=tag_column, column_names=column_names
        )


@dataclass(frozen=True)
class VwSpec:
    """Vowpal Wabbit text as a model's columns: each feature hashed into
    ``2**hash_bits`` columns, and the crosses of the namespaces
    ``interactions`` names, as VW's ``-q ab`` (see :mod:`._vw`)."""

    format: str = field(default="vw", init=False)
    hash_bits: int
    interactions: tuple = ()

    def __post_init__(self):
        # A model file may hold them as a list.
        object.__setattr__(self, "interactions", tuple(self.interactions))

    @property
    def n_features(self):
        return 2**self.hash_bits

    def describe(self):
        crosses = "".join(f" -q {letters}" for letters in self.interactions)
        return f"VW text hashed into 2**{self.hash_bits} features" + (
            f", crossed as{crosses}" if crosses else ""
        )

    def chunks(self, path, chunk_size, labels=True):
        """The chunks of a VW text input; every row has a label with ``labels``,
        none is read without."""
        return read_vw(path, chunk_size, self.hash_bits, self.interactions, labels_required=labels)


@dataclass(frozen=True)
class ParquetSpec:
    """Parquet rows as a model's columns: the label column, the ``features``
    columns hashed into ``2**hash_bits`` features as their types say
    (numbers, or categories; those of ``categorical`` categories whatever
    their type), and the sample weights' column if any."""

    format: str = field(default="parquet", init=False)
    label_column: str
    features: list
    categorical: list
    hash_bits: int
    weight_column: Optional[str] = None

    @property
    def n_features(self):
        return 2**self.hash_bits

    def describe(self):
        text = (
            f"Parquet, label column {self.label_column!r}, {len(self.features)} feature "
            f"columns hashed into 2**{self.hash_bits} features"
        )
        if self.categorical:
            text += f" ({len(self.categorical)} read as categories whatever their type)"
        if self.weight_column:
            text += f", weights from {self.weight_column!r}"
        return text

    def chunks(
        self, path, chunk_size, labels=True, tag_column=None, names=None, on_first_chunk=None
    ):
        """The chunks of a Parquet file, hashed as this spec says; with
        ``tag_column``, that column's values are the chunks' ``tags``;
        ``names`` (a :class:`~._hashing.FeatureNames`) records the names of
        the hashed features; ``on_first_chunk`` sees the first chunk's
        columns of numbers and labels (see :func:`~._parquet.parquet_pieces`)."""
        from ..preprocessing import ColumnHasher
        from ._parquet import Columns, open_parquet, read_parquet  # pyarrow: only for Parquet

        # The columns not listed categorical are numbers, integers too (--numeric).
        numeric = [name for name in self.features if name not in set(self.categorical)]
        hasher = ColumnHasher(
            hash_bits=self.hash_bits, categorical=self.categorical or None, numeric=numeric or None
        )
        columns = Columns(self.features, tag=tag_column)
        if labels:
            columns = columns._replace(label=self.label_column, weight=self.weight_column)
        with contextlib.closing(open_parquet(path)) as parquet:
            yield from read_parquet(
                parquet,
                source_name(path),
                hasher.fit(),
                columns,
                chunk_size,
                names,
                on_first_chunk,
            )


InputSpec = Union[LibsvmSpec, CsvSpec, VwSpec, ParquetSpec]
SPECS = {"libsvm": LibsvmSpec, "csv": CsvSpec, "vw": VwSpec, "parquet": ParquetSpec}


def spec_from_dict(saved):
    """The spec a model file stores as a dict. Keys that earlier versions did
    not store take their defaults."""
    spec_type = SPECS[saved["format"]]
    names = {spec_field.name for spec_field in dataclasses.fields(spec_type) if spec_field.init}
    return spec_type(**{name: value for name, value in saved.items() if name in names})
