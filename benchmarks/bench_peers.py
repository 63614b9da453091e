"""Peers and floors: numba-cuda's launch next to CuPy, cuda.core and the driver.

``track_us_per_launch`` reports µs per launch of an empty kernel with 0..4
pointer args, the way ``launchbench peers`` measures it: ``LOOPS`` launches
then one synchronize, divided by ``LOOPS``, median of ``REPEATS`` samples.
A track (not a time) benchmark because the floor is timed inside C, where
asv's timer cannot reach; every launcher is measured the same way so the
rows compare.

The launchers live in ``launchbench.workloads.peers``; the floor needs launchbench's C
extension (``_floor``, built for the environment's Python). Where it, the peer library
(CuPy, cuda.core) or a real GPU is missing, setup raises NotImplementedError and asv
skips the case.
Simulator runs skip too: peers are driver numbers, never simulated ones.
"""
import statistics

from launchbench.base.device import simulator_enabled
from launchbench.workloads import kernels, peers, sampling

from . import common

LAUNCHERS = ["numba_cuda", "cupy", "cuda_core", "floor"]
LOOPS = 10000
REPEATS = 5


class TrackPeerLaunch:
    params = [LAUNCHERS, common.ARG_COUNTS]
    param_names = ["launcher", "args"]
    rounds = common.SURVEY_ROUNDS
    timeout = 120

    def setup(self, launcher, nargs):
        sampling.gpu_or_skip()
        if simulator_enabled():
            raise NotImplementedError("peers need a real GPU (simulator run)")
        if launcher == "floor":
            sampling.extension_or_skip("_floor")
        if launcher == "numba_cuda":
            kernels.quiet_occupancy_warnings()
        try:
            self.run = peers.FACTORIES[launcher](nargs)
        except peers.PeerUnavailable as exc:
            raise NotImplementedError(str(exc))
        self.run(1000)  # warm-up: JIT, module load, first-launch costs

    def track_us_per_launch(self, launcher, nargs):
        return statistics.median(self.run(LOOPS) / LOOPS * 1e6 for _ in range(REPEATS))

    track_us_per_launch.unit = "us"
    track_us_per_launch.version = "c7a2ababb0a93533f812cfeb0171db20f62be23d28144042514ea1d15f4eeccf"  # see common.py, "Row versions"
