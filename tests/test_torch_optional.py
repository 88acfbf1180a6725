"""skftrl works without torch: importing it never imports torch, and
importing skftrl.torch without torch says how to install it. Run where torch
is absent too (CI's numpy-only stage); where it is present, its absence is
simulated in a subprocess."""

import subprocess
import sys

import pytest


def run_python(code):
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=120
    )


def test_importing_skftrl_does_not_import_torch():
    result = run_python(
        "import sys\n"
        "import skftrl, skftrl.datasets, skftrl.inspection\n"
        "from skftrl import FTRLClassifier, FTRLRegressor, FMClassifier, FMRegressor\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
    )
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("absent", [True, False], ids=["simulated", "as-installed"])
def test_skftrl_torch_without_torch_says_how_to_install_it(absent):
    code = (
        "import sys\n"
        + (
            "sys.modules['torch'] = None  # import torch now raises ImportError\n"
            if absent
            else ""
        )
        + "try:\n"
        "    import torch\n"
        "except ImportError:\n"
        "    pass\n"
        "else:\n"
        "    sys.exit(3)  # torch installed: nothing to check\n"
        "try:\n"
        "    import skftrl.torch\n"
        "except ImportError as error:\n"
        "    print(error)\n"
        "else:\n"
        "    sys.exit(4)\n"
    )
    result = run_python(code)
    if result.returncode == 3:
        pytest.skip("torch is installed; the simulated case checks the message")
    assert result.returncode == 0, result.stderr
    assert 'pip install "skftrl[torch]"' in result.stdout
    assert "--index-url https://download.pytorch.org/whl/cpu" in result.stdout
