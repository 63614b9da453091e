"""Real kernels launched under every mechanism (needs a GPU; skipped elsewhere)."""
import json
import subprocess
import sys
import threading
import warnings

import pytest

from launchbench.workloads.capture import mechanisms as m

pytestmark = pytest.mark.gpu

ALL_SPECS = ("stock", "passthrough", "contextvar", "tls", "delay:0.5us")
CAPTURING = ("contextvar", "tls")


@pytest.fixture(autouse=True)
def restore_stock():
    yield
    m.uninstall()


@pytest.fixture
def recorders(monkeypatch):
    """Record current_launch_config() at compilation and at the driver launch."""
    from numba.cuda.dispatcher import CUDADispatcher, _Kernel

    seen = {"compile": [], "launch": []}
    orig_compile, orig_launch = CUDADispatcher.compile, _Kernel.launch

    def compile(self, sig):
        seen["compile"].append(m.current_launch_config())
        return orig_compile(self, sig)

    def launch(self, *args, **kwargs):
        seen["launch"].append(m.current_launch_config())
        return orig_launch(self, *args, **kwargs)

    monkeypatch.setattr(CUDADispatcher, "compile", compile)
    monkeypatch.setattr(_Kernel, "launch", launch)
    return seen


def _fill_kernel():
    from numba import cuda

    @cuda.jit
    def fill(out, x):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = x + i

    return fill


@pytest.mark.parametrize("spec", ALL_SPECS)
def test_real_launch_under_each_mechanism(spec, recorders):
    import numpy as np
    from numba import cuda

    fill = _fill_kernel()
    out = cuda.to_device(np.zeros(64, dtype=np.float32))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # low-occupancy warning for the 2-block grid
        launch = fill[2, 32, 0, 16]
    m.install(spec)
    launch(out, 3.0)  # compiles
    launch(out, 5.0)  # cached
    cuda.synchronize()
    m.uninstall()
    np.testing.assert_array_equal(out.copy_to_host(), 5.0 + np.arange(64, dtype=np.float32))
    assert len(recorders["compile"]) == 1 and len(recorders["launch"]) == 2
    for phase in ("compile", "launch"):
        for cfg in recorders[phase]:
            if spec not in CAPTURING:
                assert cfg is None
                continue
            assert cfg.dispatcher is fill
            assert cfg.args[0] is out
            assert tuple(cfg.griddim) == (2, 1, 1) and tuple(cfg.blockdim) == (32, 1, 1)
            assert cfg.sharedmem == 16
    assert [c.args[1] for c in recorders["launch"] if c is not None] == ([3.0, 5.0] if spec in CAPTURING else [])
    assert m.current_launch_config() is None


@pytest.mark.parametrize("spec", CAPTURING)
def test_threads_launch_with_their_own_config(spec, recorders):
    import numpy as np
    from numba import cuda

    fill = _fill_kernel()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fill[1, 32](cuda.to_device(np.zeros(32, dtype=np.float32)), 0.0)  # compile once, up front
    cuda.synchronize()
    m.install(spec)
    errors = []

    def worker(i):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                arr = cuda.to_device(np.zeros(32 * (i + 1), dtype=np.float32))
                for _ in range(50):
                    fill[i + 1, 32](arr, float(i))
            cuda.synchronize()
            np.testing.assert_array_equal(arr.copy_to_host(), i + np.arange(32 * (i + 1), dtype=np.float32))
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for cfg in recorders["launch"][1:]:
        assert cfg.griddim[0] - 1 == cfg.args[1]  # each launch saw its own thread's config


def test_real_launches_while_switching_in_place(recorders):
    import numpy as np
    from numba import cuda
    from numba.cuda.dispatcher import CUDADispatcher

    fill = _fill_kernel()
    out = cuda.to_device(np.zeros(32, dtype=np.float32))
    launch = fill[1, 32]
    launch(out, 0.0)  # compile under stock
    original = CUDADispatcher.__dict__["call"]
    assert m.switch("passthrough") is True
    snapshot = dict(CUDADispatcher.__dict__)
    recorders["launch"].clear()
    for i, spec in enumerate(("tls", "delay:0.5us", "passthrough", "tls")):
        assert m.switch(spec) is False
        launch(out, float(i))
        assert dict(CUDADispatcher.__dict__) == snapshot
    cuda.synchronize()
    np.testing.assert_array_equal(out.copy_to_host(), 3.0 + np.arange(32, dtype=np.float32))
    captured = recorders["launch"]
    assert [c is not None for c in captured] == [True, False, False, True]
    assert [c.args[1] for c in captured if c is not None] == [0.0, 3.0]
    m.uninstall()
    assert CUDADispatcher.__dict__["call"] is original


def _mechanisms(tmp_path, *extra):
    out = tmp_path / "m.json"
    proc = subprocess.run(
        [sys.executable, "-m", "launchbench", "mechanisms", "--args", "0,1", "--rounds", "3",
         "--samples", "2", "--launches", "200", "-o", str(out), *extra],
        capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(out.read_text())


def test_mechanisms_over_processes_on_gpu(tmp_path):
    doc = _mechanisms(tmp_path, "--processes", "2")
    assert doc["analysis_scope"] == "processes" and len(doc["processes"]) == 2
    assert doc["rounds_complete"] == 6 and doc["schema"] == "launchbench.mechanisms/4"
    assert len({p["pid"] for p in doc["processes"]}) == 2  # one fresh process per engine round


def test_mechanisms_command_measures_on_gpu(tmp_path):
    doc = _mechanisms(tmp_path, "--processes", "1")  # the in-process mode
    assert doc["measurement"] is True and doc["simulator"] is False
    assert doc["rounds_complete"] == 3
    assert doc["schema"] == "launchbench.mechanisms/4"
    assert doc["class_writes"]["blocks"] == 3 * 2 * 5
    assert all(set(r["class_modified"]) == {"0", "1"} for r in doc["rounds"])
    assert doc["analysis"]["tls_target"]["verdict"] in ("met", "missed", "inconclusive")
    for entry in doc["analysis"]["per_args"].values():
        assert all(v > 0 for v in entry["median_us"].values())
