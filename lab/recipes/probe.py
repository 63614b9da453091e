"""Quick sanity check of a GPU env: compile, launch, time k[1,1] for 0..4 args."""
import sys
import time

sys.path.insert(0, ".")
from benchmarks import common  # noqa: E402
from launchbench.workloads import kernels  # noqa: E402

kernels.quiet_occupancy_warnings()
from numba import cuda  # noqa: E402
import importlib.metadata as md  # noqa: E402

print("numba-cuda", md.version("numba-cuda"), cuda.get_current_device().name)
for n in common.ARG_COUNTS:
    k = kernels.empty_kernel(cuda, n)
    args = kernels.device_arrays(n, cuda)
    cfg = k[1, 1]
    cfg(*args)
    cuda.synchronize()
    best = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(5000):
            cfg(*args)
        cuda.synchronize()
        best.append((time.perf_counter() - t0) / 5000 * 1e6)
    print(f"args={n} us/launch min={min(best):.2f} med={sorted(best)[2]:.2f}")
