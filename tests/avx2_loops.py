"""Computing arrays in a process that uses an x86-64 AVX2 CPU's numpy and
OpenBLAS loops, whatever the CPU's other instructions.

Some results differ in the last bit from one CPU to another, through no
change of the code:

- on a CPU with AVX-512, numpy computes float64 ``exp``, ``log`` and ``power``
  of arrays with its own AVX-512 loops, which can differ from the C library's
  (which Python's ``math``, ``**`` and numba's compiled code call, and which
  numpy calls on other CPUs) in the last bit;
- OpenBLAS picks a dot product's kernel by CPU, and each kernel sums in its
  own order.

The tests that assert identical bits against the C library (the scalar and
array forms of a formula) or against states stored on such a CPU (with AVX2
and no AVX-512) compute their arrays here: in a new process whose numpy is
told to leave out its AVX-512 loops and whose OpenBLAS uses its Haswell
(AVX2) kernels. The process checks that they do before computing
(:func:`check`): on any x86-64 CPU with AVX2 the comparison is then exact;
elsewhere it fails, saying why.

    python tests/avx2_loops.py MODULE FUNCTION OUT.npz

runs ``MODULE.FUNCTION()`` (a module of tests/, returning a dict of arrays) so
and saves its result to ``OUT.npz``; :func:`arrays` does that from a test.
"""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np

TESTS = Path(__file__).resolve().parent


def numpy_dispatch_targets():
    """numpy's ``(dispatched CPU targets, {feature: enabled})``."""
    try:
        from numpy._core import _multiarray_umath
    except ImportError:  # numpy < 2
        from numpy.core import _multiarray_umath
    return _multiarray_umath.__cpu_dispatch__, _multiarray_umath.__cpu_features__


def avx512_targets():
    """numpy's AVX-512 targets (``X86_V4``, ``AVX512_*``: the names vary with its version)."""
    dispatch, _ = numpy_dispatch_targets()
    return [name for name in dispatch if name == "X86_V4" or name.startswith("AVX512")]


def environment():
    """The variables, read when numpy and OpenBLAS load, that choose the AVX2 loops."""
    return {"OPENBLAS_CORETYPE": "Haswell", "NPY_DISABLE_CPU_FEATURES": " ".join(avx512_targets())}


def check():
    """Raise unless this process's numpy and OpenBLAS use the AVX2 loops."""
    import threadpoolctl

    _, features = numpy_dispatch_targets()
    wrong = [f"numpy's {name} loops" for name in avx512_targets() if features.get(name)]
    if not features.get("AVX2"):
        wrong.append("numpy without AVX2")
    for library in threadpoolctl.threadpool_info():
        if library.get("internal_api") == "openblas" and library.get("architecture") != "Haswell":
            wrong.append(f"OpenBLAS's {library.get('architecture')} kernels")
    if wrong:
        raise RuntimeError(
            f"this process uses {', '.join(wrong)}, not an x86-64 AVX2 CPU's loops: "
            "run it with avx2_loops.environment() on an x86-64 CPU with AVX2"
        )


def arrays(module, function, path):
    """``module.function()`` (a dict of arrays) computed in a new process on the
    AVX2 loops; ``path``: the .npz file it is passed through."""
    subprocess.run(
        [sys.executable, __file__, module, function, str(path)],
        env={**os.environ, **environment()},
        check=True,
    )
    with np.load(path) as result:
        return dict(result)


def main():
    module, function, path = sys.argv[1:]
    check()
    sys.path[:0] = [str(TESTS), str(TESTS.parent)]  # tests/conftest.py, not the root one
    computed = getattr(__import__(module), function)()
    np.savez(path, **computed)


if __name__ == "__main__":
    main()
