"""``python -m skftrl``: the same as the ``skftrl`` command."""

from ._cli import command

if __name__ == "__main__":
    command()
