"""``skftrl data``: example files to try the other commands on, written to a directory."""

import os
import shutil
from importlib.resources import as_file, files

from ..datasets import write_click_table

# The shipped a9a files, copied under names that say their format.
A9A_FILES = {"a9a.gz": "a9a.train.svm.gz", "a9a.t.gz": "a9a.test.svm.gz"}
# The synthetic click tables: name, rows and seed (fixed: the same files on every run).
CLICK_FILES = [
    ("clicks_train.csv", 20_000, 0),
    ("clicks_test.csv", 5_000, 1),
    ("clicks_train.vw", 20_000, 0),
    ("clicks_test.vw", 5_000, 1),
]


def run(args, out):
    """Write the a9a files and the click tables into ``args.directory``."""
    directory = args.directory
    os.makedirs(directory, exist_ok=True)
    data = files("skftrl") / "_data"
    for shipped, name in A9A_FILES.items():
        with as_file(data / shipped) as source:
            shutil.copyfile(source, os.path.join(directory, name))
        print(f"wrote {os.path.join(directory, name)}", file=out)
    for name, n_samples, seed in CLICK_FILES:
        write_click_table(os.path.join(directory, name), n_samples, random_state=seed)
        print(f"wrote {os.path.join(directory, name)} ({n_samples:,} rows)", file=out)
    return 0
