"""Streaming readers of LIBSVM and CSV files, in chunks of rows.

An input goes through these steps, each in its own module:

- :mod:`._sources`: a path, or ``-`` for standard input (pipes and FIFOs
  work as files do), opened once and read from start to end; plain text, or
  gzip, bz2 or xz compressed (recognised by their first bytes); blocks of
  whole lines, each with the number of its first line. Errors of an input are
  :class:`~._sources.DataError`, reported as ``path:line: message``.
- :mod:`._chunks`: a :class:`~._chunks.Chunk` of rows (a CSR matrix, the
  labels, the sample weights and each row's line number), and
  :func:`~._chunks.rechunk`, which cuts the pieces a parser gives into chunks
  of exactly ``chunk_size`` rows, for every format.
- :mod:`._cache`: parsed chunks kept in a temporary file, for later passes.
- :mod:`._libsvm` (with the numpy parser :mod:`._libsvm_numpy` and the
  compiled one :mod:`._libsvm_numba`) and :mod:`._csv` (with the CSV text in
  :mod:`._csv_text`, its values in :mod:`._csv_values` and the hashing of its
  columns in :mod:`._hashing`): the chunks of each format, and the first pass
  (a scan) that finds what a model needs to know before it reads the rows.
- :mod:`._spec`: how the rows of a file become a model's columns
  (:class:`~._spec.LibsvmSpec`, :class:`~._spec.CsvSpec`), and the chunks of a
  file as its spec says.

Nothing here imports numpy at import time except the modules that make
chunks; :mod:`._sources` needs only the standard library.
"""
