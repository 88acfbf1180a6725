"""The text of a category's value, the same from every table type: the name
of its feature (``column=text``) is hashed from it (docs: "What a value
becomes")."""

import datetime
import decimal
from numbers import Integral, Real

import numpy as np


def value_text(value):
    """A value as the text of its category, the same from every table type:

    - strings as they are; bytes as their UTF-8 text (a byte that is not
      UTF-8 as ``\\xNN``);
    - integers as their exact decimal text (which numba writes and hashes
      from int64 too: ``_hashing_numba.hash_integers``), floats integral as integers
      (``13.0`` as ``13``), others as Python writes them (``2.5``);
      decimals as their exact value, in the shortest form (``2.50`` as
      ``2.5``, ``2.0`` as ``2``); booleans as ``True`` and ``False``;
    - timestamps as pandas prints them: ``2020-01-01 10:00:00``, with a
      fraction of a second only when there is one (6 digits, 9 where
      nanoseconds are not whole microseconds), and the UTC offset of a time
      zone's (``+01:00``); dates as ``2020-01-01``; times of day as
      ``10:00:00`` (a fraction as timestamps have one);
    - durations as pandas prints them (``0 days 01:00:03``, ``-1 days
      +23:59:59``);
    - anything else as ``str`` writes it.
    """
    if isinstance(value, str):
        return value
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, bytes):
        return value.decode("utf-8", "backslashreplace")
    if isinstance(value, (datetime.datetime, np.datetime64)):  # a pandas Timestamp too
        return timestamp_text(value)
    if isinstance(value, (datetime.timedelta, np.timedelta64)):  # a pandas Timedelta too
        return duration_text(value)
    if isinstance(value, datetime.time):
        nanoseconds = value.microsecond * 1000
        return f"{value:%H:%M:%S}{fraction_text(nanoseconds)}{offset_text(value.utcoffset())}"
    if isinstance(value, Integral):  # numpy's too: exact, beyond float64's 2**53
        return str(int(value))
    if isinstance(value, decimal.Decimal):
        return decimal_text(value)
    if isinstance(value, Real):
        number = float(value)
        if number.is_integer():
            return str(int(number))
        return repr(number)
    return str(value)


def fraction_text(nanoseconds):
    """A fraction of a second as pandas prints it: none for 0, 6 digits
    for whole microseconds, else 9."""
    if not nanoseconds:
        return ""
    if nanoseconds % 1000 == 0:
        return f".{nanoseconds // 1000:06d}"
    return f".{nanoseconds:09d}"


def offset_text(offset):
    """A UTC offset (a timedelta, or None) as ``+HH:MM`` (``:SS`` when
    there are seconds), as Python and pandas print it; "" for None."""
    if offset is None:
        return ""
    sign = "-" if offset < datetime.timedelta(0) else "+"
    seconds = int(abs(offset).total_seconds())
    text = f"{sign}{seconds // 3600:02d}:{seconds // 60 % 60:02d}"
    return text + (f":{seconds % 60:02d}" if seconds % 60 else "")


def timestamp_text(value):
    """A datetime, pandas Timestamp or numpy datetime64 (not NaT) as
    :func:`value_text` writes it."""
    if isinstance(value, np.datetime64):
        unit, _ = np.datetime_data(value.dtype)
        if unit in ("Y", "M", "W", "D"):  # a date, as numpy's are to Python
            return str(value.astype("datetime64[D]"))
        seconds = value.astype("datetime64[s]")  # earlier, before 1970: floored
        nanoseconds = int((value - seconds) // np.timedelta64(1, "ns"))
        return str(seconds).replace("T", " ") + fraction_text(nanoseconds)
    wall = (
        f"{value.year:04d}-{value.month:02d}-{value.day:02d} "
        f"{value.hour:02d}:{value.minute:02d}:{value.second:02d}"
    )
    nanoseconds = value.microsecond * 1000 + getattr(value, "nanosecond", 0)
    return wall + fraction_text(nanoseconds) + offset_text(value.utcoffset())


# Nanoseconds of each unit of numpy's timedelta64 (months and years have none).
NANOSECONDS = {"W": 7 * 86400 * 10**9, "D": 86400 * 10**9, "h": 3600 * 10**9, "m": 60 * 10**9}
NANOSECONDS.update({"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1})


def duration_text(value):
    """A timedelta, pandas Timedelta or numpy timedelta64 (not NaT) as
    pandas prints a Timedelta: ``{days} days {hh}:{mm}:{ss}`` (days
    floored, the rest after a ``+`` when they are negative) and a fraction
    of a second as timestamps have one."""
    if isinstance(value, np.timedelta64):
        unit, count = np.datetime_data(value.dtype)
        if unit not in NANOSECONDS:
            return str(value)
        nanoseconds = int(value.astype(np.int64)) * count * NANOSECONDS[unit]
    else:
        microseconds = (value.days * 86400 + value.seconds) * 10**6 + value.microseconds
        nanoseconds = microseconds * 1000 + getattr(value, "nanoseconds", 0)
    days, rest = divmod(nanoseconds, NANOSECONDS["D"])
    seconds, rest = divmod(rest, 10**9)
    clock = f"{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
    return f"{days} days {'+' if days < 0 else ''}{clock}{fraction_text(rest)}"


def decimal_text(value):
    """A decimal (not NaN) as its exact value in the shortest form: as an
    integer when it is integral, else without trailing zeros or exponent."""
    if value.is_infinite():
        return "-inf" if value < 0 else "inf"  # as a float's
    if value == value.to_integral_value():
        return str(int(value))
    return format(value.normalize(), "f")
