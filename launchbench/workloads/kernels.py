"""The empty kernels launchbench launches, and the argument counts its commands take.

Shared by ``launchbench peers`` and ``launchbench breakdown`` (both modes):
the ``@cuda.jit`` kernel with *nargs* array parameters, and the checks of
``--args``, ``--loops``, ``--repeats`` and ``--rounds``.

numba and numpy are imported only when a kernel is built.
"""
from __future__ import annotations

from ..base.errors import UserError
from ..base.device import import_cuda

#: The most parameters of a kernel: peers' PTX module holds lb_empty0 .. lb_empty<MAX_ARGS>.
MAX_ARGS = 8


def kernel_source(nargs: int, name: str = "k") -> str:
    """Source of an empty kernel with *nargs* array parameters."""
    params = ", ".join(f"a{i}" for i in range(nargs))
    return f"def {name}({params}):\n    pass\n"


def quiet_occupancy_warnings() -> None:
    """The low-occupancy warning would otherwise fire for every [1, 1] config built."""
    import warnings

    from numba.cuda import config

    if hasattr(config, "CUDA_LOW_OCCUPANCY_WARNINGS"):
        config.CUDA_LOW_OCCUPANCY_WARNINGS = 0
    try:
        from numba.core.errors import NumbaPerformanceWarning
    except ImportError:  # pragma: no cover
        return
    warnings.simplefilter("ignore", NumbaPerformanceWarning)


def numba_kernel_and_args(nargs: int):
    """A compiled empty ``@cuda.jit`` kernel and *nargs* float32[1] device arrays.

    Same kernel as benchmarks/common.py's make_kernel/make_args (which the
    installed package cannot import). The first launch compiles it.
    """
    import numpy as np

    cuda = import_cuda()
    quiet_occupancy_warnings()
    namespace: dict = {}
    exec(compile(kernel_source(nargs), f"<launchbench k/{nargs}>", "exec"), namespace)
    kernel = cuda.jit(namespace["k"])
    args = [cuda.to_device(np.zeros(1, dtype=np.float32)) for _ in range(nargs)]
    kernel[1, 1](*args)
    cuda.synchronize()
    return kernel, args


# -- command-line counts ------------------------------------------------------

def check_counts(loops: int, repeats: int, rounds: int) -> None:
    for flag, value in (("--loops", loops), ("--repeats", repeats), ("--rounds", rounds)):
        if value < 1:
            raise UserError(f"{flag} must be >= 1, got {value}")
