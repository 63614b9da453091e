"""launchbench's asv suite: asv classes over launchbench.workloads, the measurement core.

asv imports this package inside the virtualenvs it builds for numba-cuda commits, where
launchbench is not installed. So the checkout's own ``launchbench`` package (beside this
folder) is imported first, by its path -- the way ``envs.make_overlay`` ships it to the CLI's
workers: the suite and the code that measures always come from the same checkout, and no
other folder of the checkout lands on ``sys.path``. launchbench imports only the standard
library at module level, so discovery works in any environment; its C extensions load where
a benchmark needs them (``launchbench.workloads.sampling.extension_or_skip``).
"""
import importlib.util
import os
import sys


def _ship_launchbench():
    if "launchbench" in sys.modules:
        return
    package = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "launchbench")
    init = os.path.join(package, "__init__.py")
    if not os.path.isfile(init):  # a suite copied away from its checkout: an installed launchbench, if any
        return
    spec = importlib.util.spec_from_file_location("launchbench", init, submodule_search_locations=[package])
    module = importlib.util.module_from_spec(spec)
    sys.modules["launchbench"] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules["launchbench"]
        raise


_ship_launchbench()
