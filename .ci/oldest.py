"""The oldest versions pyproject.toml admits, for CI's oldest-versions stage.

pyproject.toml is the one place of the minimums: ``requires-python`` and the
``>=`` of each dependency. This prints, for ``.ci/run``:

    python .ci/oldest.py python        the oldest Python, e.g. 3.9
    python .ci/oldest.py constraints   each dependency, and the fast extra's
                                       numba, pinned at its minimum
    python .ci/oldest.py test          the test extra's requirements, but skops

skops (the tests of saving with skops.io) needs a newer numpy than the oldest
admitted; those tests skip in that stage and run in the others.
"""

import re
import sys
from pathlib import Path

import tomllib

project = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())["project"]


def minimums():
    """``name==version`` of each dependency's ``name>=version``, and of the
    fast extra's (numba: its range is tested with the others')."""
    for requirement in [*project["dependencies"], *project["optional-dependencies"]["fast"]]:
        match = re.fullmatch(r"([A-Za-z0-9_.-]+)>=([0-9.]+)", requirement)
        if match is None:
            sys.exit(f"{requirement!r}: a dependency's range must be name>=version")
        yield f"{match[1]}=={match[2]}"


what = sys.argv[1]
if what == "python":
    print(re.fullmatch(r">=([0-9]+\.[0-9]+)", project["requires-python"])[1])
elif what == "constraints":
    print("\n".join(minimums()))
elif what == "test":
    print("\n".join(r for r in project["optional-dependencies"]["test"] if "skops" not in r))
else:
    sys.exit(f"usage: python {sys.argv[0]} python|constraints|test")
