"""What every interception of ``CUDADispatcher.call`` shares: the launch signatures and the C extension.

``launchbench.workloads.capture.mechanisms`` (the switchable wrappers) and ``launchbench.workloads.capture.lctls``
(0.30's launch path with launchbench's capture) both detect which of
numba-cuda's two ``call`` signatures they wrap and run on the C extension
``launchbench.workloads._tls``; both take these from here.

Import-light: nothing beyond the standard library is imported.
"""
from __future__ import annotations

import inspect

from ...base.errors import UserError

SIGNATURE_029 = ("self", "args", "griddim", "blockdim", "stream", "sharedmem")
SIGNATURE_030 = ("self", "args", "launch_config")


def signature_of(func) -> tuple:
    """Which launch signature ``func`` has (SIGNATURE_029 or SIGNATURE_030)."""
    params = tuple(inspect.signature(func, follow_wrapped=False).parameters)
    if params in (SIGNATURE_029, SIGNATURE_030):
        return params
    raise UserError(
        f"unsupported CUDADispatcher.call signature ({', '.join(params)}); launchbench knows numba-cuda "
        "0.29's (args, griddim, blockdim, stream, sharedmem) and 0.30's (args, launch_config): "
        "install numba-cuda 0.29.x or >= 0.30"
    )


def tls_module(required: bool = True):
    """The C extension ``launchbench.workloads._tls``; if it is not built, a UserError saying how (None if not required)."""
    try:
        from .. import _tls  # lazy: the C extension may be unbuilt; the ImportError is the message below
    except ImportError:
        if required:
            raise UserError(
                "launchbench's C extension launchbench.workloads._tls is not built; run "
                "`pip install -e .` (or `python setup.py build_ext --inplace`) in the launchbench checkout"
            ) from None
        return None
    return _tls
