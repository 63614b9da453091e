"""The lock probe (workloads/lockprobe.py, engine/lockprobe.py, launchbench lock-probe) on stand-ins:
a launch that takes the lock waits while another thread holds it, one that does not completes; the
probe registers the planner between the control and the rest; a release without the LC-S planner API
says so in one line; the command writes a lock-probe document. No GPU, no wall-clock bound: a launch
that does not take the lock returns at once, one that does waits for the release, whatever the load."""
import json
import threading

import pytest

from launchbench import cli
from launchbench.engine import lockprobe as engine
from launchbench.output import documents
from launchbench.workloads import lockprobe
from test_releases import make_wheel

#: a stand-in numba-cuda-mlir: hot launches of the kernels named in TAKES_LOCK take the lock
STANDIN = '''
import threading
LOCK = threading.RLock()
VERSION = {version!r}
TAKES_LOCK = {takes!r}
API = {api!r}


class Api:
    version = VERSION
    lock = LOCK
    lock_name = "standin.global_compiler_lock (RLock)"
    planner_api = API
    note = None if API == "lcs" else "standin " + VERSION + " has register_planner but no require_launch_config"

    def sync(self):
        pass

    def device(self):
        return {{"name": "stand-in"}}

    def _launch(self, key):
        def launch():
            if key in TAKES_LOCK:
                with LOCK:
                    pass
        return {{form: launch for form in ("k[1, 1](out)", "launch(out)")}}

    def kernels(self):
        yield "plain-no-planner", self._launch("plain-no-planner"), {{}}
        yield "plain-planner", self._launch("plain-planner"), {{}}
        if API == "lcs":
            yield "lcs-planner", self._launch("lcs-planner"), {{"baked": True}}


def api():
    return Api()
'''


def test_a_launch_that_takes_the_lock_waits_while_it_is_held_and_completes_after():
    lock = threading.RLock()

    def locking():
        with lock:
            pass

    got = lockprobe.held_launch(lock, locking, timeout=0.2)
    assert got == {"completed_while_held": False, "completed_after_release": True, "error": None, "timeout_s": 0.2}
    got = lockprobe.held_launch(lock, lambda: None, timeout=30)  # returns at once: no wait on the timeout
    assert got["completed_while_held"] is True and got["completed_after_release"] is True
    assert lock.acquire(blocking=False)  # released again
    lock.release()


def test_a_launch_that_raises_is_one_line_and_the_probe_goes_on():
    calls = []

    def fails():
        calls.append(1)
        if len(calls) > 1:
            raise RuntimeError("launch failed\nsecond line")

    got = lockprobe.held_launch(threading.RLock(), fails, timeout=5)
    assert got["error"] == "RuntimeError: launch failed" and got["completed_while_held"] is False


def test_hot_us_is_launches_per_sample_between_synchronizes():
    ticks = iter(range(0, 1000, 2))  # each clock read advances 2 s: one sample is 2 s of 4 launches
    events = []
    got = lockprobe.hot_us(lambda: events.append("l"), lambda: events.append("s"), loops=4, repeats=3,
                           clock=lambda: next(ticks))
    assert got == [2 / 4 * 1e6] * 3
    assert events.count("l") == 4 + 3 * 4  # the warm-up, then the samples


class _Api:
    version, lock_name, planner_api, note = "9.9", "lock", "lcs", None

    def __init__(self, takes=()):
        self.lock = threading.RLock()
        self.takes = takes
        self.order = []

    def sync(self):
        pass

    def device(self):
        return {"name": "x"}

    def kernels(self):
        for key in lockprobe.KERNELS:
            self.order.append(key)

            def launch(key=key):
                if key in self.takes:
                    with self.lock:
                        pass
            yield key, {form: launch for form in lockprobe.FORMS}, {}


def test_the_probe_reads_every_kernel_and_form():
    api = _Api(takes=("plain-planner",))
    doc = lockprobe.probe(api, timeout=0.2, loops=3, repeats=2)
    assert [k["kernel"] for k in doc["kernels"]] == list(lockprobe.KERNELS) == api.order
    by = {k["kernel"]: k for k in doc["kernels"]}
    assert all(f["completed_while_held"] for f in by["lcs-planner"]["forms"].values())
    assert not any(f["completed_while_held"] for f in by["plain-planner"]["forms"].values())
    assert all(len(f["samples_us"]) == 2 and f["us"] >= 0 for k in doc["kernels"] for f in k["forms"].values())
    line = engine.reading(doc)
    assert "lcs-planner: launches while the lock is held" in line and "plain-planner: waits for the lock" in line


def test_the_real_api_needs_numba_cuda_mlir_and_says_so_in_one_line(capsys):
    try:
        import numba_cuda_mlir  # noqa: F401
        pytest.skip("numba-cuda-mlir is installed here")
    except ImportError:
        pass
    assert lockprobe.main(['{"loops": 1}']) == 1
    got = json.loads(capsys.readouterr().out)
    assert got["error"].startswith("cannot set up the probe: ModuleNotFoundError") and "\n" not in got["error"]


@pytest.mark.slow
def test_lock_probe_probes_each_release_in_its_environment(tmp_path, capsys):
    """Two stand-in numba-cuda-mlir releases: 0.4.2 (no LC-S planner API; its planner-registered plain launch
    takes the lock) and 0.5.0 (none does). One line for 0.4.2's missing API; the document reads as its kind."""
    d = tmp_path / "wheels"
    d.mkdir()
    for version, takes, api in (("0.4.2", ("plain-planner",), "planner"), ("0.5.0", (), "lcs")):
        make_wheel(str(d), "numba-cuda-mlir", version, [],
                   {"standin_mlir/__init__.py": STANDIN.format(version=version, takes=takes, api=api)})
    out = tmp_path / "lock.json"
    rc = cli.main(["lock-probe", "numba-cuda-mlir==0.4.2,0.5.0", "--target", "standin_mlir:api", "--wheels", str(d),
                   "--env-dir", str(tmp_path / "envs"), "--timeout", "0.3", "--loops", "5", "--repeats", "2",
                   "--quiet", "-o", str(out)])
    text, err = capsys.readouterr()
    assert rc == 0, err
    assert [ln for ln in err.splitlines() if "has register_planner but no require_launch_config" in ln] == [
        "launchbench: numba-cuda-mlir==0.4.2: standin 0.4.2 has register_planner but no require_launch_config"]
    doc = documents.read(str(out), "lock-probe")
    assert doc["measurement"] is False and doc["series"] == "numba-cuda-mlir==0.4.2,0.5.0"
    p42, p50 = doc["points"]
    assert p42["planner_api"] == "planner" and [k["kernel"] for k in p42["kernels"]] == ["plain-no-planner",
                                                                                         "plain-planner"]
    held = {k["kernel"]: [f["completed_while_held"] for f in k["forms"].values()] for k in p42["kernels"]}
    assert held == {"plain-no-planner": [True, True], "plain-planner": [False, False]}
    assert all(f["completed_while_held"] for k in p50["kernels"] for f in k["forms"].values())
    assert "NOT A MEASUREMENT" in text and "numba-cuda-mlir==0.5.0: plain-no-planner: launches while" in text
