"""LC-S (launch-config-sensitive) kernels: launch cost, specialization, disk cache.

The fixture (a registered Rewrite that bakes the launch config into the
kernel and marks it LC-S, plus a non-LC-S twin) lives in
``launchbench/workloads/lcs.py``; it is loaded here by path because asv runs this
suite in environments where launchbench is not installed. On numba-cuda
< 0.30 (no ``numba.cuda.launchconfig``) every benchmark skips. numba is
imported lazily, so discovery never needs it.
"""
import importlib.util
import os
import shutil
import sys
import tempfile

from . import common

FIXTURE_NAME = "_launchbench_lcs_fixture"
FIXTURE_PATH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "launchbench", "workloads", "lcs.py")

KINDS = ["lcs", "twin"]
#: Launch configs as (griddim, blockdim): the first one launched becomes an
#: LC-S kernel's default; the second is routed to a specialized dispatcher.
CONFIGS = {"default": ((1,), (1,)), "second": ((1,), (32,))}
#: New configs for first-launch timing: (griddim, blockdim, sharedmem).
NEW_CONFIGS = {"1x64": ((1,), (64,), 0), "4x128+1KiB": ((4,), (128,), 1024)}
CALLBACK_COUNTS = [0, 1, 4]
DISTINCT_CONFIG_COUNTS = [1, 2, 4]
#: Disk-cache configs: the prepared cache holds "cached"; "new" is not in it.
CACHE_CONFIGS = {"cached": [[1, 1, 1], [32, 1, 1], 0], "new": [[1, 1, 1], [64, 1, 1], 0]}

_kernels = {}


def lcs_or_skip():
    """Call first in every setup: skip (NotImplementedError) unless LC-S can run.

    Checked before the GPU, so an old numba-cuda skips for that reason.
    """
    if common.simulator_enabled():
        raise NotImplementedError("LC-S needs numba-cuda's C dispatcher; the CUDA simulator has none")
    if not common.has_launchconfig():
        raise NotImplementedError("numba-cuda < 0.30: no numba.cuda.launchconfig, so no LC-S kernels")
    common.gpu_or_skip()


def fixture():
    """The LC-S fixture module (loaded once per process, by path)."""
    module = sys.modules.get(FIXTURE_NAME)
    if module is None:
        spec = importlib.util.spec_from_file_location(FIXTURE_NAME, FIXTURE_PATH)
        module = importlib.util.module_from_spec(spec)
        sys.modules[FIXTURE_NAME] = module
        spec.loader.exec_module(module)
    module.install()
    return module


def _launch_ready(purpose, kind, nargs, configs):
    """A kernel owned by *purpose*, launched once with each config (compiled), memoised."""
    key = (purpose, kind, nargs)
    if key not in _kernels:
        fx = fixture()
        kernel = fx.make_bench_kernel(nargs, kind)
        args = common.make_args(nargs)
        for config in configs:
            kernel[config](*args)
        common.synchronize()
        _kernels[key] = (kernel, args)
    return _kernels[key]


class TimeLCSLaunch:
    """Per-launch cost of an LC-S kernel with its default and a second,
    already-specialized config, against its non-LC-S twin."""

    params = [common.ARG_COUNTS, list(CONFIGS), KINDS]
    param_names = ["nargs", "config", "kernel"]
    rounds = common.SURVEY_ROUNDS
    repeat = (10, 100, 1.0)  # ~100 samples of ~10 ms in 1 s (was 500 in 5 s: 20 sets x 7 s a round)

    def setup(self, nargs, config, kind):
        lcs_or_skip()
        common.quiet_occupancy_warnings()
        kernel, self.args = _launch_ready("launch", kind, nargs, list(CONFIGS.values()))
        self.launch = kernel[CONFIGS[config]]

    def time_launch(self, nargs, config, kind):
        self.launch(*self.args)

    def teardown(self, nargs, config, kind):
        common.synchronize()


class TimeLCSFirstLaunch:
    """First launch in a new config: specialization plus compile for LC-S,
    a plain launch of the already-compiled kernel for the twin."""

    params = [list(NEW_CONFIGS), KINDS]
    param_names = ["config", "kernel"]
    number = 1
    rounds = common.SURVEY_ROUNDS
    repeat = (3, 5, 10.0)  # each sample a fresh kernel's compile (~1-2 s)
    warmup_time = 0

    def setup(self, config, kind):
        lcs_or_skip()
        common.quiet_occupancy_warnings()
        fx = fixture()
        fx.clear_seen()
        self.kernel = fx.make_bench_kernel(1, kind)  # fresh: no config seen yet
        self.args = common.make_args(1)
        self.kernel[CONFIGS["default"]](*self.args)
        common.synchronize()
        griddim, blockdim, sharedmem = NEW_CONFIGS[config]
        self.launch = self.kernel[griddim, blockdim, 0, sharedmem]

    def time_first_launch(self, config, kind):
        self.launch(*self.args)
        common.synchronize()


def _noop_callback(kernel, launch_config):
    pass


class TimeLCSCallbacks:
    """Launch cost of an LC-S kernel (1 arg, default config) with 0, 1 and 4
    pre_launch_callbacks."""

    params = [CALLBACK_COUNTS]
    param_names = ["callbacks"]
    rounds = common.SURVEY_ROUNDS
    repeat = (10, 100, 1.0)

    def setup(self, callbacks):
        lcs_or_skip()
        common.quiet_occupancy_warnings()
        # One kernel per count: configured launches are cached per kernel,
        # so their callback lists would otherwise be shared.
        kernel, self.args = _launch_ready(f"callbacks{callbacks}", "lcs", 1, [CONFIGS["default"]])
        self.launch = kernel[CONFIGS["default"]]
        self.launch.pre_launch_callbacks[:] = [_noop_callback] * callbacks

    def time_launch(self, callbacks):
        self.launch(*self.args)

    def teardown(self, callbacks):
        common.synchronize()


class TrackLCSCompilations:
    """Compilations after launching K distinct configs (LC-S: K; twin: 1)."""

    params = [KINDS, DISTINCT_CONFIG_COUNTS]
    param_names = ["kernel", "configs"]
    unit = "compilations"
    rounds = common.SURVEY_ROUNDS  # an exact count: a second process would only repeat it

    def setup(self, kind, configs):
        lcs_or_skip()
        common.quiet_occupancy_warnings()

    def track_compilations(self, kind, configs):
        fx = fixture()
        kernel = fx.make_bench_kernel(1, kind)
        args = common.make_args(1)
        for i in range(configs):
            kernel[1, 32 * (i + 1)](*args)
        common.synchronize()
        return fx.compile_count(kernel)


def prepare_disk_cache():
    """setup_cache: a kernel module and a NUMBA_CACHE_DIR holding the "cached"
    config of both kernels, written by a separate process.

    Never raises for a missing GPU or old numba-cuda (asv would count that as
    a failure); returns ``{"skip": reason}`` and setup skips instead.
    """
    try:
        lcs_or_skip()
    except NotImplementedError as exc:
        return {"skip": str(exc)}
    fx = fixture()
    root = os.path.abspath(tempfile.mkdtemp(prefix="lcs-bench-"))
    module_dir = os.path.join(root, "module")
    cache_dir = os.path.join(root, "cache")
    os.makedirs(module_dir)
    fx.write_cache_module(module_dir)
    for kind in KINDS:
        fx.run_cache_child(module_dir, cache_dir, kind, [CACHE_CONFIGS["cached"]])
    return {"root": root, "module_dir": module_dir, "cache_dir": cache_dir}


def _setup_from_cache(prepared):
    if "skip" in prepared:
        raise NotImplementedError(prepared["skip"])
    lcs_or_skip()


def _child_setup_code(prepared, kind, config):
    """Untimed part of a fresh process: private copy of the prepared cache,
    CUDA context, and one unrelated compile (so the timed launch measures
    this kernel's load or compile, not first-use costs of the compiler)."""
    fx = fixture()
    griddim, blockdim, sharedmem = CACHE_CONFIGS[config]
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
import {fx.CACHE_MODULE} as mod
@cuda.jit
def _warm(x):
    x[0] = 1
_warm[1, 1](cuda.to_device(np.zeros(1, dtype=np.int64)))
out = mod.FIXTURE.probe_output()
cuda.synchronize()
kernel = mod.{fx.CACHED_KERNELS[kind]}
launch = kernel[tuple({griddim!r}), tuple({blockdim!r}), 0, {sharedmem!r}]
"""


class TimerawLCSDiskCache:
    """First launch in a fresh process with cache=True: loading an
    already-cached config vs a config not in the cache (LC-S: compiles;
    twin: loads the one cached kernel)."""

    params = [KINDS, list(CACHE_CONFIGS)]
    param_names = ["kernel", "config"]
    number = 1
    rounds = common.SURVEY_ROUNDS
    repeat = 3  # three fresh processes per config (each ~3-4 s: import, context, compile)
    warmup_time = 0
    timeout = 300

    setup_cache = staticmethod(prepare_disk_cache)

    def setup(self, prepared, kind, config):
        _setup_from_cache(prepared)

    def timeraw_first_launch(self, prepared, kind, config):
        stmt = "launch(out)\ncuda.synchronize()\n"
        return stmt, _child_setup_code(prepared, kind, config)


class TrackLCSDiskCache:
    """Disk-cache behaviour in asv's history: compilations in a fresh process
    (LC-S: 0 for the cached config, 1 for a new one; twin: 0 for both) and
    whether the ``.lcs`` marker sits beside the cache (LC-S only)."""

    params = [KINDS, list(CACHE_CONFIGS)]
    param_names = ["kernel", "config"]
    rounds = common.SURVEY_ROUNDS  # exact counts
    timeout = 300

    setup_cache = staticmethod(prepare_disk_cache)

    def setup(self, prepared, kind, config):
        _setup_from_cache(prepared)

    def track_compilations_in_new_process(self, prepared, kind, config):
        fx = fixture()
        cache_dir = tempfile.mkdtemp(prefix="lcs-track-")
        try:
            shutil.rmtree(cache_dir)
            shutil.copytree(prepared["cache_dir"], cache_dir)
            report = fx.run_cache_child(prepared["module_dir"], cache_dir, kind, [CACHE_CONFIGS[config]])
        finally:
            shutil.rmtree(cache_dir, ignore_errors=True)
        return report["launches"][0]["compiles"]

    track_compilations_in_new_process.unit = "compilations"

    def track_lcs_marker_exists(self, prepared, kind, config):
        return int(bool(fixture().marker_files(prepared["cache_dir"], kind)))

    track_lcs_marker_exists.unit = "marker present (1/0)"
