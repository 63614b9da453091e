"""The LC-S conformance fixture ported to numba-cuda-mlir.

numba-cuda (>= 0.30) makes a kernel launch-config sensitive through a
registered ``Rewrite`` that calls ``mark_launch_config_sensitive()`` during
a launch-triggered compile (launchbench/workloads/lcs/fixture.py). numba-cuda-mlir
0.6.0 has its own mechanism: a *whole-function planner*
(``numba_cuda_mlir.extending.register_planner``) that calls
``require_launch_config(state)`` during a compile; the kernel is then
specialized per launch-config key ``(grid, block, sharedmem, cluster)``
(``numba_cuda_mlir/_launch_config.py``).

The probe is the same as numba-cuda's: it writes the *baked* config (what
the compile saw) and the *runtime* config to an int64 array, so "this
launch ran a kernel compiled for this config" is read back from the device.
Baking: the planner replaces the module globals ``LB_BAKED_*`` in the
function's IR by constants before type inference. A kernel that reads no
``LB_BAKED_*`` global never requires the config (the twin).

``CONFORMANCE_MAP`` says, for every test of the numba-cuda suite
(tests/test_lcs_conformance.py), what the mlir suite
(tests/test_lcs_conformance_mlir.py) does with it and why.

LC-S room (workloads/lcs/), kept beside it rather than in it: a committed run's README under
lab/results/ cites this file by its path.
"""
from __future__ import annotations

import threading

#: numba-cuda conformance test -> (status, mlir test or the reason it is not ported)
#: status: "ported" (same check through mlir's planner), "n/a" (mlir has no equivalent), "pending".
CONFORMANCE_MAP = {
    "test_first_launch_compiles_marks_and_bakes": ("ported", "test_first_launch_compiles_requires_and_bakes"),
    "test_new_config_recompiles": ("ported", "test_new_config_recompiles"),
    "test_repeated_config_reuses_exactly": ("ported", "test_repeated_config_reuses_exactly"),
    "test_twin_compiles_once_for_all_configs": ("ported", "test_twin_compiles_once_for_all_configs"),
    "test_rewrite_sees_the_launch_config": ("ported", "test_planner_sees_the_launch_config"),
    "test_launch_args_visible_during_compilation_and_callbacks": (
        "n/a", "mlir 0.6.0 gives planners the function IR and the launch config, not the launch's arguments, "
               "and has no pre_launch_callbacks"),
    "test_callbacks_run_in_order_with_kernel_and_launch_config": (
        "n/a", "mlir 0.6.0 has no pre_launch_callbacks (no such attribute on its configured launch)"),
    "test_pickling_a_configured_launch_with_callbacks_raises": (
        "n/a", "no pre_launch_callbacks to refuse pickling for"),
    "test_disk_cache_second_process_reuses_cached_configs_and_compiles_new": (
        "pending", "mlir keys its disk cache by the launch-config key; the two-process cache check is not "
                   "ported yet"),
    "test_disk_cache_twin_loads_one_kernel_for_every_config": (
        "pending", "as above: the two-process cache check is not ported yet"),
    "test_cache_without_its_marker_recompiles_and_remarks": (
        "n/a", "the <name>.lcs marker file is numba-cuda's mechanism; mlir has no marker file"),
    "test_threads_launching_different_configs_get_correct_kernels": (
        "ported", "test_threads_launching_different_configs_get_correct_kernels"),
    "test_threads_sharing_new_configs_get_correct_kernels": (
        "ported", "test_threads_sharing_new_configs_get_correct_kernels"),
    "test_racing_first_launches_of_a_fresh_lcs_kernel_get_correct_kernels": (
        "ported", "test_racing_first_launches_of_a_fresh_lcs_kernel_get_correct_kernels"),
}
STATUSES = ("ported", "n/a", "pending")

BAKED = ("LB_BAKED_GRID", "LB_BAKED_BLOCK", "LB_BAKED_SHMEM")
UNBAKED = -1
PROBE_SLOTS = 5

#: every planner run: {"kernel": name, "required": bool, "config": dict or None}
SEEN: list = []
#: callables(record) run inside the planner (tests hold a compile open with them)
COMPILE_HOOKS: list = []
_LOCK = threading.Lock()
_INSTALLED = {}


def map_summary(mapping=None) -> dict:
    """Counts per status; a map entry with an unknown status is an error (tests keep the map honest)."""
    counts = {s: 0 for s in STATUSES}
    for name, (status, _why) in (mapping or CONFORMANCE_MAP).items():
        if status not in STATUSES:
            raise ValueError(f"{name}: unknown status {status!r}")
        counts[status] += 1
    return counts


def probe_source(name: str, lcs: bool = True) -> str:
    """An mlir kernel writing (baked grid.x, baked block.x, baked sharedmem, runtime grid.x, block.x)."""
    grid, block, shmem = BAKED if lcs else (UNBAKED, UNBAKED, UNBAKED)
    return (f"def {name}(out):\n"
            "    if cuda.threadIdx.x == 0 and cuda.blockIdx.x == 0:\n"
            f"        out[0] = {grid}\n"
            f"        out[1] = {block}\n"
            f"        out[2] = {shmem}\n"
            "        out[3] = cuda.gridDim.x\n"
            "        out[4] = cuda.blockDim.x\n")


def expected(kind: str, griddim, blockdim, sharedmem=0) -> list:
    """What the probe reads back after a launch with this config."""
    g, b = _x(griddim), _x(blockdim)
    if kind == "lcs":
        return [g, b, int(sharedmem), g, b]
    return [UNBAKED, UNBAKED, UNBAKED, g, b]


def _x(dims) -> int:
    return dims if isinstance(dims, int) else dims[0]


def baked_values(config: dict) -> dict:
    """The constants the planner bakes, from mlir's normalized launch config."""
    return {"LB_BAKED_GRID": int(config["grid"][0]), "LB_BAKED_BLOCK": int(config["block"][0]),
            "LB_BAKED_SHMEM": int(config.get("sharedmem") or 0)}


def bake(func_ir, values: dict, ir) -> int:
    """Replace reads of the ``LB_BAKED_*`` globals by constants; returns how many were replaced."""
    count = 0
    for block in func_ir.blocks.values():
        for stmt in block.body:
            value = getattr(stmt, "value", None)
            if isinstance(stmt, ir.Assign) and isinstance(value, ir.Global) and value.name in values:
                stmt.value = ir.Const(values[value.name], value.loc)
                count += 1
    return count


def reads_baked(func_ir, ir) -> bool:
    return any(isinstance(stmt, ir.Assign) and isinstance(stmt.value, ir.Global) and stmt.value.name in BAKED
               for block in func_ir.blocks.values() for stmt in block.body)


def install():
    """Register the planner once per process (mlir keeps planners in a process-wide registry)."""
    if _INSTALLED:
        return _INSTALLED["planner"]
    from numba_cuda_mlir.extending import WholeFunctionPlanner, register_planner, require_launch_config
    from numba_cuda_mlir.numba_cuda.core import ir

    class BakeLaunchConfig(WholeFunctionPlanner):
        def run(self) -> bool:
            if self.is_device_function:
                return False
            func_ir = self.state.func_ir
            name = getattr(func_ir.func_id, "func_name", "?")
            if not reads_baked(func_ir, ir):
                _record({"kernel": name, "required": False, "config": None})
                return False
            config = require_launch_config(self.state)
            record = {"kernel": name, "required": True,
                      "config": {k: config.get(k) for k in ("grid", "block", "sharedmem")}}
            _record(record)
            for hook in list(COMPILE_HOOKS):
                hook(record)
            return bake(func_ir, baked_values(config), ir) > 0

    register_planner(BakeLaunchConfig)
    _INSTALLED["planner"] = BakeLaunchConfig
    return BakeLaunchConfig


def _record(record: dict) -> None:
    with _LOCK:
        SEEN.append(record)


def seen_for(name: str) -> list:
    with _LOCK:
        return [r for r in SEEN if r["kernel"] == name]


def make_probe(name: str, lcs: bool = True):
    """A fresh mlir probe kernel named *name* (names keep planner records apart)."""
    from numba_cuda_mlir import cuda

    namespace = {"cuda": cuda, **{g: UNBAKED for g in BAKED}}
    exec(compile(probe_source(name, lcs), f"<launchbench mlir lcs {name}>", "exec"), namespace)
    return cuda.jit(namespace[name])


def run_probe(kernel, config) -> list:
    import numpy as np
    from numba_cuda_mlir import cuda

    griddim, blockdim, sharedmem = config
    out = cuda.to_device(np.full(PROBE_SLOTS, -7, dtype=np.int64))
    kernel[griddim, blockdim, 0, sharedmem](out)
    cuda.synchronize()
    return [int(v) for v in out.copy_to_host()]
