"""LC-S (launch-config-sensitive) kernels: launch cost, specialization, disk cache.

The fixture (a registered Rewrite that bakes the launch config into the
kernel and marks it LC-S, plus a non-LC-S twin, its kernels, the prepared disk
cache and the fresh-process code) is ``launchbench.workloads.lcs.fixture``. On
numba-cuda < 0.30 (no ``numba.cuda.launchconfig``) every benchmark skips.
numba is imported lazily, so discovery never needs it.
"""
import shutil
import tempfile

from launchbench.base.device import simulator_enabled
from launchbench.workloads import kernels, launchers, sampling
from launchbench.workloads.lcs import fixture as lcs

from . import common

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


def lcs_or_skip():
    """Call first in every setup: skip (NotImplementedError) unless LC-S can run.

    Checked before the GPU, so an old numba-cuda skips for that reason.
    """
    if simulator_enabled():
        raise NotImplementedError("LC-S needs numba-cuda's C dispatcher; the CUDA simulator has none")
    if not launchers.has_launchconfig():
        raise NotImplementedError("numba-cuda < 0.30: no numba.cuda.launchconfig, so no LC-S kernels")
    sampling.gpu_or_skip()


def fixture():
    """The LC-S fixture, its Rewrite installed."""
    lcs.install()
    return lcs


class TimeLCSLaunch:
    """Per-launch cost of an LC-S kernel with its default and a second,
    already-specialized config, against its non-LC-S twin."""

    params = [common.ARG_COUNTS, list(CONFIGS), KINDS]
    param_names = ["nargs", "config", "kernel"]
    rounds = common.SURVEY_ROUNDS
    repeat = (10, 100, 1.0)  # ~100 samples of ~10 ms in 1 s (was 500 in 5 s: 20 sets x 7 s a round)

    def setup(self, nargs, config, kind):
        lcs_or_skip()
        kernels.quiet_occupancy_warnings()
        kernel, self.args = fixture().launched_kernel("launch", kind, nargs, list(CONFIGS.values()))
        self.launch = kernel[CONFIGS[config]]

    def time_launch(self, nargs, config, kind):
        self.launch(*self.args)

    def teardown(self, nargs, config, kind):
        launchers.synchronize()


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
        kernels.quiet_occupancy_warnings()
        fx = fixture()
        fx.clear_seen()
        self.kernel = fx.make_bench_kernel(1, kind)  # fresh: no config seen yet
        self.args = lcs.device_args(1)
        self.kernel[CONFIGS["default"]](*self.args)
        launchers.synchronize()
        griddim, blockdim, sharedmem = NEW_CONFIGS[config]
        self.launch = self.kernel[griddim, blockdim, 0, sharedmem]

    def time_first_launch(self, config, kind):
        self.launch(*self.args)
        launchers.synchronize()


class TimeLCSCallbacks:
    """Launch cost of an LC-S kernel (1 arg, default config) with 0, 1 and 4
    pre_launch_callbacks."""

    params = [CALLBACK_COUNTS]
    param_names = ["callbacks"]
    rounds = common.SURVEY_ROUNDS
    repeat = (10, 100, 1.0)

    def setup(self, callbacks):
        lcs_or_skip()
        kernels.quiet_occupancy_warnings()
        # One kernel per count: configured launches are cached per kernel,
        # so their callback lists would otherwise be shared.
        kernel, self.args = fixture().launched_kernel(f"callbacks{callbacks}", "lcs", 1, [CONFIGS["default"]])
        self.launch = kernel[CONFIGS["default"]]
        self.launch.pre_launch_callbacks[:] = [launchers.noop_callback] * callbacks

    def time_launch(self, callbacks):
        self.launch(*self.args)

    def teardown(self, callbacks):
        launchers.synchronize()


class TrackLCSCompilations:
    """Compilations after launching K distinct configs (LC-S: K; twin: 1)."""

    params = [KINDS, DISTINCT_CONFIG_COUNTS]
    param_names = ["kernel", "configs"]
    unit = "compilations"
    rounds = common.SURVEY_ROUNDS  # an exact count: a second process would only repeat it

    def setup(self, kind, configs):
        lcs_or_skip()
        kernels.quiet_occupancy_warnings()

    def track_compilations(self, kind, configs):
        fx = fixture()
        kernel = fx.make_bench_kernel(1, kind)
        args = lcs.device_args(1)
        for i in range(configs):
            kernel[1, 32 * (i + 1)](*args)
        launchers.synchronize()
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
    return fixture().prepare_disk_cache(KINDS, CACHE_CONFIGS["cached"])


def _setup_from_cache(prepared):
    if "skip" in prepared:
        raise NotImplementedError(prepared["skip"])
    lcs_or_skip()


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
        return stmt, fixture().disk_cache_child_code(prepared, kind, CACHE_CONFIGS[config])


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


# Row versions (common.py): asv's code hashes of these rows before the fixture code moved into
# launchbench.workloads (now its LC-S room, launchbench.workloads.lcs.fixture).
TimeLCSCallbacks.time_launch.version = "9d6c1f529db4bcd1811f942b4865604a35b53b33b577e9c7ea157b4f50758233"
TimeLCSFirstLaunch.time_first_launch.version = "756256c5aaa1cc5ab8e4f1259d41b5a32434ec7da869d10407104bd783908666"
TimeLCSLaunch.time_launch.version = "770ef8fa25b65397ab3bb4420d386e44c35013ec620404c0a1a47ce3bff4ee16"
TimerawLCSDiskCache.timeraw_first_launch.version = "b2a9f0773e319ef5eb85f307b9cee6824d1d1d504ffcba4c1c6f7e8ddab81d67"
TrackLCSCompilations.track_compilations.version = "6ab6517f78b6c89aafd6bd2104f4eb729c4103ec4776c5c079692057343a3943"
TrackLCSDiskCache.track_compilations_in_new_process.version = "01956bb5d7885cab1b5ec7b41501c2b8e984b2846f58d34fdda77dd40379e190"
TrackLCSDiskCache.track_lcs_marker_exists.version = "cc1b4cfa2646d30d664ed4d848a723cdba4aa54f4a607f19eaea3d454e958583"
