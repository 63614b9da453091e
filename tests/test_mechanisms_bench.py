"""benchmarks/bench_mechanisms.py: runs as a simulator smoke test, and skips without launchbench."""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

SMOKE = """
import sys
sys.path.append({root!r})  # benchmarks/ from the checkout; launchbench as installed
from benchmarks import bench_mechanisms as b
from launchbench.workloads import mechanisms as m
for spec in b.MECHANISM_SPECS:
    o = b.TimeMechanismLaunch()
    o.setup(spec, 1)
    assert m.active() == m.validate(spec), (spec, m.active())
    before = b.CLOCK.now()
    o.time_launch(spec, 1)
    assert b.CLOCK.now() > before  # the recorded sample: the batch's seconds per launch
    o.teardown(spec, 1)
    assert m.active() == "stock"
print("ran", len(b.MECHANISM_SPECS))
"""

NO_LAUNCHBENCH = """
import builtins, sys
sys.path.append({root!r})  # benchmarks/ from the checkout; launchbench as installed
real = builtins.__import__
def guarded(name, *args, **kwargs):
    if name == "launchbench" or name.startswith("launchbench."):
        raise ImportError("No module named 'launchbench'")
    return real(name, *args, **kwargs)
builtins.__import__ = guarded
from benchmarks import bench_mechanisms as b
try:
    b.TimeMechanismLaunch().setup("tls", 0)
except NotImplementedError as exc:
    print("skipped:", exc)
"""


def _run(code, cwd, **env):
    # cwd elsewhere: launchbench must come from the installed package (with its C extension)
    return subprocess.run([sys.executable, "-c", code.format(root=str(ROOT))], capture_output=True, text=True,
                          env=dict(os.environ, **env), timeout=120, cwd=cwd)


def test_smoke_run_under_simulator(tmp_path):
    proc = _run(SMOKE, tmp_path, NUMBA_ENABLE_CUDASIM="1", LAUNCHBENCH_SMOKE="1")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ran 5"


def test_skips_where_launchbench_is_absent(tmp_path):
    proc = _run(NO_LAUNCHBENCH, tmp_path, NUMBA_ENABLE_CUDASIM="1", LAUNCHBENCH_SMOKE="1")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("skipped: launchbench is not importable")
