"""What ``skftrl train`` shows while it runs: the live progress display, the report."""

import math
import sys


def duration(seconds):
    """A duration in seconds with two significant digits ("0.043 s", "0.10 s",
    "2.9 s", "17 s"), in whole seconds from 10 s."""
    if seconds < 0.001:
        return "< 0.001 s"
    decimals = max(0, 1 - math.floor(math.log10(seconds)))
    return f"{seconds:.{decimals}f} s"


class Progress:
    """A live display on stderr when it is a terminal and tqdm is installed.

    It shows the rows read, and the percentage and the time left when the
    total is known (after a first pass), and always the rows per second and
    the running loss: they come first, so that a narrow terminal shortens
    only the bar. Elsewhere nothing is drawn; the commands print one line per
    pass instead.
    """

    KNOWN_TOTAL = (
        "{desc} | {rate_fmt} | {percentage:.0f}% ETA {remaining} | {n_fmt}/{total_fmt} {bar}"
    )
    UNKNOWN_TOTAL = "{desc} | {rate_fmt} | {n_fmt} rows {elapsed}"

    def __init__(self, enabled):
        self.bar = None
        if not enabled or not sys.stderr.isatty():
            return
        try:
            from tqdm import tqdm
        except ImportError:  # tqdm is optional: one line per pass instead
            return
        self.bar = tqdm(
            file=sys.stderr,
            dynamic_ncols=True,
            unit=" rows",
            unit_scale=True,
            leave=False,
            mininterval=0.25,
            bar_format=self.UNKNOWN_TOTAL,
        )

    def update(self, description, rows, total=None):
        """Show ``rows`` read (of ``total``, when known) and ``description``."""
        bar = self.bar
        if bar is None:
            return
        bar.total = total
        bar.bar_format = self.UNKNOWN_TOTAL if total is None else self.KNOWN_TOTAL
        bar.set_description_str(description, refresh=False)
        bar.update(rows - bar.n)

    def restart(self):
        if self.bar is not None:
            self.bar.reset()

    def close(self):
        if self.bar is not None:
            self.bar.close()
            self.bar = None


class Report:
    """What a run prints: its lines on ``out`` (none with ``quiet``) and
    warnings on stderr, each once (a run that starts over meets them again)."""

    def __init__(self, out, quiet=False):
        self.out, self.quiet = out, quiet
        self.warned = set()

    def line(self, text):
        if not self.quiet:
            print(text, file=self.out)

    def warn(self, text):
        if text not in self.warned:
            self.warned.add(text)
            print(f"skftrl: warning: {text}", file=sys.stderr)


def format_score(value, decimals=4):
    """A loss or a score as a run prints it: ``decimals`` decimals from 0.001
    to a million, else as many in scientific notation (a loss of 1e100 is not
    a hundred digits)."""
    magnitude = abs(value)
    if magnitude == 0 or not math.isfinite(magnitude) or 1e-3 <= magnitude < 1e6:
        return f"{value:.{decimals}f}"
    return f"{value:.{decimals}e}"
