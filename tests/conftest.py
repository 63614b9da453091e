"""GPU tests are marked ``gpu`` and skip cleanly where no real GPU exists."""
import functools

import pytest


@functools.lru_cache(maxsize=None)
def _have_gpu() -> bool:
    from launchbench.base.device import gpu_available

    return gpu_available()


def pytest_collection_modifyitems(config, items):
    gpu_items = [item for item in items if "gpu" in item.keywords]
    if gpu_items and not _have_gpu():
        skip = pytest.mark.skip(reason="needs a real CUDA GPU (none found, or the simulator is on)")
        for item in gpu_items:
            item.add_marker(skip)
