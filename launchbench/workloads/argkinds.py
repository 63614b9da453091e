"""Kernel arguments as users pass them: the kind of each argument and how the kernel dispatches.

Kinds (``--arg-kind``):

* ``array``  -- float32[1] numba-cuda device arrays (``cuda.to_device``): the default
* ``scalar`` -- Python floats (typed float64)
* ``mixed``  -- arrays at even positions, floats at odd ones
* ``cupy``   -- float32[1] CuPy arrays (numba-cuda reads their ``__cuda_array_interface__``)
* ``torch``  -- float32[1] torch CUDA tensors (same protocol, a slower ``typeof`` and view)

Dispatch (``--dispatch``):

* ``lazy``  -- ``cuda.jit(k)``: the dispatcher types every argument at each launch
* ``eager`` -- ``cuda.jit("void(float32[::1], ...)")(k)``: one signature compiled up front, so
  numba-cuda skips the type search (docs/arguments.md has what that saves per kind)

CuPy and torch are imported only when their kind is asked for; a missing package is a
:class:`ArgKindUnavailable` (a one-line :class:`UserError` naming the package), so a worker
reports it as an import failure and asv benchmarks skip.
"""
from __future__ import annotations

import importlib

from ..base import cudamod
from ..base.errors import UserError
from . import kernels

KINDS = ("array", "scalar", "mixed", "cupy", "torch")
DISPATCHES = ("lazy", "eager")
#: The most parameters of a kernel built here with an array among them (32 covers the "many
#: arguments" sweeps; a numba-cuda float32[::1] parameter is 7 words, 56 B, of CUDA's 4 KiB).
MAX_ARGS = 32
#: The most parameters of an all-scalar kernel (``--arg-kind scalar``): 256 float64 parameters are
#: 2 KiB of the 4 KiB CUDA passes classically, the 256-scalars row of numba-cuda-mlir's launch ubench.
MAX_SCALAR_ARGS = 256
#: The scalar argument: a Python float, typed float64 (what ``k[g, b](x, alpha)`` passes).
SCALAR_VALUE = 1.5
#: kind -> (module imported, pip package named in the error)
_PACKAGES = {"cupy": ("cupy", "cupy-cuda13x"), "torch": ("torch", "torch")}


class ArgKindUnavailable(UserError):
    """The package an argument kind needs (CuPy, torch) cannot be imported here."""


def check_kind(kind: str | None) -> str:
    kind = (kind or "array").strip().lower()
    if kind not in KINDS:
        raise UserError(f"--arg-kind {kind!r}: use one of {', '.join(KINDS)}")
    return kind


def check_dispatch(dispatch: str | None) -> str:
    dispatch = (dispatch or "lazy").strip().lower()
    if dispatch not in DISPATCHES:
        raise UserError(f"--dispatch {dispatch!r}: use lazy (cuda.jit(k)) or eager (an explicit signature)")
    return dispatch


def max_args(kind: str | None) -> int:
    """The most parameters a kernel of *kind* takes here: ``MAX_SCALAR_ARGS`` for scalars, else ``MAX_ARGS``."""
    return MAX_SCALAR_ARGS if check_kind(kind) == "scalar" else MAX_ARGS


def is_array(kind: str, index: int) -> bool:
    """Whether argument *index* of *kind* is an array (scalar: none; mixed: the even positions)."""
    return kind in ("array", "cupy", "torch") or (kind == "mixed" and index % 2 == 0)


def require(kind: str):
    """The module *kind* needs (cupy, torch), imported now; None for numba-cuda's own kinds."""
    if kind not in _PACKAGES:
        return None
    module, package = _PACKAGES[kind]
    try:
        return importlib.import_module(module)
    except Exception as exc:  # noqa: BLE001 - ImportError, or a broken install (CUDA mismatch)
        raise ArgKindUnavailable(
            f"--arg-kind {kind} needs {module} in the variant's environment ({type(exc).__name__}: "
            f"{str(exc).splitlines()[0] if str(exc) else 'not importable'}); install {package} or "
            f"let the env see the host's site-packages (--system-site-packages)") from None


def available(kind: str) -> bool:
    try:
        require(kind)
    except ArgKindUnavailable:
        return False
    return True


def one_array(kind: str, cuda=None):
    """One float32[1] zeroed array of *kind* on the current device."""
    if kind == "cupy":
        cp = require("cupy")
        return cp.zeros(1, dtype=cp.float32)
    if kind == "torch":
        torch = require("torch")
        return torch.zeros(1, dtype=torch.float32, device="cuda")
    import numpy as np

    if cuda is None:
        cuda = cudamod.import_cuda()
    return cuda.to_device(np.zeros(1, dtype=np.float32))


def make_args(nargs: int, kind: str = "array", cuda=None) -> list:
    """The *nargs* kernel arguments of *kind* (arrays need a GPU, or the simulator for ``array``)."""
    kind = check_kind(kind)
    require(kind)
    return [one_array(kind, cuda) if is_array(kind, i) else SCALAR_VALUE for i in range(nargs)]


def signature(nargs: int, kind: str = "array") -> str:
    """The eager signature matching :func:`make_args`: ``void(float32[::1], float64, ...)``."""
    kind = check_kind(kind)
    types = ["float32[::1]" if is_array(kind, i) else "float64" for i in range(nargs)]
    return f"void({', '.join(types)})"


def build_kernel(cuda, nargs: int, kind: str = "array", dispatch: str = "lazy"):
    """An empty kernel of *nargs* parameters, ``cuda.jit``-ed lazily or with :func:`signature`."""
    most = max_args(kind)
    if not 0 <= nargs <= most:
        raise UserError(f"a kernel takes 0..{most} arguments here, not {nargs}")
    return kernels.empty_kernel(cuda, nargs, signature=signature(nargs, kind) if check_dispatch(dispatch) == "eager"
                                else None)


# -- worker set-up (compare, counts, breakdown, peers) ----------------------------

def argument_setup(kind: str | None = None, dispatch: str | None = None) -> dict:
    """The worker set-up fields of ``--arg-kind``/``--dispatch`` ({} for the defaults: older workers see nothing new)."""
    kind, dispatch = check_kind(kind), check_dispatch(dispatch)
    out = {}
    if kind != "array":
        out["arg_kind"] = kind
    if dispatch != "lazy":
        out["dispatch"] = dispatch
    return out
