"""The reference launches a native asv sample is divided by: commit-independent, in the same process.

The reference is a Python loop over cuda.bindings' ``cuLaunchKernel`` on an
empty kernel loaded from PTX (peers' module: ``peers.empty_kernels_ptx``): it
runs Python per launch like numba-cuda (so it shares the process's interpreter
speed state, which the C floor loop did not), it is in every numba-cuda >= 0.29
environment (cuda-bindings is a dependency), and it does not depend on the
numba-cuda commit. ``core``: cuda.core's ``launch()``, ``launchbench peers``'
launcher. Standard library at import; cuda.bindings inside functions.
"""
import time

from .. import peers

#: The reference kernels take 0..4 pointer arguments (the suite's argument counts).
MAX_REFERENCE_ARGS = 4
#: The PTX target of the reference kernels; the driver JIT-compiles them forward to the device.
PTX_CC = (8, 0)


def empty_ptx(max_args=MAX_REFERENCE_ARGS) -> bytes:
    """Empty kernels ``lb_empty<n>`` with n u64 params (peers' module, for an sm_80 target)."""
    return peers.empty_kernels_ptx(PTX_CC, max_args).encode()


class ReferenceUnavailable(RuntimeError):
    """The reference launch cannot be made here (the message says why)."""


def bindings_reference(nargs=0, marshal=False):
    """``run(n)`` -> seconds per launch for *n* cuLaunchKernel calls and one sync.

    ``nargs`` pointer arguments (device buffers of 4 bytes). ``marshal``: the
    parameter block is built in Python on every launch (a ctypes value per
    argument and the pointer array), as a Python launch path does -- work
    that grows with the argument count like numba-cuda's own marshalling, so
    a process's speed state should move it as it moves numba-cuda's launch.
    Needs a current CUDA context (numba-cuda's, made before this is called).
    """
    import ctypes

    try:
        from cuda.bindings import driver as drv
    except ImportError:
        try:
            from cuda import cuda as drv  # cuda-python < 12.6 layout
        except ImportError as exc:
            raise ReferenceUnavailable(f"cuda.bindings is not importable ({exc})") from None

    def check(result, what):
        err = result[0] if isinstance(result, tuple) else result
        if int(err) != 0:
            raise ReferenceUnavailable(f"{what} failed: {err}")
        return result[1] if isinstance(result, tuple) and len(result) > 1 else None

    if not 0 <= nargs <= MAX_REFERENCE_ARGS:
        raise ReferenceUnavailable(f"the reference kernel takes 0..{MAX_REFERENCE_ARGS} args, not {nargs}")
    module = check(drv.cuModuleLoadData(empty_ptx()), "cuModuleLoadData")
    func = check(drv.cuModuleGetFunction(module, peers.kernel_name(nargs).encode()), "cuModuleGetFunction")
    ptrs = [int(check(drv.cuMemAlloc(4), "cuMemAlloc")) for _ in range(nargs)]
    launch, sync, clock = drv.cuLaunchKernel, drv.cuCtxSynchronize, time.perf_counter
    u64, addressof, array = ctypes.c_uint64, ctypes.addressof, ctypes.c_void_p * nargs
    keep = [u64(p) for p in ptrs]
    fixed_block = array(*[addressof(v) for v in keep]) if nargs else None  # kept alive with run

    if marshal and nargs:
        def run(n):
            t0 = clock()
            for _ in range(n):
                values = [u64(p) for p in ptrs]
                block = array(*[addressof(v) for v in values])
                launch(func, 1, 1, 1, 1, 1, 1, 0, 0, addressof(block), 0)
            sync()
            return (clock() - t0) / n
    else:
        params = addressof(fixed_block) if nargs else 0

        def run(n):
            t0 = clock()
            for _ in range(n):
                launch(func, 1, 1, 1, 1, 1, 1, 0, 0, params, 0)
            sync()
            return (clock() - t0) / n

    run.keepalive = (module, ptrs, keep, fixed_block)
    return run


def core_reference():
    """``run(n)`` -> seconds per launch through cuda.core's ``launch()`` (``LAUNCHBENCH_ASV_REFERENCE=core``).

    The launcher is ``launchbench peers``' own (launchbench.workloads.peers).
    """
    try:
        total = peers.make_cuda_core(0)
    except peers.PeerUnavailable as exc:
        raise ReferenceUnavailable(str(exc)) from None

    def run(n):
        return total(n) / n

    run.keepalive = total
    return run


#: The reference launchers by ``LAUNCHBENCH_ASV_REFERENCE`` value.
REFERENCES = {"bindings": bindings_reference, "core": core_reference}
