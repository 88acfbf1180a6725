"""The passes of ``skftrl train``: the chunks of each pass, learned by ``partial_fit``.

The first pass reads the text (or the chunks a scan has cached); the later
passes read the cache of parsed chunks, as Vowpal Wabbit's ``-c`` does, or
the text again with ``--no-cache``. Each chunk is learned in file order; with
``--holdout-period``, its held-out rows are set aside first.
"""

import contextlib
import time

import numpy as np

from .._readers._cache import ChunkCache
from .._readers._csv import csv_chunks
from .._readers._libsvm import fit_to_model
from .._readers._sources import DataError
from ._column_warnings import first_chunk_checks, large_features_message
from ._estimators import engine_name, learn, memory_error, reported_loss, slow_intercept_warning
from ._input import open_csv, training_reading
from ._progress import duration, format_score


def pass_chunks(args, training, report, resources):
    """The chunks of each pass of a :class:`~._input.TrainingInput`, one
    iterable a pass; a cache made for the passes is closed by ``resources``."""
    path, spec, chunk_size = args.data, training.spec, args.chunk_size
    drop_extra = args.drop_extra_features
    reading = training_reading(args)

    def in_model_columns(libsvm_chunks):  # LIBSVM chunks of indices as written
        return (fit_to_model(path, chunk, spec, drop_extra=drop_extra) for chunk in libsvm_chunks)

    if training.scan_cache is not None:  # the scan cached the rows (LIBSVM: as written)
        for _ in range(args.passes):
            chunks = training.scan_cache.chunks()
            yield in_model_columns(chunks) if spec.format == "libsvm" else chunks
        return
    if spec.format == "csv":
        # Opened already when the column kinds came from its first chunk.
        source, rows = training.csv_rows or open_csv(args, resources, spec.delimiter)
        first = csv_chunks(
            source,
            rows,
            spec,
            names=training.names,
            on_first_chunk=first_chunk_checks(spec, report),
        )
    elif spec.format == "parquet":
        first = spec.chunks(
            path, chunk_size, names=training.names, on_first_chunk=first_chunk_checks(spec, report)
        )
    elif args.early is not None and not args.early.taken:  # parsed from the start
        first = in_model_columns(args.early.chunks())
    else:
        first = spec.chunks(path, chunk_size, **reading)
    if args.no_cache or args.passes == 1:
        yield first
        for _ in range(args.passes - 1):
            yield spec.chunks(path, chunk_size, **reading)
        return
    cache = resources.enter_context(contextlib.closing(ChunkCache()))
    yield caching(first, cache)
    for _ in range(args.passes - 1):
        yield cache.chunks()


def caching(chunks, cache):
    """The chunks, each written to ``cache`` as it goes by."""
    for chunk in chunks:
        cache.write(chunk)
        yield chunk


def learn_passes(args, estimator, training, passes, holdout, report, progress):
    """Every pass through partial_fit (until the held-out loss stops
    improving, with ``--holdout-period``), shown on ``progress``; returns the
    training rows of a pass."""
    loss_name, floor = reported_loss(estimator)
    n_rows = training.n_rows
    began = time.perf_counter()
    total_rows = 0
    for number, chunks in enumerate(passes, start=1):
        loss_sum, floor_sum, weight_sum, rows, read = 0.0, 0.0, 0.0, 0, 0
        for chunk in chunks:
            read += chunk.n_rows
            if holdout is not None:
                chunk = holdout.training_part(chunk, first_pass=number == 1)
                if not chunk.n_rows:
                    continue
            if total_rows == 0:
                for warning in first_chunk_warnings(estimator, chunk, training.spec):
                    report.warn(warning)
                first_partial_fit(estimator, chunk, training.classes, args.data)
            else:
                learn(estimator, chunk, training.classes, args.data)
            rows += chunk.n_rows
            total_rows += chunk.n_rows
            # The chunk's mean loss, each row scored before it was learned.
            weight = (
                chunk.n_rows if chunk.sample_weight is None else float(chunk.sample_weight.sum())
            )
            loss_sum += estimator.loss_curve_[-1] * weight
            if floor is not None:
                floor_sum += floor(chunk.y, chunk.sample_weight)
            weight_sum += weight
            loss = mean_reported(loss_sum, floor_sum, weight_sum, floor)
            progress.update(
                f"pass {number}/{args.passes} loss {format_score(loss)}", read, total=n_rows
            )
        if read == 0:
            raise DataError(args.data, None, "no data rows")
        n_rows = read
        progress.restart()
        loss = mean_reported(loss_sum, floor_sum, weight_sum, floor)
        line = f"pass {number}/{args.passes}: progressive {loss_name} {format_score(loss)}"
        if holdout is None:
            report.line(line)
            continue
        held_loss, best, stop = holdout.end_pass(estimator, read)
        report.line(
            f"{line}, held-out {loss_name} {format_score(held_loss, 6)}"
            + (" (best)" if best else "")
        )
        if stop:
            break
    seconds = time.perf_counter() - began
    if holdout is not None:
        kept = holdout.keep_best()
        report.line(
            f"kept the model of pass {holdout.stopping.best_pass} of "
            f"{len(holdout.stopping.losses)} "
            f"(held-out {loss_name} {format_score(kept, 6)})"
            + (
                f"; stopped: no improvement of {estimator.tol:g} for "
                f"{estimator.n_iter_no_change} passes"
                if holdout.stopping.stopped
                else ""
            )
        )
    coef = estimator.coef_
    report.line(
        f"trained on {total_rows:,} rows in {duration(seconds)} "
        f"({total_rows / seconds:,.0f} rows/s, reading included; engine "
        f"{engine_name(estimator)}); non-zero weights "
        f"{np.count_nonzero(coef):,} of {coef.size:,}"
    )
    return rows


def mean_reported(loss_sum, floor_sum, weight_sum, floor):
    """The mean loss reported of rows whose summed loss is ``loss_sum`` (and
    summed floor ``floor_sum``, for a deviance: see ``reported_loss``)."""
    if not weight_sum:
        return 0.0
    if floor is None:
        return loss_sum / weight_sum
    return 2 * (loss_sum - floor_sum) / weight_sum


def first_chunk_warnings(estimator, chunk, spec):
    """What the first chunk of a run warns about: a new regression model
    whose intercept cannot reach the labels' mean, and large values of
    features (a CSV or Parquet file's columns are named by the reader's
    check instead, see ``first_chunk_checks``)."""
    if not getattr(estimator, "n_samples_seen_", 0):  # a new model
        label = getattr(spec, "label_column", None)
        label = "the label" if label is None else f"the label {label!r}"
        warning = slow_intercept_warning(estimator, chunk.y, label)
        if warning is not None:
            yield warning
    if spec.format not in ("csv", "parquet"):
        warning = large_features_message(spec, chunk.X)
        if warning is not None:
            yield warning


def first_partial_fit(estimator, chunk, classes, path):
    """The first partial_fit, which allocates the state: a clear error if memory lacks."""
    try:
        learn(estimator, chunk, classes, path)
    except MemoryError:
        raise memory_error(estimator, chunk.X.shape[1], classes) from None
