"""benchmarks/bench_mechanisms.py: runs as a simulator smoke test, and skips where the C extension does not load;
the suite imports its own checkout's launchbench (benchmarks/__init__.py)."""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

SMOKE = """
import sys
sys.path.append({root!r})  # benchmarks/ from the checkout; launchbench from the same checkout
from benchmarks import bench_mechanisms as b
from launchbench.workloads.capture import mechanisms as m
for spec in b.MECHANISM_SPECS:
    o = b.TimeMechanismLaunch()
    o.setup(spec, 1)
    assert m.active() == m.validate(spec), (spec, m.active())
    before = b.common.CLOCK.now()
    o.time_launch(spec, 1)
    assert b.common.CLOCK.now() > before  # the recorded sample: the batch's seconds per launch
    o.teardown(spec, 1)
    assert m.active() == "stock"
print("ran", len(b.MECHANISM_SPECS))
"""

NO_EXTENSION = """
import sys
sys.path.append({root!r})
sys.modules["launchbench.workloads._tls"] = None  # built for another Python: it does not load
from benchmarks import bench_mechanisms as b
try:
    b.TimeMechanismLaunch().setup("tls", 0)
except NotImplementedError as exc:
    print("skipped:", exc)
"""

SHIPPED = """
import sys
sys.path.append({root!r})  # only benchmarks/'s parent: asv's envs have no launchbench installed
import benchmarks.bench_launch, launchbench, launchbench.workloads.anchor as a
print(launchbench.__file__)
print(a.ROOT)
"""


def _run(code, cwd, **env):
    # cwd elsewhere: launchbench must come from the installed package (with its C extension)
    return subprocess.run([sys.executable, "-c", code.format(root=str(ROOT))], capture_output=True, text=True,
                          env=dict(os.environ, **env), timeout=120, cwd=cwd)


def test_smoke_run_under_simulator(tmp_path):
    proc = _run(SMOKE, tmp_path, NUMBA_ENABLE_CUDASIM="1", LAUNCHBENCH_SMOKE="1")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ran 5"


def test_skips_where_the_c_extension_does_not_load(tmp_path):
    proc = _run(NO_EXTENSION, tmp_path, NUMBA_ENABLE_CUDASIM="1", LAUNCHBENCH_SMOKE="1")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("skipped: launchbench.workloads._tls does not load")
    assert "setup.py build_ext --inplace" in proc.stdout


def test_the_suite_imports_its_own_checkouts_launchbench(tmp_path):
    """As asv runs it: another folder, no launchbench on the path (a site-packages launchbench would lose
    too), and the checkout's launchbench is the one imported, with nothing else of the checkout on sys.path."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run([sys.executable, "-c", SHIPPED.format(root=str(ROOT))], capture_output=True,
                          text=True, env=env, timeout=120, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    init, root = proc.stdout.split()
    assert Path(init) == ROOT / "launchbench" / "__init__.py" and Path(root) == ROOT
