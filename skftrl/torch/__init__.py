"""FTRL-Proximal optimizers for PyTorch: :class:`FTRL` and :class:`FTRLAdam`.

This subpackage needs PyTorch (``pip install "skftrl[torch]"``); the rest of
skftrl never imports it.
"""

try:
    import torch  # noqa: F401
except ImportError as error:  # pragma: no cover - tested in a subprocess
    raise ImportError(
        "skftrl.torch needs PyTorch, which is not installed. Install it with\n"
        '    pip install "skftrl[torch]"\n'
        "or, for a CPU-only build (a much smaller download), first\n"
        "    pip install torch --index-url https://download.pytorch.org/whl/cpu\n"
        'then pip install "skftrl[torch]".'
    ) from error

from ._optimizers import FTRL, FTRLAdam

__all__ = ["FTRL", "FTRLAdam"]
