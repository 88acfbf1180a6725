"""skftrl: FTRL-Proximal online learning for scikit-learn."""

__version__ = "0.1.0"

__all__ = ["FMClassifier", "FMRegressor", "FTRLClassifier", "FTRLRegressor", "__version__"]


def __getattr__(name):
    # Imported on first use: the estimators import scikit-learn (about a
    # second), which `skftrl --version` and `skftrl --help` do not need.
    if name == "FTRLClassifier":
        from ._classifier import FTRLClassifier

        return FTRLClassifier
    if name == "FTRLRegressor":
        from ._regressor import FTRLRegressor

        return FTRLRegressor
    if name in ("FMClassifier", "FMRegressor"):
        from . import _fm

        return getattr(_fm, name)
    raise AttributeError(f"module 'skftrl' has no attribute {name!r}")


def __dir__():
    return sorted([*globals(), "FMClassifier", "FMRegressor", "FTRLClassifier", "FTRLRegressor"])
