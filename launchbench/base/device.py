"""Where we run: GPU guard and the device/host facts every result records.

numba is imported lazily: ``launchbench --help`` and the CPU-only tests
must not pay for (or fail on) a CUDA import.
"""
from __future__ import annotations

import os
import platform
import re
import sys

from . import cudamod
from .errors import NoGPUError, UserError


def check_simulator_env(environ=None) -> None:
    """NUMBA_ENABLE_CUDASIM, what ``--simulator`` sets, checked as numba reads it: numba takes a whole
    number and quietly ignores anything else, so ``yes`` would mean the simulator here and a GPU there."""
    environ = os.environ if environ is None else environ
    text = environ.get("NUMBA_ENABLE_CUDASIM", "").strip()
    if text and not re.fullmatch(r"-?[0-9]+", text):
        raise UserError(f"NUMBA_ENABLE_CUDASIM={environ['NUMBA_ENABLE_CUDASIM']!r} in the environment is not 0 or 1 "
                        "(numba would ignore it); set it to 1 for the simulator, or unset it")


def simulator_enabled() -> bool:
    """True when numba-cuda would run kernels in its CPU simulator."""
    return os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0")


def import_cuda():
    """Import the process's CUDA module (``numba.cuda``, or numba-cuda-mlir's: base/cudamod.py) or explain
    in one line why it cannot be imported."""
    try:
        cuda = cudamod.import_cuda()
    except Exception as exc:  # noqa: BLE001 - any import failure is a user-environment problem
        raise UserError(diagnose_import_error(exc)) from None
    return cuda


def diagnose_import_error(exc: BaseException) -> str:
    """Turn a numba-cuda import failure into the likely cause and its fix."""
    text = f"{type(exc).__name__}: {exc}"
    hints = (
        ("row_stack", "numpy is too new for this numba-cuda (numpy 2.5 removed row_stack); install numpy<2.5, "
                      "e.g. -c constraints.txt"),
        ("NPDatetime", "numba is too new for numba-cuda 0.29 (needs numba<0.66); install numba==0.65.1"),
        ("GraphBuilder", "cuda-core is too new for numba-cuda 0.29 (needs cuda-core<1.0); install cuda-core==0.7.0"),
        ("Numba needs NumPy", "numpy does not match numba; install the pins in constraints.txt"),
        ("No module named 'numba'", "numba-cuda is not installed; pip install 'numba-cuda[cu13]'"),
    )
    for needle, hint in hints:
        if needle in text:
            return f"numba-cuda failed to import ({text.splitlines()[0][:160]}): {hint}"
    return f"numba-cuda failed to import ({text.splitlines()[0][:200]}); check the version pins in constraints.txt"


def one_line(exc: BaseException, limit: int = 200) -> str:
    """An exception's message squeezed onto one line (driver errors span several)."""
    return " ".join(str(exc).split())[:limit]


def gpu_available() -> bool:
    """A real GPU (not the simulator) that numba-cuda can use."""
    if simulator_enabled():
        return False
    try:
        from numba import cuda

        return bool(cuda.is_available())
    except Exception:  # noqa: BLE001
        return False


def require_gpu(allow_simulator: bool = False, smoke_flag: bool = True) -> None:
    """Refuse to produce numbers without a real GPU, unless smoke-testing.

    *smoke_flag*: whether the calling command has a --simulator smoke mode to
    point the user at (commands whose numbers mean nothing simulated don't).
    """
    smoke = ", or pass --simulator for a labelled smoke run" if smoke_flag else ""
    if simulator_enabled():
        if allow_simulator:
            return
        raise NoGPUError(
            "the CUDA simulator is enabled (NUMBA_ENABLE_CUDASIM=1): its timings are not GPU "
            f"launch costs; unset it{smoke}"
        )
    cuda = import_cuda()
    if not cuda.is_available():
        raise NoGPUError(
            "no CUDA GPU is available (numba.cuda.is_available() is False); run on a machine "
            f"with an NVIDIA GPU and driver{smoke}"
        )


def refuse_without_gpu(smoke_flag: bool = True) -> None:
    """The guard of a command whose numbers come from other environments (compare's workers,
    asv's benchmarks), before any work: refuse the simulator and a host where numba-cuda sees no
    GPU; where this interpreter cannot import numba-cuda at all, leave it to those environments."""
    if not simulator_enabled():
        try:
            import numba.cuda  # noqa: F401
        except Exception:  # noqa: BLE001 - this interpreter may lack numba-cuda; the environments check
            return
    require_gpu(smoke_flag=smoke_flag)


def host_info() -> dict:
    return {
        "python": sys.version.split()[0],
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "cpu": _cpu_name(),
        "cpu_count": os.cpu_count(),
        "hostname": platform.node(),
    }


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def device_info() -> dict:
    """GPU name, compute capability, driver and runtime versions (or the simulator)."""
    if simulator_enabled():
        return {"name": "CUDA simulator (not a GPU)", "simulator": True}
    require_gpu(smoke_flag=False)
    cuda = import_cuda()
    info: dict = {"simulator": False}
    try:
        dev = cuda.get_current_device()
        name = dev.name
        info["name"] = name.decode() if isinstance(name, bytes) else str(name)
        info["compute_capability"] = "%d.%d" % dev.compute_capability
    except Exception as exc:  # noqa: BLE001
        raise NoGPUError(f"could not open the CUDA device ({one_line(exc)}); check the driver with nvidia-smi") from None
    try:
        info["driver_version"] = ".".join(map(str, cuda.cudadrv.driver.driver.get_version()))
    except Exception:  # noqa: BLE001
        info["driver_version"] = None
    try:
        info["runtime_version"] = ".".join(map(str, cuda.runtime.get_version()))
    except Exception:  # noqa: BLE001
        info["runtime_version"] = None
    return info


_DEVICE_ENTRY = re.compile(r"\d+|GPU-[0-9A-Fa-f-]+|MIG-[\w/.-]+")


def check_gpu_lanes(gpus_option, visible, simulator: bool) -> None:
    """``--gpus`` before any work: CUDA_VISIBLE_DEVICES, when set, must name devices (indices or
    GPU-/MIG- UUIDs), and without the simulator the host must have an NVIDIA driver to ask
    (*visible* None: none). Under the simulator, lanes without a driver are taken as given."""
    if gpus_option is None:
        return
    text = os.environ.get("CUDA_VISIBLE_DEVICES")
    if text is not None:
        bad = [p.strip() for p in text.split(",") if p.strip() and not _DEVICE_ENTRY.fullmatch(p.strip())]
        if bad:
            raise UserError(f"--gpus {gpus_option}: CUDA_VISIBLE_DEVICES={text!r} names no device ({bad[0]!r}); "
                            "set it to GPU indices or UUIDs, e.g. CUDA_VISIBLE_DEVICES=0,1, or unset it")
    if visible is None and not simulator:
        raise NoGPUError(f"--gpus {gpus_option}: no NVIDIA driver on this host (no CUDA_VISIBLE_DEVICES and no "
                         "/proc/driver/nvidia/gpus); run on a machine with GPUs, or pass --simulator for a smoke run")
