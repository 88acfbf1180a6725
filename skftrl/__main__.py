"""``python -m skftrl``: the same as the ``skftrl`` command."""

import sys

from ._cli import main

if __name__ == "__main__":
    sys.exit(main())
