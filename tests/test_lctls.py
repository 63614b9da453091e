"""The lctls what-if mechanism on CPU: install/uninstall restore numba-cuda exactly, and on
stand-in classes the observable semantics match 0.30's -- the launch config is visible during a
launch-triggered compile only, the args during the whole launch, both restored after nesting and
errors. The conformance tests run under it on a GPU with LAUNCHBENCH_LCS_MECHANISM=lctls."""
import inspect
import types

import pytest

from launchbench.base.errors import UserError
from launchbench.workloads.capture import lctls, mechanisms

pytest.importorskip("launchbench.workloads._tls", reason="launchbench's C extension is not built")


def _own(owner, name):
    return (owner.__dict__ if isinstance(owner, type) else vars(owner)).get(name, "MISSING")


def test_install_and_uninstall_restore_numba_cuda_exactly():
    nd = pytest.importorskip("numba.cuda.dispatcher")
    launchconfig = pytest.importorskip("numba.cuda.launchconfig")
    if mechanisms.active() != "stock":
        pytest.skip(f"mechanism {mechanisms.active()} is installed for this session")
    if "launch_config" not in inspect.signature(nd.CUDADispatcher.call).parameters:
        pytest.skip("numba-cuda < 0.30: no launch-config path")
    spots = [(nd.CUDADispatcher, "call"), (nd.CUDADispatcher, "_compile_for_args"),
             (nd._LaunchConfiguration, "args"), (launchconfig, "current_launch_config"),
             (launchconfig, "capture_compile_config")]
    before = [_own(o, n) for o, n in spots]
    dict_keys = set(nd.CUDADispatcher.__dict__)
    mechanisms.install("lctls")
    try:
        assert mechanisms.active() == "lctls"
        during = [_own(o, n) for o, n in spots]
        assert all(a is not b for a, b in zip(before, during))
        assert nd.CUDADispatcher.call.__wrapped__ is before[0]
        assert launchconfig.current_launch_config() is None  # no launch in flight
        mechanisms.install("lctls")  # again: replaces, does not stack
        assert nd.CUDADispatcher.call.__wrapped__ is before[0]
    finally:
        mechanisms.uninstall()
    assert [_own(o, n) for o, n in spots] == before and all(a is b for a, b in zip(before, [_own(o, n) for o, n in spots]))
    assert set(nd.CUDADispatcher.__dict__) == dict_keys and not lctls.installed()
    mechanisms.install("tls")  # the other mechanisms are unaffected
    mechanisms.uninstall()
    assert _own(nd.CUDADispatcher, "call") is before[0]


# ---------------------------------------------------------------- semantics on stand-ins

class FakeKernel:
    def __init__(self, log, lc_module):
        self.log, self.lc = log, lc_module
        self.launch_config_sensitive = True

    def launch(self, args, griddim, blockdim, stream, sharedmem):
        self.log.append(("launch", self.lc.current_launch_config(), griddim))


class FakeLaunch:
    """A configured launch with 0.30's attributes; ``args`` is the property lctls replaces."""

    def __init__(self, dispatcher, griddim):
        self.dispatcher, self.griddim, self.blockdim, self.stream, self.sharedmem = dispatcher, griddim, 1, 0, 0
        self.pre_launch_callbacks = []

    @property
    def args(self):
        return "upstream slot"

    def __call__(self, *args):
        return self.dispatcher.call(args, self)


def make_world():
    """A dispatcher class shaped like 0.30's and a launchconfig module, recording what they see."""
    log = []
    lc = types.SimpleNamespace(current_launch_config=lambda: None, capture_compile_config=None)

    class FakeDispatcher:
        specialized = False

        def __init__(self):
            self.compiled = None
            self.redirect = None

        def call(self, args, launch_config):  # upstream's own: must never run under lctls
            raise AssertionError("the original call ran")

        def _compile_for_args(self, *args):
            cfg = lc.current_launch_config()
            log.append(("compile", cfg, cfg.args if cfg is not None else None))
            self.compiled = FakeKernel(log, lc)
            return self.compiled

        def _select_launch_config_dispatcher(self, launch_config):
            return self.redirect or self

        def _update_launch_config_sensitivity(self, kernel, launch_config):
            log.append(("update", lc.current_launch_config()))

    def cuda_call(self, *args, **kws):  # the C dispatcher: compile when nothing is compiled yet
        assert not kws, "lctls passes no launch-config keyword"
        return self.compiled or self._compile_for_args(*args)

    targets = lctls.Targets(FakeDispatcher, FakeLaunch, lc, cuda_call)
    return targets, log, lc


@pytest.fixture
def world():
    targets, log, lc = make_world()
    originals = {n: _own(o, n) for o, n in lctls._attrs(targets)}
    lctls.install(targets)
    yield targets, log, lc
    lctls.uninstall()
    assert {n: _own(o, n) for o, n in lctls._attrs(targets)} == originals


def test_config_visible_during_compile_only_and_args_during_the_launch(world):
    targets, log, lc = world
    tls = mechanisms._tls_module()
    d = targets.dispatcher()
    cfg = FakeLaunch(d, (4, 1, 1))
    seen = []
    cfg.pre_launch_callbacks.append(lambda kernel, c: seen.append((lc.current_launch_config(), c.args, kernel)))
    assert cfg.args is None and tls.depth() == 0
    cfg(1, 2)
    assert log[0] == ("compile", cfg, (1, 2))              # the rewrite's view: this launch's config and args
    assert log[1] == ("update", None)                      # not compiling any more
    assert seen == [(None, (1, 2), d.compiled)]            # callbacks: args yes, config no (as 0.30)
    assert log[2] == ("launch", None, (4, 1, 1))
    assert cfg.args is None and tls.depth() == 0 and lc.current_launch_config() is None
    cfg(3)  # compiled now: no compile, same routing
    assert [e[0] for e in log] == ["compile", "update", "launch", "update", "launch"]


def test_capture_compile_config_and_redirected_launches(world):
    targets, log, lc = world
    d, special = targets.dispatcher(), targets.dispatcher()
    d.redirect = special  # an LC-S specialization: the launch is routed to another dispatcher
    cfg = FakeLaunch(d, (2, 1, 1))
    with lc.capture_compile_config(special) as record:
        cfg(7)
    assert record["config"] is cfg and "_compile_for_args" not in vars(special)
    assert log[0] == ("compile", cfg, (7,)) and special.compiled is not None and d.compiled is None


def test_errors_and_nesting_restore_the_capture(world):
    targets, log, lc = world
    tls = mechanisms._tls_module()
    outer_d, inner_d = targets.dispatcher(), targets.dispatcher()
    outer, inner = FakeLaunch(outer_d, (1, 1, 1)), FakeLaunch(inner_d, (9, 1, 1))
    nested = []

    def launch_inside(kernel, cfg):  # a launch from a pre-launch callback
        inner(5)
        nested.append((outer.args, tls.depth()))

    outer.pre_launch_callbacks.append(launch_inside)
    outer(1)
    assert nested == [((1,), 1)]
    assert ("compile", inner, (5,)) in log and tls.depth() == 0

    def boom(kernel, cfg):
        raise RuntimeError("callback failed")

    inner.pre_launch_callbacks.append(boom)
    with pytest.raises(RuntimeError, match="callback failed"):
        inner(6)
    assert tls.depth() == 0 and inner.args is None


def test_lctls_refuses_the_029_launch_path_and_arguments():
    class Old:
        def call(self, args, griddim, blockdim, stream, sharedmem):
            pass

        def _compile_for_args(self, *args):
            pass

        def _select_launch_config_dispatcher(self, cfg):
            pass

        def _update_launch_config_sensitivity(self, kernel, cfg):
            pass

    lc = types.SimpleNamespace(current_launch_config=lambda: None, capture_compile_config=None)
    with pytest.raises(UserError, match="needs numba-cuda >= 0.30"):
        lctls.install(lctls.Targets(Old, FakeLaunch, lc, None))
    assert not lctls.installed() and "call" in Old.__dict__
    with pytest.raises(UserError, match="takes no argument"):
        mechanisms.parse("lctls:1us")
    assert mechanisms.validate("LCTLS") == "lctls"
