"""LC-S fixture: a launch-config-sensitive kernel made the way extensions make one.

A registered before-inference ``Rewrite`` recognises calls to three marker
device functions (``launch_griddim()``, ``launch_blockdim()``,
``launch_sharedmem()``). During a launch-triggered compilation it reads the
current launch configuration, records what it saw in :data:`SEEN`, replaces
each marker call with the launch's value as a constant (blocks per grid,
threads per block, dynamic shared-memory bytes) and calls
``mark_launch_config_sensitive()``. A kernel that writes those values to an
output array therefore shows on the device which config it was compiled for.

Without a current launch config (``cuda.compile_ptx``, or a compile not
triggered by a launch) the rewrite leaves the kernel untouched and the
markers return -1. Kernels that do not call the markers are never touched.
The *twin* kernels call ``plain_*`` device functions with the same body,
which the rewrite does not recognise: same code, never LC-S.

Self-contained on purpose (standard library at import, numba-cuda inside
functions, no relative imports): the cache children it starts load this file
by path (``child_bootstrap``), in processes that need not have launchbench on
their path. The asv suite (``benchmarks/bench_lcs.py``) imports it. ``python -m launchbench.workloads.lcs
--bench`` (the package's ``__main__``: this module's ``main``) times LC-S per-launch costs directly on a GPU.
"""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import threading
import types

#: One record per compilation the rewrite changed (dicts: func_name,
#: dispatcher, griddim, blockdim, sharedmem, args, thread, baked).
SEEN: list = []

#: Callables ``hook(record)`` run inside the rewrite, while the compilation
#: (and numba's compiler lock) is held; tests use it to stage races.
COMPILE_HOOKS: list = []

MARKERS = ("griddim", "blockdim", "sharedmem")
KINDS = ("lcs", "twin")
#: Prefix of the device functions a kernel of each kind calls.
_PREFIX = {"lcs": "launch_", "twin": "plain_"}
#: Value the markers return when no launch config was baked in.
UNBAKED = -1
#: Slots of a probe kernel's int64 output array.
PROBE_SLOTS = ("baked_griddim", "baked_blockdim", "baked_sharedmem", "griddim", "blockdim")

#: ``LAUNCHBENCH_LCS_MECHANISM=lctls`` runs every launch of the fixture -- and of the cache
#: children it starts, which inherit the environment -- under that launchbench mechanism.
MECHANISM_ENV = "LAUNCHBENCH_LCS_MECHANISM"

_install_lock = threading.Lock()
_installed: dict = {}


def current_config():
    """The launch config of the compilation running on this thread, or None.

    An indirection so CPU tests can stand in a config for ``compile_ptx``.
    """
    from numba.cuda import launchconfig

    return launchconfig.current_launch_config()


def clear_seen() -> None:
    SEEN.clear()


def config_values(griddim, blockdim, sharedmem) -> dict:
    """What the rewrite bakes for a config: totals of the normalised dims."""
    return {
        "griddim": _product(griddim),
        "blockdim": _product(blockdim),
        "sharedmem": int(sharedmem),
    }


def _product(dims) -> int:
    if isinstance(dims, int):
        return dims
    total = 1
    for d in dims:
        total *= int(d)
    return total


def install() -> types.SimpleNamespace:
    """Register the rewrite and build the marker device functions (once).

    Returns a namespace with ``launch_<marker>`` and ``plain_<marker>``
    intrinsics (each returns -1 unless the rewrite baked it). Needs numba-cuda >= 0.30 (``numba.cuda.launchconfig``).
    """
    with _install_lock:
        if "markers" in _installed:
            return _installed["markers"]
        try:
            import numba.cuda.launchconfig  # noqa: F401
        except ImportError as exc:
            raise RuntimeError(
                f"LC-S kernels need numba-cuda >= 0.30 (numba.cuda.launchconfig is missing: {exc})"
            ) from None
        from numba.cuda.core.rewrites import register_rewrite

        funcs = {
            prefix + marker: _unbaked_intrinsic(prefix + marker)
            for prefix in _PREFIX.values()
            for marker in MARKERS
        }
        lcs_markers = {funcs["launch_" + m]: m for m in MARKERS}
        register_rewrite("before-inference")(_make_rewrite_class(lcs_markers))
        _installed["markers"] = types.SimpleNamespace(**funcs)
        mech = os.environ.get(MECHANISM_ENV)
        if mech:  # the conformance tests, cache children included, under a launchbench mechanism
            importlib.import_module("launchbench.workloads.capture.mechanisms").install(mech)
        return _installed["markers"]


def _unbaked_intrinsic(name: str):
    """A zero-argument intrinsic returning -1 as int64.

    An intrinsic, not a device function: numba-cuda compiles device
    functions for the current GPU, so an untouched kernel could not go
    through ``compile_ptx`` on a machine without one.
    """
    from numba.cuda import types
    from numba.cuda.extending import intrinsic

    def typer(typingctx):
        def codegen(context, builder, signature, args):
            return context.get_constant(types.int64, UNBAKED)

        return types.int64(), codegen

    typer.__name__ = typer.__qualname__ = name
    return intrinsic(typer)


def _make_rewrite_class(lcs_markers: dict):
    from numba.cuda.core import ir
    from numba.cuda.core.rewrites import Rewrite

    class BakeLaunchConfig(Rewrite):
        """Bake the launch config into calls to this fixture's markers; mark LC-S."""

        def __init__(self, state):
            super().__init__(state)
            self._state = state
            self._hit = None
            self._record = None

        def match(self, func_ir, block, typemap, calltypes):
            if current_config() is None:
                return False  # not launch-triggered: leave the kernel untouched
            for index, stmt in enumerate(block.body):
                marker = _marker_called(func_ir, stmt, lcs_markers, ir)
                if marker is not None:
                    self._hit = (block, index, stmt, marker)
                    return True
            return False

        def apply(self):
            block, index, stmt, marker = self._hit
            cfg = current_config()
            if self._record is None:  # once per compilation
                self._record = _record(self._state, cfg)
                cfg.dispatcher.mark_launch_config_sensitive()
                for hook in list(COMPILE_HOOKS):
                    hook(self._record)
            value = self._record["values"][marker]
            self._record["baked"].append(marker)
            new_block = block.copy()
            new_block.body[index] = ir.Assign(ir.Const(value, stmt.loc), stmt.target, stmt.loc)
            return new_block

    return BakeLaunchConfig


def _marker_called(func_ir, stmt, lcs_markers, ir):
    """The marker name if *stmt* is ``x = <lcs marker>()``, else None."""
    if not (isinstance(stmt, ir.Assign) and isinstance(stmt.value, ir.Expr)):
        return None
    if stmt.value.op != "call":
        return None
    try:
        definition = func_ir.get_definition(stmt.value.func)
    except KeyError:
        return None
    if not isinstance(definition, (ir.Global, ir.FreeVar)):
        return None
    for func, marker in lcs_markers.items():
        if definition.value is func:
            return marker
    return None


def _record(state, cfg) -> dict:
    record = {
        "func_name": state.func_id.func_name,
        "dispatcher": cfg.dispatcher,
        "griddim": tuple(cfg.griddim),
        "blockdim": tuple(cfg.blockdim),
        "sharedmem": cfg.sharedmem,
        "args": cfg.args,
        "thread": threading.get_ident(),
        "values": config_values(cfg.griddim, cfg.blockdim, cfg.sharedmem),
        "baked": [],
    }
    SEEN.append(record)
    return record


# --- kernels -----------------------------------------------------------------


def bench_kernel_source(nargs: int, kind: str, name: str) -> str:
    """An LC-S (or twin) kernel with *nargs* float32[:] params for benchmarks.

    It calls the blockdim marker and, when it has an array, stores the value
    in ``a0[0]``; the body is otherwise empty, so launch cost dominates.
    """
    _check_kind(kind)
    params = ", ".join(f"a{i}" for i in range(nargs))
    store = "    a0[0] = b\n" if nargs else ""
    return f"def {name}({params}):\n    b = {_PREFIX[kind]}blockdim()\n{store}"


def probe_kernel_source(kind: str, name: str, decorator: str = "") -> str:
    """A kernel writing the baked and the runtime config into ``out[0:5]``."""
    _check_kind(kind)
    p = _PREFIX[kind]
    return (
        f"{decorator}def {name}(out):\n"
        f"    if cuda.grid(1) == 0:\n"
        f"        out[0] = {p}griddim()\n"
        f"        out[1] = {p}blockdim()\n"
        f"        out[2] = {p}sharedmem()\n"
        f"        out[3] = cuda.gridDim.x * cuda.gridDim.y * cuda.gridDim.z\n"
        f"        out[4] = cuda.blockDim.x * cuda.blockDim.y * cuda.blockDim.z\n"
    )


def _check_kind(kind):
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, not {kind!r}")


def _exec_kernel(source: str, name: str, **jit_options):
    from numba import cuda

    namespace = {"cuda": cuda, **vars(install())}
    exec(compile(source, f"<launchbench.workloads.lcs.fixture {name}>", "exec"), namespace)
    return cuda.jit(**jit_options)(namespace[name])


def make_bench_kernel(nargs: int, kind: str = "lcs", **jit_options):
    """A fresh dispatcher (its own LC-S state) of :func:`bench_kernel_source`."""
    name = f"{kind}_bench_{nargs}"
    return _exec_kernel(bench_kernel_source(nargs, kind, name), name, **jit_options)


def device_args(nargs: int) -> list:
    """*nargs* zeroed float32[1] device arrays (a bench kernel's arguments)."""
    import numpy as np
    from numba import cuda

    return [cuda.to_device(np.zeros(1, dtype=np.float32)) for _ in range(nargs)]


_launched: dict = {}


def launched_kernel(purpose: str, kind: str, nargs: int, configs) -> tuple:
    """(kernel, args): a bench kernel owned by *purpose*, launched once with each of *configs* (so compiled
    for each), made once per process."""
    key = (purpose, kind, nargs)
    if key not in _launched:
        from numba import cuda

        kernel = make_bench_kernel(nargs, kind)
        args = device_args(nargs)
        for config in configs:
            kernel[config](*args)
        cuda.synchronize()
        _launched[key] = (kernel, args)
    return _launched[key]


def make_probe_kernel(kind: str = "lcs", **jit_options):
    """A fresh dispatcher of :func:`probe_kernel_source` (out: int64[5])."""
    name = f"{kind}_probe"
    return _exec_kernel(probe_kernel_source(kind, name), name, **jit_options)


def probe_output():
    """A zeroed device array for a probe kernel."""
    import numpy as np
    from numba import cuda

    return cuda.to_device(np.zeros(len(PROBE_SLOTS), dtype=np.int64))


def read_probe(out) -> dict:
    return dict(zip(PROBE_SLOTS, (int(v) for v in out.copy_to_host())))


def expected_probe(kind, griddim, blockdim, sharedmem=0) -> dict:
    """What a probe writes when launched with this config and compiled correctly."""
    values = config_values(griddim, blockdim, sharedmem)
    baked = values if kind == "lcs" else dict.fromkeys(MARKERS, UNBAKED)
    return {
        "baked_griddim": baked["griddim"],
        "baked_blockdim": baked["blockdim"],
        "baked_sharedmem": baked["sharedmem"],
        "griddim": values["griddim"],
        "blockdim": values["blockdim"],
    }


def dispatchers(kernel) -> list:
    """A dispatcher and the per-config dispatchers numba-cuda made for it."""
    return [kernel, *getattr(kernel, "_launch_config_specializations", {}).values()]


def compile_count(kernel) -> int:
    """Kernels compiled (not loaded from disk) by *kernel* and its specializations."""
    return sum(sum(d.stats.cache_misses.values()) for d in dispatchers(kernel))


def cache_hit_count(kernel) -> int:
    return sum(sum(d.stats.cache_hits.values()) for d in dispatchers(kernel))


# --- disk cache across processes ---------------------------------------------

CACHE_MODULE = "lcs_cache_kernels"
CACHED_KERNELS = {"lcs": "lcs_cached", "twin": "twin_cached"}


def cache_module_source() -> str:
    """A module of ``cache=True`` probe kernels (they must live in a real file)."""
    name, path = __name__, os.path.abspath(__file__)
    lines = [
        '"""Generated by launchbench.workloads.lcs.fixture: cache=True probe kernels."""',
        "import importlib.util",
        "import sys",
        "",
        "from numba import cuda",
        "",
        f"FIXTURE = sys.modules.get({name!r})",
        "if FIXTURE is None:",
        f"    _spec = importlib.util.spec_from_file_location({name!r}, {path!r})",
        "    FIXTURE = importlib.util.module_from_spec(_spec)",
        f"    sys.modules[{name!r}] = FIXTURE",
        "    _spec.loader.exec_module(FIXTURE)",
        "globals().update(vars(FIXTURE.install()))",
        "",
    ]
    for kind, kname in CACHED_KERNELS.items():
        lines += ["", probe_kernel_source(kind, kname, decorator="@cuda.jit(cache=True)\n")]
    return "\n".join(lines)


def write_cache_module(directory: str) -> str:
    """Write :func:`cache_module_source` into *directory*; return its path."""
    from launchbench.base.atomic import write_text_atomic  # lazy: this file is also loaded by path (docstring)

    return write_text_atomic(os.path.join(directory, CACHE_MODULE + ".py"), cache_module_source())


def marker_files(cache_dir: str, kind: str) -> list:
    """The ``.lcs`` marker files of a cached kernel under NUMBA_CACHE_DIR."""
    found = []
    for root, _dirs, files in os.walk(cache_dir):
        for f in files:
            if f.endswith(".lcs") and f.startswith(f"{CACHE_MODULE}.{CACHED_KERNELS[kind]}-"):
                found.append(os.path.join(root, f))
    return sorted(found)


def cache_child(module_dir: str, kind: str, launches: list) -> dict:
    """Run in a fresh process: launch a cached probe with each config, report.

    *launches* is a list of ``[griddim, blockdim, sharedmem]``. For each,
    the compilations, disk-cache hits and rewrite runs it caused, and what
    the probe wrote.
    """
    sys.path.insert(0, module_dir)
    module = importlib.import_module(CACHE_MODULE)
    fixture = module.FIXTURE
    kernel = getattr(module, CACHED_KERNELS[kind])
    from numba import cuda

    results = []
    for griddim, blockdim, sharedmem in launches:
        before = (fixture.compile_count(kernel), fixture.cache_hit_count(kernel), len(fixture.SEEN))
        out = fixture.probe_output()
        kernel[tuple(griddim), tuple(blockdim), 0, sharedmem](out)
        cuda.synchronize()
        results.append(
            {
                "config": [griddim, blockdim, sharedmem],
                "compiles": fixture.compile_count(kernel) - before[0],
                "cache_hits": fixture.cache_hit_count(kernel) - before[1],
                "rewrites": len(fixture.SEEN) - before[2],
                "probe": fixture.read_probe(out),
                "expected": fixture.expected_probe(kind, griddim, blockdim, sharedmem),
            }
        )
    return {"kind": kind, "launches": results}


def child_bootstrap(function: str, *args) -> str:
    """``python -c`` code that loads this file by path and prints ``function(*args)`` as JSON."""
    name, path = __name__, os.path.abspath(__file__)
    return (
        "import importlib.util, json, sys\n"
        f"_m = sys.modules.get({name!r})\n"
        "if _m is None:\n"
        f"    _s = importlib.util.spec_from_file_location({name!r}, {path!r})\n"
        "    _m = importlib.util.module_from_spec(_s)\n"
        f"    sys.modules[{name!r}] = _m\n"
        "    _s.loader.exec_module(_m)\n"
        f"print('LCS-RESULT ' + json.dumps(_m.{function}(*{args!r})))\n"
    )


def run_cache_child(module_dir: str, cache_dir: str, kind: str, launches: list, timeout: float = 300) -> dict:
    """Run :func:`cache_child` in a new process with NUMBA_CACHE_DIR=*cache_dir*."""
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir, NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS="0")
    code = child_bootstrap("cache_child", module_dir, kind, [normalise_launch(*l) for l in launches])
    proc = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=timeout
    )
    for line in proc.stdout.splitlines():
        if line.startswith("LCS-RESULT "):
            return json.loads(line[len("LCS-RESULT "):])
    raise RuntimeError(
        f"cache child failed (exit {proc.returncode}): {(proc.stderr or proc.stdout).strip()[-2000:]}"
    )


def prepare_disk_cache(kinds, config) -> dict:
    """A kernel module and a NUMBA_CACHE_DIR holding *config* (``[griddim, blockdim, sharedmem]``) of each
    of *kinds*' cache kernels, written by a separate process per kind (the asv suite's setup_cache)."""
    import tempfile

    root = os.path.abspath(tempfile.mkdtemp(prefix="lcs-bench-"))
    module_dir = os.path.join(root, "module")
    cache_dir = os.path.join(root, "cache")
    os.makedirs(module_dir)
    write_cache_module(module_dir)
    for kind in kinds:
        run_cache_child(module_dir, cache_dir, kind, [config])
    return {"root": root, "module_dir": module_dir, "cache_dir": cache_dir}


def disk_cache_child_code(prepared: dict, kind: str, config) -> str:
    """Untimed part of a fresh process (asv's timeraw setup): a private copy of the *prepared* cache,
    CUDA context, and one unrelated compile (so the timed launch measures this kernel's load or
    compile, not first-use costs of the compiler); ``launch`` is the cache kernel of *kind* at *config*."""
    griddim, blockdim, sharedmem = config
    return f"""
import atexit, os, shutil, sys, tempfile
_tmp = tempfile.mkdtemp(prefix="lcs-child-")
atexit.register(shutil.rmtree, _tmp, True)
shutil.copytree({prepared["cache_dir"]!r}, os.path.join(_tmp, "cache"))
os.environ["NUMBA_CACHE_DIR"] = os.path.join(_tmp, "cache")
os.environ["NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS"] = "0"
sys.path.insert(0, {prepared["module_dir"]!r})
import numpy as np
from numba import cuda
import {CACHE_MODULE} as mod
@cuda.jit
def _warm(x):
    x[0] = 1
_warm[1, 1](cuda.to_device(np.zeros(1, dtype=np.int64)))
out = mod.FIXTURE.probe_output()
cuda.synchronize()
kernel = mod.{CACHED_KERNELS[kind]}
launch = kernel[tuple({griddim!r}), tuple({blockdim!r}), 0, {sharedmem!r}]
"""


def normalise_launch(griddim, blockdim, sharedmem=0) -> list:
    """``[griddim, blockdim, sharedmem]`` with dims as 3-lists, as numba normalises them."""
    return [_dims3(griddim), _dims3(blockdim), int(sharedmem)]


def _dims3(dims):
    dims = [dims] if isinstance(dims, int) else list(dims)
    return dims + [1] * (3 - len(dims))



# --- direct timing: python -m launchbench.workloads.lcs --bench ------------------------

DEFAULT_CONFIG = ((1,), (1,))
SECOND_CONFIG = ((1,), (32,))
CALLBACK_COUNTS = (0, 1, 4)
#: the --bench document's id and version, here because this file runs without launchbench's output/
#: (output/documents.py's "lcs-bench" kind reads it from here)
BENCH_SCHEMA = "launchbench.lcs-bench/1"


def bench_variants(nargs_list) -> list:
    """(name, kind, config, nargs, callbacks) of every timed variant."""
    variants = []
    for n in nargs_list:
        for kind in KINDS:
            for label, config in (("default", DEFAULT_CONFIG), ("second", SECOND_CONFIG)):
                variants.append((f"{kind}-{label}/{n}", kind, config, n, 0))
    for c in CALLBACK_COUNTS:
        variants.append((f"lcs-callbacks{c}/1", "lcs", DEFAULT_CONFIG, 1, c))
    return variants


def median(values):
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def _noop_callback(kernel, launch_config):
    pass


def _prepare_variant(kind, config, nargs, callbacks):
    """A warmed configured launch of a fresh kernel, and its args."""
    from numba import cuda

    kernel = make_bench_kernel(nargs, kind)
    args = device_args(nargs)
    kernel[DEFAULT_CONFIG](*args)  # the first config becomes the default
    launch = kernel[config]
    launch.pre_launch_callbacks[:] = [_noop_callback] * callbacks
    launch(*args)
    cuda.synchronize()
    return kernel, launch, args


def run_bench(nargs_list, launches: int, repeats: int) -> dict:
    """Interleaved rounds of *launches* launches per variant; µs/launch."""
    import time

    from numba import cuda

    _quiet_warnings()
    prepared = {v[0]: (v, _prepare_variant(*v[1:])) for v in bench_variants(nargs_list)}
    samples = {name: [] for name in prepared}
    for _ in range(repeats):
        for name, (_variant, (_kernel, launch, args)) in prepared.items():
            start = time.perf_counter()
            for _ in range(launches):
                launch(*args)
            cuda.synchronize()
            samples[name].append((time.perf_counter() - start) / launches * 1e6)
    results = []
    for name, ((_, kind, config, nargs, callbacks), (kernel, _launch, _args)) in prepared.items():
        results.append(
            {
                "name": name,
                "kind": kind,
                "config": "second" if config == SECOND_CONFIG else "default",
                "nargs": nargs,
                "callbacks": callbacks,
                "compilations": compile_count(kernel),
                "us_per_launch": median(samples[name]),
                "samples_us": samples[name],
            }
        )
    return {"schema": BENCH_SCHEMA, "launches": launches, "repeats": repeats, "results": results}


def _quiet_warnings():
    import warnings

    from numba.cuda import config

    config.CUDA_LOW_OCCUPANCY_WARNINGS = 0
    from numba.core.errors import NumbaPerformanceWarning

    warnings.simplefilter("ignore", NumbaPerformanceWarning)


def format_bench(data: dict) -> str:
    """The summary table of :func:`run_bench` output."""
    by_name = {r["name"]: r for r in data["results"]}
    nargs_list = sorted({r["nargs"] for r in data["results"] if not r["callbacks"] and "callbacks" not in r["name"]})
    cols = [f"{k}-{c}" for k in KINDS for c in ("default", "second")]
    lines = [f"LC-S per-launch cost (us/launch, median of {data['repeats']} x {data['launches']} launches):"]
    lines.append("args  " + "".join(f"{c:>14}" for c in cols) + f"{'lcs vs twin':>14}")
    for n in nargs_list:
        row = [by_name[f"{c}/{n}"]["us_per_launch"] for c in cols]
        delta = (row[0] / row[2] - 1) * 100 if row[2] else float("nan")
        lines.append(f"{n:<6}" + "".join(f"{v:>14.2f}" for v in row) + f"{delta:>+13.1f}%")
    cb = [by_name.get(f"lcs-callbacks{c}/1") for c in CALLBACK_COUNTS]
    if all(cb):
        lines.append("pre_launch_callbacks (LC-S, 1 arg, default config): " + "  ".join(
            f"{c}: {r['us_per_launch']:.2f}" for c, r in zip(CALLBACK_COUNTS, cb)))
    comp = {r["name"]: r["compilations"] for r in data["results"]}
    lines.append("compilations per kernel: " + ", ".join(f"{k}={v}" for k, v in sorted(comp.items()) if "/1" in k))
    return "\n".join(lines)


def main(argv=None) -> int:
    import argparse

    # lazy: this file is also loaded by path, without launchbench
    from launchbench.base.errors import UserError
    from launchbench.base.options import counts_help, parse_counts  # lazy: as above

    parser = argparse.ArgumentParser(
        prog="python -m launchbench.workloads.lcs",
        description="Time LC-S kernel launches (default and second config) against the non-LC-S twin, "
        "and pre_launch_callbacks, on this machine's GPU (numba-cuda >= 0.30).",
    )
    parser.add_argument("--bench", action="store_true", help="run the timing (required)")
    parser.add_argument("--nargs", default="0,1,2,3,4", help=counts_help(4))
    parser.add_argument("--launches", type=int, default=5000, help="launches per sample (default 5000)")
    parser.add_argument("--repeats", type=int, default=5, help="interleaved samples per variant (default 5)")
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    args = parser.parse_args(argv)
    if not args.bench:
        parser.print_help()
        return 2
    try:
        nargs_list = parse_counts(args.nargs, "--nargs", 4)
        if args.launches < 1 or args.repeats < 1:
            raise UserError("--launches and --repeats must be at least 1")
        # lazy: this file is also loaded by path where launchbench is not installed (module docstring)
        from launchbench.base.device import device_info, gpu_available, host_info, simulator_enabled

        if simulator_enabled():
            raise UserError("the CUDA simulator is enabled (NUMBA_ENABLE_CUDASIM=1): LC-S needs a real GPU; unset it")
        if not gpu_available():
            raise UserError("no CUDA GPU is available (numba.cuda.is_available() is False); run on a GPU machine")
        try:
            install()
        except RuntimeError as exc:  # numba-cuda without launchconfig
            raise UserError(f"{exc}; install numba-cuda>=0.30") from None
        data = run_bench(nargs_list, args.launches, args.repeats)
    except UserError as exc:
        print(f"launchbench.workloads.lcs: error: {exc}", file=sys.stderr)
        return 2
    from importlib.metadata import version

    data.update(device=device_info(), host=host_info(), numba_cuda=version("numba-cuda"))
    print(format_bench(data))
    if args.json:
        from launchbench.base.atomic import write_text_atomic  # lazy: as above

        write_text_atomic(args.json, json.dumps(data, indent=2, default=repr) + "\n")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
