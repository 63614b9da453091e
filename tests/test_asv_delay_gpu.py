"""On a GPU: the normalized and the anchored launch rows read a known injected delay back.

``LAUNCHBENCH_ASV_DELAY_US`` adds a busy-wait of D wall µs after every launch. Normalized, D reads as
``D * R0 / r`` µs (r: the bindings reference's measured µs per launch in that process, R0 3.70), and
anchored as ``D * A0 / a`` (a: the anchor's own µs per launch of that kind): normalize.expected_delay_us.
Each side is the median of SAMPLES samples in a process of its own (asv's unit); the tolerance,
0.3 µs + 15 % of the expected delta, covers the process-to-process offsets seen on the GPU VMs (docs/asv.md)
(a few % of a ~11 µs launch). Skips without a GPU.
"""
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from launchbench.workloads.asvnative import normalize

pytestmark = pytest.mark.gpu
ROOT = Path(__file__).resolve().parents[1]
DELAY_US = 3.0
SAMPLES = 7

SCRIPT = """import json, statistics
from benchmarks import bench_launch as b
x = b.TimeLaunchPreconfigured()
x.setup(0, "[1, 1]", b.REFERENCE_LABEL)
values, refs = [], []
for _ in range(%d):
    before = b.common.CLOCK.now()
    x.time_launch(0, "[1, 1]")
    values.append((b.common.CLOCK.now() - before) * 1e6)
    refs.append(x.ref(getattr(x.ref, "batch", 300)) * 1e6)
print(json.dumps({"value": statistics.median(values), "ref_us": statistics.median(refs),
                  "scale": getattr(x.ref, "r0_us", x.settings["r0"]), "label": b.REFERENCE_LABEL}))
""" % SAMPLES


def _measure(env):
    proc = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("reference", ["bindings", "anchor"])
def test_the_normalized_delta_reads_the_injected_delay(reference, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAUNCHBENCH_")}
    env.update(PYTHONPATH=str(ROOT), NUMBA_ENABLE_CUDASIM="0", LAUNCHBENCH_ASV_REFERENCE=reference)
    anchor_dir = tempfile.mkdtemp(prefix="lbg")
    if reference == "anchor":
        env.update(LAUNCHBENCH_ASV_ANCHOR=sys.executable, LAUNCHBENCH_ASV_ANCHOR_DIR=anchor_dir,
                   LAUNCHBENCH_ASV_A0_DIR=str(tmp_path / "a0"))
    try:
        plain = _measure(env)
        delayed = _measure({**env, "LAUNCHBENCH_ASV_DELAY_US": str(DELAY_US)})
    finally:
        if reference == "anchor":
            subprocess.run([sys.executable, "-c", "import socket, sys; s = socket.socket(socket.AF_UNIX); "
                            "s.connect(sys.argv[1]); s.sendall(b'quit\\n')", os.path.join(anchor_dir, "sock")],
                           capture_output=True)
    assert plain["label"] == delayed["label"] and plain["label"].startswith("normalized to " + reference)
    expected = normalize.expected_delay_us(DELAY_US, delayed["scale"], delayed["ref_us"])
    delta = delayed["value"] - plain["value"]
    assert abs(delta - expected) <= 0.3 + 0.15 * expected, (delta, expected, plain, delayed)
