"""The by-hand count of FACTS.md (2026-11-26), kept to explain its fractional residue: sys.monitoring
INSTRUCTION and CALL events around a plain loop of 50 launches of k[1, 1](a, a), three times in one
process. The loop's own bytecodes are counted too (about 12 over 50 launches: the .24 of 873.24),
which launchbench.workloads.counts leaves out: it counts only what the launch executes."""
import sys

import numpy as np
from numba import cuda

from launchbench.workloads import counts


@cuda.jit
def k(a, b):
    pass


a = cuda.to_device(np.zeros(16, dtype=np.float32))
launch = k[1, 1]
for _ in range(20):
    launch(a, a)
cuda.synchronize()

mon = sys.monitoring
E = mon.events
N = 50
for rep in range(3):
    tally = [0, 0]

    def ins(code, off):
        tally[0] += 1

    def call(code, off, func, arg0):
        tally[1] += 1

    mon.use_tool_id(3, "by-hand")
    mon.register_callback(3, E.INSTRUCTION, ins)
    mon.register_callback(3, E.CALL, call)
    mon.set_events(3, E.INSTRUCTION | E.CALL)
    for _ in range(N):
        launch(a, a)
    mon.set_events(3, 0)
    mon.free_tool_id(3)
    rec = counts.count(launch, (a, a), launches=N, sync=cuda.synchronize)
    from importlib.metadata import version
    print(f"numba-cuda {version('numba-cuda')} rep {rep}: by hand {tally[0] / N:.2f} bytecodes, {tally[1] / N:.2f} "
          f"calls per launch (loop included); launchbench.workloads.counts {rec['per_launch']['bytecodes']} / "
          f"{rec['per_launch']['calls']} (steady: {rec['steady']})")
