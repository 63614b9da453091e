"""First look on the GPU machine before building on it (issues 21 and 22): does it run at all?

    python lab/recipes/probe_smoke.py mlir     numba-cuda-mlir imports, compiles and launches k[1, 1] at 0..4 args;
                                       naive us/launch (one process, not a comparison)
    python lab/recipes/probe_smoke.py args     numba-cuda launches with CuPy arrays and torch tensors as arguments
                                       (lazy and eager kernels), naive us/launch
    python lab/recipes/probe_smoke.py both     numba.cuda and numba_cuda_mlir imported in one process

Prints one JSON object. Naive timings are leads for the real measurements, never results.
"""
from __future__ import annotations

import json
import sys
import time
import traceback


def _time(run, n=2000, reps=5):
    run(200)
    return sorted(run(n) / n * 1e6 for _ in range(reps))[reps // 2]


def _loop(cfg, args, sync):
    def run(n):
        t0 = time.perf_counter()
        for _ in range(n):
            cfg(*args)
        sync()
        return time.perf_counter() - t0
    return run


def _kernels(cuda, sig=None):
    out = {}
    for nargs in range(5):
        params = ", ".join(f"a{i}" for i in range(nargs))
        ns = {}
        exec(f"def k({params}):\n    pass\n", ns)
        if sig is None:
            out[nargs] = cuda.jit(ns["k"])
        else:
            out[nargs] = cuda.jit("void(" + ", ".join([sig] * nargs) + ")")(ns["k"])
    return out


def mlir() -> dict:
    t = time.perf_counter()
    import numpy as np
    from numba_cuda_mlir import cuda

    res = {"import_s": time.perf_counter() - t}
    import numba_cuda_mlir
    res["version"] = numba_cuda_mlir.__version__
    t = time.perf_counter()
    res["device"] = str(cuda.get_current_device().name)
    res["context_s"] = time.perf_counter() - t
    ks = _kernels(cuda)
    us = {}
    for nargs, k in ks.items():
        args = [cuda.to_device(np.zeros(1, np.float32)) for _ in range(nargs)]
        t = time.perf_counter()
        k[1, 1](*args)
        cuda.synchronize()
        res.setdefault("first_launch_s", {})[nargs] = time.perf_counter() - t
        us[nargs] = _time(_loop(k[1, 1], args, cuda.synchronize))
    res["us_per_launch"] = us
    k = ks[1]
    cfg = k[1, 1]
    res["dispatcher_type"] = f"{type(k).__module__}.{type(k).__qualname__}"
    res["configured_type"] = f"{type(cfg).__module__}.{type(cfg).__qualname__}"
    res["configured_attrs"] = sorted(n for n in dir(cfg) if not n.startswith("__"))
    res["launch_config_stats"] = repr(getattr(k, "launch_config_stats", None))[:500]
    try:
        import cupy
        a = cupy.zeros(1, cupy.float32)
        res["cupy_us_1arg"] = _time(_loop(ks[1][1, 1], [a], cuda.synchronize))
    except Exception as exc:  # noqa: BLE001
        res["cupy_error"] = f"{type(exc).__name__}: {exc}"[:300]
    try:
        import torch
        a = torch.zeros(1, dtype=torch.float32, device="cuda")
        res["torch_us_1arg"] = _time(_loop(ks[1][1, 1], [a], cuda.synchronize))
    except Exception as exc:  # noqa: BLE001
        res["torch_error"] = f"{type(exc).__name__}: {exc}"[:300]
    return res


def args() -> dict:
    import numpy as np
    from numba import cuda

    res = {"numba_cuda": __import__("importlib.metadata").metadata.version("numba-cuda"),
           "numpy": np.__version__}
    makers = {"array": lambda: cuda.to_device(np.zeros(1, np.float32))}
    try:
        import cupy
        res["cupy"] = cupy.__version__
        makers["cupy"] = lambda: cupy.zeros(1, cupy.float32)
    except Exception as exc:  # noqa: BLE001
        res["cupy_error"] = f"{type(exc).__name__}: {exc}"[:300]
    try:
        import torch
        res["torch"] = torch.__version__
        makers["torch"] = lambda: torch.zeros(1, dtype=torch.float32, device="cuda")
    except Exception as exc:  # noqa: BLE001
        res["torch_error"] = f"{type(exc).__name__}: {exc}"[:300]
    lazy = _kernels(cuda)
    eager = _kernels(cuda, "float32[::1]")
    for kind, make in makers.items():
        for style, ks in (("lazy", lazy), ("eager", eager)):
            for nargs in (1, 4):
                a = [make() for _ in range(nargs)]
                try:
                    res.setdefault("us_per_launch", {})[f"{kind}-{style}-{nargs}"] = _time(
                        _loop(ks[nargs][1, 1], a, cuda.synchronize))
                except Exception as exc:  # noqa: BLE001
                    res.setdefault("errors", {})[f"{kind}-{style}-{nargs}"] = f"{type(exc).__name__}: {exc}"[:300]
    return res


def both() -> dict:
    from numba import cuda as nc

    import settings  # lab/recipes/settings.py, beside this script
    sys.path.append(f"{settings.ENV_MLIR}/lib/python3.12/site-packages")
    import numpy as np
    from numba_cuda_mlir import cuda as mc

    k1 = _kernels(nc)[1]
    k2 = _kernels(mc)[1]
    a = nc.to_device(np.zeros(1, np.float32))
    b = mc.to_device(np.zeros(1, np.float32))
    return {"numba_us": _time(_loop(k1[1, 1], [a], nc.synchronize)),
            "mlir_us": _time(_loop(k2[1, 1], [b], mc.synchronize))}


if __name__ == "__main__":
    what = sys.argv[1]
    try:
        out = {"mlir": mlir, "args": args, "both": both}[what]()
    except Exception:  # noqa: BLE001
        out = {"error": traceback.format_exc()[-2000:]}
    print(json.dumps({what: out}, default=str), flush=True)
