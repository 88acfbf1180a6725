# docs/ is a package only so that pytest imports docs/conftest.py as
# docs.conftest: as a bare "conftest" it would shadow tests/conftest.py,
# which the tests import by that name.
