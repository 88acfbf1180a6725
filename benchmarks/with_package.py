"""Run a benchmark script with skftrl imported from another checkout or export.

To time two versions with the same script, each in a process of its own:

    git archive REVISION skftrl | tar -x -C /tmp/before
    python benchmarks/with_package.py /tmp/before benchmarks/bench_peers.py --repeats 5
    python benchmarks/with_package.py . benchmarks/bench_peers.py --repeats 5

``PYTHONPATH`` alone is not enough where skftrl is installed in editable mode
(``pip install -e``): the editable install's import hook is consulted before
``sys.path``, so it would import the installed version. This removes that hook,
puts the given directory first on ``sys.path``, prints where skftrl comes
from, and runs the script as ``__main__`` with the remaining arguments.
"""

import runpy
import sys


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    directory, script, *arguments = sys.argv[1:]
    sys.meta_path[:] = [hook for hook in sys.meta_path if "editable" not in repr(hook).lower()]
    sys.path.insert(0, directory)
    import skftrl

    print(f"skftrl imported from {skftrl.__file__}", flush=True)
    sys.argv = [script, *arguments]
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main()
