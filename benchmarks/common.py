"""Shared fixtures for the asv suite.

Self-contained on purpose: asv runs these files inside the virtualenvs it
builds for numba-cuda commits, where launchbench itself is not installed.
Only the standard library, numpy and numba-cuda may be imported here.
"""
import os
import warnings

ARG_COUNTS = [0, 1, 2, 3, 4]

#: Set to 1 to let the suite run under the CUDA simulator (CI smoke runs).
#: Smoke numbers are simulator timings, never GPU launch costs.
SMOKE_ENV = "LAUNCHBENCH_SMOKE"


def simulator_enabled():
    return os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0")


def smoke_mode():
    return simulator_enabled() and os.environ.get(SMOKE_ENV, "0") not in ("", "0")


def gpu_or_skip():
    """Call first in every setup: raising NotImplementedError makes asv skip.

    Under the simulator the suite produces no numbers unless the smoke
    switch is set, so simulator timings can never pass for GPU results.
    """
    if simulator_enabled():
        if not smoke_mode():
            raise NotImplementedError("CUDA simulator: set LAUNCHBENCH_SMOKE=1 for a smoke run")
        return
    from numba import cuda

    if not cuda.is_available():
        raise NotImplementedError("no CUDA GPU available")


def quiet_occupancy_warnings():
    """Silence numba-cuda's low-occupancy warning for the whole process.

    It fires when a launch configuration with fewer than 128 blocks is
    built. configure() is cached, so it would fire once per config, but a
    cache miss (e.g. more than 128 distinct configs, or an older numba-cuda
    without the cache) would add warnings.warn() and filter matching to
    every launch and distort exactly the [1, 1] numbers we care about.
    """
    from numba.cuda import config

    if hasattr(config, "CUDA_LOW_OCCUPANCY_WARNINGS"):
        config.CUDA_LOW_OCCUPANCY_WARNINGS = 0
    try:
        from numba.core.errors import NumbaPerformanceWarning
    except ImportError:  # pragma: no cover - very old numba
        return
    warnings.simplefilter("ignore", NumbaPerformanceWarning)


def kernel_source(nargs, name="k"):
    """Source of an empty kernel with *nargs* array parameters.

    The body must not be empty of side effects in a way that lets a future
    optimisation skip the launch; an empty body still launches a kernel.
    """
    params = ", ".join(f"a{i}" for i in range(nargs))
    return f"def {name}({params}):\n    pass\n"


def make_kernel(nargs, name="k", **jit_options):
    """A @cuda.jit kernel taking *nargs* float32[:] device arrays."""
    from numba import cuda

    namespace = {}
    exec(compile(kernel_source(nargs, name), f"<launchbench {name}/{nargs}>", "exec"), namespace)
    return cuda.jit(**jit_options)(namespace[name])


def make_args(nargs, size=1):
    """*nargs* distinct float32 device arrays of *size* elements."""
    import numpy as np
    from numba import cuda

    return [cuda.to_device(np.zeros(size, dtype=np.float32)) for _ in range(nargs)]


def synchronize():
    from numba import cuda

    cuda.synchronize()


def has_launchconfig():
    """True on numba-cuda >= 0.30, which has numba.cuda.launchconfig (v2)."""
    try:
        import numba.cuda.launchconfig  # noqa: F401
    except ImportError:
        return False
    return True
