"""Exact counts of every launch row of the asv suite, in one process.

Both launch styles of the launch rows (``bench_launch``) over their argument counts and launch
configurations: ``preconfigured`` counts ``cfg(*args)`` with ``cfg = k[g, b]`` made once;
``configure-per-launch`` counts a one-line caller ``k[g, b](*args)`` (the caller's own few
bytecodes and its entry are in every value alike). Each value is what one launch executes in
Python (counts.count: the median launch of COUNT_LAUNCHES, after warm-up). The asv suite's ``setup_cache``
(``benchmarks/bench_counts.py``) calls :func:`count_all`; each row only looks its value up.
"""
import sys

from ..base import cudamod
from . import counts, kernels, launchers, sampling

#: launch style -> per_launch_configure (the launch rows' attribute of the same name)
STYLES = {"preconfigured": False, "configure-per-launch": True}

#: Smoke runs (simulator) count single-thread launches only: the simulator starts a Python thread per
#: GPU thread, and counting ``[1, 128]`` took 6-14 s a parameter set and was not steady (thread timing).
SMOKE_MAX_THREADS = 1

#: Launches counted per parameter set, and uncounted ones before them. Counts are exact and a steady
#: launch path repeats its totals launch after launch, so five show a path that is not steady as well
#: as twenty did, at a quarter of the monitoring (every commit pays it, 70 parameter sets).
COUNT_LAUNCHES = 5
#: Launches before counting: the first compiles or loads, the next fill numba-cuda's per-config caches.
COUNT_WARMUP = 10


def configure_per_launch(kernel, index):
    """``launch(*args)`` = ``kernel[index](*args)``: a user's line that configures per launch."""
    def launch(*args):
        return kernel[index](*args)
    return launch


def smoke_skip(config):
    """Why a smoke run does not count *config* (None: it does)."""
    threads = launchers.total_threads(config)
    if kernels.smoke_mode() and threads > SMOKE_MAX_THREADS:
        return (f"smoke run: {config} starts {threads} simulator threads per launch; counts there are "
                f"slow and not steady, only configurations of at most {SMOKE_MAX_THREADS} thread are counted")
    return None


def prepared(per_launch_configure, nargs, config, state):
    """(launch, args) of one parameter set, in its style (kernels and arguments shared per argument count
    in *state*)."""
    cuda = cudamod.import_cuda()
    if nargs not in state:
        state[nargs] = (kernels.cached_kernel(nargs), kernels.device_arrays(nargs, cuda))
    kernel, args = state[nargs]
    stream = cuda.stream() if launchers.LAUNCH_CONFIGS[config][2] == "stream" else None
    index = launchers.launch_index(config, stream)
    return (configure_per_launch(kernel, index) if per_launch_configure else kernel[index]), args


def count_one(per_launch_configure, nargs, config, state):
    """The counts record of one parameter set (kernels and arguments shared per argument count in *state*)."""
    launch, args = prepared(per_launch_configure, nargs, config, state)
    launchers.warm_up(launch, args, launches=COUNT_WARMUP)
    return counts.count(launch, args, launches=COUNT_LAUNCHES, sync=launchers.synchronize)


def count_all(arg_counts):
    """Every parameter set of both styles counted in this one process.

    ``{"skip": reason}`` where the suite produces no numbers here (no GPU; simulator without
    the smoke switch), as every row does; else ``{"rows": {(style, nargs, config): summary}}``,
    a summary being the record's counter, python, kinds, per_launch and steady, or ``{"skip":
    reason}``. A launch that raises fails the whole cache: loudly."""
    try:
        sampling.gpu_or_skip()
    except NotImplementedError as exc:
        return {"skip": str(exc)}
    kernels.quiet_occupancy_warnings()
    state, rows = {}, {}
    for style, per_launch_configure in STYLES.items():
        for nargs in arg_counts:
            for config in launchers.CONFIG_NAMES:
                reason = smoke_skip(config)
                if reason:
                    rows[(style, nargs, config)] = {"skip": reason}
                    continue
                rec = count_one(per_launch_configure, nargs, config, state)
                if not rec["steady"]:
                    print(f"bench_counts: {style} {nargs} args {config}: launches differ ({rec['launch_totals']}); "
                          "the median launch's counts are recorded", file=sys.stderr)
                rows[(style, nargs, config)] = {k: rec[k] for k in ("counter", "python", "kinds", "per_launch", "steady")}
    return {"rows": rows}
