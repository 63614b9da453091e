"""Which CUDA module a measuring process uses: numba-cuda's ``numba.cuda`` or numba-cuda-mlir's.

Why one place: numba-cuda-mlir keeps numba-cuda's user API under another
import (``from numba_cuda_mlir import cuda``) and has no ``numba`` at all,
so every workload that launches (worker, stages, peers, the asv suite)
asks here instead of importing ``numba.cuda`` itself. The choice travels to
worker processes in ``LAUNCHBENCH_CUDA_MODULE`` (set per variant by the
runner); unset means numba-cuda. Import-light.
"""
from __future__ import annotations

import importlib
import os

ENV = "LAUNCHBENCH_CUDA_MODULE"
#: choice -> (module holding ``cuda``, distribution name, its own config module, its warning module)
MODULES = {
    "numba-cuda": ("numba", "numba-cuda", None, "numba.core.errors"),  # config: numba.cuda's attribute
    "numba-cuda-mlir": ("numba_cuda_mlir", "numba-cuda-mlir", "numba_cuda_mlir.numba_cuda.core.config",
                        "numba_cuda_mlir.numba_cuda.core.errors"),
}


def choice(environ=None) -> str:
    env = os.environ if environ is None else environ
    name = (env.get(ENV) or "numba-cuda").strip()
    if name not in MODULES:
        raise ValueError(f"{ENV}={name!r}: use one of {', '.join(MODULES)}")
    return name


def distribution(environ=None) -> str:
    """The installed distribution whose version a result records."""
    return MODULES[choice(environ)][1]


def import_cuda(environ=None):
    """The ``cuda`` module of the chosen package (``from numba import cuda`` for numba-cuda)."""
    name = choice(environ)
    if name == "numba-cuda":
        return importlib.import_module("numba.cuda")
    return importlib.import_module(MODULES[name][0] + ".cuda")  # a subpackage: the parent does not import it


def quiet_occupancy_warnings(environ=None) -> None:
    """Turn the low-occupancy warning off in the chosen package (each has its own config and class).

    numba-cuda-mlir reads its own copy of the config; setting numba's does not reach it.
    """
    import warnings

    _, _, config_mod, errors_mod = MODULES[choice(environ)]
    try:
        config = importlib.import_module(config_mod) if config_mod else import_cuda(environ).config
        config.CUDA_LOW_OCCUPANCY_WARNINGS = 0
    except Exception:  # noqa: BLE001 - a package without the switch simply warns less
        pass
    try:
        warnings.simplefilter("ignore", importlib.import_module(errors_mod).NumbaPerformanceWarning)
    except Exception:  # noqa: BLE001
        pass
