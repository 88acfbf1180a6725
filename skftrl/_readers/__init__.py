"""Streaming readers of LIBSVM, CSV, Parquet and VW text, in chunks of rows.

An input goes through these steps, each in its own module:

- :mod:`._sources`: a path, ``-`` for standard input (pipes and FIFOs work
  as files do) or a binary file object, opened once and read from start to
  end; plain text, or gzip, bz2, xz or zstd compressed (recognised by their
  first bytes); blocks of whole lines, each with the number of its first
  line. Errors of an input are :class:`~._sources.DataError` (a
  ``ValueError``), reported as ``path:line: message``.
- :mod:`._chunks`: a :class:`~._chunks.Chunk` of rows (a CSR matrix, the
  labels, the sample weights, each row's line number and VW tag), and
  :func:`~._chunks.rechunk`, which cuts the pieces a parser gives into chunks
  of exactly ``chunk_size`` rows, for every format.
- :mod:`._cache`: parsed chunks kept in a temporary file, for later passes.
- :mod:`._libsvm` (with the numpy parser :mod:`._libsvm_numpy` and the
  compiled one :mod:`._libsvm_numba`), :mod:`._csv` (with the csv module's
  parser in :mod:`._csv_text`, pyarrow's in :mod:`._csv_arrow` and the values
  in :mod:`._csv_values`), :mod:`._parquet` and :mod:`._vw`: the chunks of
  each format, and the first pass (a scan) that finds what a model needs to
  know before it reads the rows.
- :mod:`._hashing`: raw features hashed into ``2**hash_bits`` columns, with
  crosses, for every format; :mod:`._tables` reads tables (pandas, Arrow,
  mappings, dicts) into its columns. ``skftrl.preprocessing.ColumnHasher``
  is their public face.
- :mod:`._spec`: how the rows of a file become a model's columns
  (:class:`~._spec.LibsvmSpec`, :class:`~._spec.CsvSpec`,
  :class:`~._spec.VwSpec`), and the chunks of a file as its spec says.

Nothing here imports numpy at import time except the modules that make
chunks; :mod:`._sources` needs only the standard library, and only
:mod:`._csv_arrow` and :mod:`._parquet` import pyarrow.
"""
