"""launchbench.workloads._floor: builds without CUDA, degrades without libcuda, validates input."""
import os
import shutil
import subprocess
import sys

import pytest

from launchbench.workloads import _floor

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NO_DRIVER = not _floor.available()


def test_module_imports_and_reports_availability():
    assert isinstance(_floor.available(), bool)
    assert _floor.MAX_ARGS >= 4
    reason = _floor.unavailable_reason()
    assert (reason is None) == _floor.available()


def test_extension_builds_without_cuda_headers_or_libcuda(tmp_path):
    """A clean build from source, and the result does not link against libcuda."""
    subprocess.run(
        [sys.executable, "setup.py", "-q", "build_ext", "--build-lib", str(tmp_path / "lib"),
         "--build-temp", str(tmp_path / "tmp")],
        cwd=ROOT, check=True, capture_output=True,
    )
    built = list((tmp_path / "lib" / "launchbench" / "workloads").glob("_floor*.so"))
    assert len(built) == 1
    readelf = shutil.which("readelf")
    if readelf:
        needed = subprocess.run([readelf, "-d", str(built[0])], capture_output=True, text=True).stdout
        assert "libcuda" not in needed


@pytest.mark.skipif(not NO_DRIVER, reason="a CUDA driver is present")
def test_without_driver_every_entry_point_says_why():
    assert "libcuda" in _floor.unavailable_reason() or "cuInit" in _floor.unavailable_reason()
    for call in (_floor.driver_version, _floor.compute_capability,
                 lambda: _floor.load_module(b".version 7.8", "k"), lambda: _floor.mem_alloc(4),
                 lambda: _floor.launch_loop(1, 1, 0)):
        with pytest.raises(RuntimeError, match="CUDA driver unavailable"):
            call()


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        (dict(func=0, n=1, nargs=0), ValueError, "func handle"),
        (dict(func=-5, n=1, nargs=0), ValueError, "func handle"),
        (dict(func="x", n=1, nargs=0), TypeError, "func must be an int"),
        (dict(func=1, n=0, nargs=0), ValueError, "n must be >= 1"),
        (dict(func=1, n=-3, nargs=0), ValueError, "n must be >= 1"),
        (dict(func=1, n=1, nargs=-1), ValueError, "nargs must be in 0"),
        (dict(func=1, n=1, nargs=_floor.MAX_ARGS + 1), ValueError, "nargs must be in 0"),
        (dict(func=1, n=1, nargs=0, shmem=-1), ValueError, "shmem"),
        (dict(func=1, n=1, nargs=0, grid=(1, 0, 1)), ValueError, r"grid\[1\] must be positive"),
        (dict(func=1, n=1, nargs=0, block=0), ValueError, "block must be positive"),
        (dict(func=1, n=1, nargs=0, grid=(1, 1, 1, 1)), TypeError, "tuple of 1 to 3"),
        (dict(func=1, n=1, nargs=0, block=(1.0,)), TypeError, r"block\[0\] must be an int"),
        (dict(func=1, n=1, nargs=2, device_ptrs=[1]), ValueError, "has 1 entries but nargs is 2"),
        (dict(func=1, n=1, nargs=1, device_ptrs=["p"]), TypeError, r"device_ptrs\[0\]"),
        (dict(func=1, n=1, nargs=1, device_ptrs=5), TypeError, "sequence"),
    ],
)
def test_launch_loop_validates_before_touching_the_driver(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        _floor.launch_loop(**kwargs)


def test_other_entry_points_validate():
    with pytest.raises(ValueError, match="non-empty"):
        _floor.load_module(b"", "k")
    with pytest.raises(ValueError, match="non-empty"):
        _floor.load_module(b".version 7.8", "")
    with pytest.raises(TypeError):
        _floor.load_module(".version 7.8", "k")  # str, not bytes
    with pytest.raises(ValueError, match="nbytes must be >= 1"):
        _floor.mem_alloc(0)
    with pytest.raises(ValueError, match="non-zero"):
        _floor.mem_free(0)


@pytest.mark.gpu
def test_launch_loop_on_a_gpu():
    from launchbench.workloads.peers import empty_kernels_ptx, kernel_name

    ptx = empty_kernels_ptx(_floor.compute_capability(), 2).encode()
    assert _floor.driver_version() >= 11000
    func = _floor.load_module(ptx, kernel_name(2))
    ptrs = [_floor.mem_alloc(4), _floor.mem_alloc(4)]
    ns = _floor.launch_loop(func, 1000, 2, device_ptrs=ptrs)
    assert 0 < ns / 1000 < 1e6  # below 1 ms per empty launch
    assert _floor.launch_loop(func, 10, 2, grid=(2, 1, 1), block=32, device_ptrs=ptrs, sync=False) > 0
    with pytest.raises(RuntimeError, match="cuModuleGetFunction"):
        _floor.load_module(ptx, "no_such_kernel")
    for p in ptrs:
        _floor.mem_free(p)
