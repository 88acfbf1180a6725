"""skftrl: FTRL-Proximal online learning for scikit-learn."""

from ._classifier import FTRLClassifier
from ._fm import FMClassifier, FMRegressor
from ._regressor import FTRLRegressor

__version__ = "0.1.0"

__all__ = ["FMClassifier", "FMRegressor", "FTRLClassifier", "FTRLRegressor", "__version__"]
