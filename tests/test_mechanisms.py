"""launchbench.workloads.capture.mechanisms on CPU: spec parsing, install/uninstall, what each mechanism captures.

The CUDA simulator's kernels never reach ``CUDADispatcher.call`` (its
``CUDADispatcher`` is a dummy class), so the capture tests use stand-in
dispatchers with numba-cuda 0.29's and 0.30's ``call`` signatures, plus the
real 0.30 class with its compilation intercepted (no GPU needed).
"""
import os
import subprocess
import sys
import threading
import time

import pytest

from launchbench.base.errors import UserError
from launchbench.workloads.capture import mechanisms as m

pytest.importorskip("launchbench.workloads._tls", reason="C extension not built (pip install -e .)")

CAPTURING = ("contextvar", "tls")
ALL_SPECS = ("stock", "passthrough", "contextvar", "tls", "delay:0.5us")


# ------------------------------------------------------------------ stand-ins

class Launch:
    """What ``dispatcher[griddim, blockdim, stream, sharedmem]`` returns in numba-cuda."""

    def __init__(self, dispatcher, griddim, blockdim, stream, sharedmem):
        self.dispatcher, self.griddim, self.blockdim = dispatcher, griddim, blockdim
        self.stream, self.sharedmem = stream, sharedmem

    def __call__(self, *args):
        return self.dispatcher.launch_via_call(args, self)


class Base:
    """Records current_launch_config() while "compiling" and while "launching"."""

    def __init__(self, body=None):
        self.seen = []
        self.body = body  # run during the launch: raise, or launch something nested

    def __getitem__(self, conf):
        griddim, blockdim, stream, sharedmem = (tuple(conf) + (0, 0))[:4]
        return Launch(self, griddim, blockdim, stream, sharedmem)

    def compile(self, args):
        self.seen.append(("compile", m.current_launch_config()))

    def launch(self, args):
        self.seen.append(("launch", m.current_launch_config()))
        if self.body is not None:
            self.body()
        return "launched"


class Dispatcher030(Base):
    def call(self, args, launch_config):
        self.compile(args)
        return self.launch(args)

    def launch_via_call(self, args, launch):
        return self.call(args, launch)


class Dispatcher029(Base):
    def call(self, args, griddim, blockdim, stream, sharedmem):
        self.compile(args)
        return self.launch(args)

    def launch_via_call(self, args, launch):
        return self.call(args, launch.griddim, launch.blockdim, launch.stream, launch.sharedmem)


STANDINS = (Dispatcher029, Dispatcher030)


@pytest.fixture(autouse=True)
def restore_stock():
    yield
    m.uninstall()
    assert m.active() == "stock"
    assert m.current_launch_config() is None


# ------------------------------------------------------------------ specs

@pytest.mark.parametrize("spec, canonical", [
    ("stock", "stock"), ("passthrough", "passthrough"), ("contextvar", "contextvar"), ("tls", "tls"),
    (" TLS ", "tls"), ("delay", "delay:500ns"), ("delay:0.5us", "delay:500ns"), ("delay:500ns", "delay:500ns"),
    ("delay:2µs", "delay:2000ns"), ("delay:0.001ms", "delay:1000ns"), ("delay:0ns", "delay:0ns"),
])
def test_validate_accepts(spec, canonical):
    assert m.validate(spec) == canonical


@pytest.mark.parametrize("spec, needle", [
    ("v2", "unknown mechanism"), ("", "unknown mechanism"), ("tls:1us", "takes no argument"),
    ("delay:fast", "bad delay"), ("delay:0.5", "bad delay"), ("delay:-1us", "bad delay"),
    ("delay:2ms", "over 1ms"), (None, "must be a string"),
])
def test_validate_rejects_with_one_line(spec, needle):
    with pytest.raises(UserError, match=needle) as info:
        m.validate(spec)
    assert "\n" not in str(info.value)


def test_mechanism_names():
    assert m.MECHANISMS == ("stock", "passthrough", "contextvar", "tls", "delay", "lctls", "hoist-imports")


def test_module_import_and_validate_do_not_import_numba():
    code = ("import sys, launchbench.workloads.capture.mechanisms as m, launchbench.workloads.capture.mechanism_rounds, "
            "launchbench.commands.mechanisms_cli; "
            "m.validate('delay:1us'); "
            "m.current_launch_config(); print('numba' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# ------------------------------------------------------------------ install / uninstall

@pytest.mark.parametrize("cls", STANDINS)
@pytest.mark.parametrize("spec", ALL_SPECS)
def test_uninstall_restores_the_very_same_function(cls, spec):
    original = cls.__dict__["call"]
    m.install(spec, target=cls)
    if spec == "stock":
        assert cls.__dict__["call"] is original
    else:
        assert cls.__dict__["call"] is not original
        assert cls.__dict__["call"].__wrapped__ is original
    assert m.active() == m.validate(spec)
    m.uninstall()
    assert cls.__dict__["call"] is original
    assert m.active() == "stock"


def test_install_replaces_instead_of_stacking():
    original = Dispatcher030.__dict__["call"]
    for spec in ALL_SPECS + ALL_SPECS[::-1]:
        m.install(spec, target=Dispatcher030)
        current = Dispatcher030.__dict__["call"]
        assert current is original or current.__wrapped__ is original
    m.uninstall()
    assert Dispatcher030.__dict__["call"] is original


def test_install_on_another_class_restores_the_first():
    o29, o30 = Dispatcher029.__dict__["call"], Dispatcher030.__dict__["call"]
    m.install("tls", target=Dispatcher029)
    m.install("tls", target=Dispatcher030)
    assert Dispatcher029.__dict__["call"] is o29
    m.uninstall()
    assert Dispatcher030.__dict__["call"] is o30


def test_bad_spec_leaves_active_mechanism_alone():
    m.install("tls", target=Dispatcher030)
    with pytest.raises(UserError):
        m.install("nope", target=Dispatcher030)
    assert m.active() == "tls"


def test_unknown_signature_is_refused():
    class Odd:
        def call(self, args, *rest):
            pass

    with pytest.raises(UserError, match="unsupported CUDADispatcher.call signature"):
        m.install("tls", target=Odd)
    assert m.active() == "stock"


def test_signature_detection():
    assert m.signature_of(Dispatcher029.call) == m.SIGNATURE_029
    assert m.signature_of(Dispatcher030.call) == m.SIGNATURE_030


def test_installed_context_manager():
    original = Dispatcher030.__dict__["call"]
    with m.installed("contextvar", target=Dispatcher030):
        assert m.active() == "contextvar"
    assert Dispatcher030.__dict__["call"] is original


# ------------------------------------------------------------------ switch (in place where it can)

class RecordingMeta(type):
    """Logs every attribute write on a class: each one would bump CPython's type version tag."""

    def __setattr__(cls, name, value):
        cls.writes.append(name)
        super().__setattr__(name, value)


def _recording_standin(base):
    cls = RecordingMeta(f"Recorded{base.__name__}", (base,), {"call": base.__dict__["call"]})
    type.__setattr__(cls, "writes", [])
    return cls


@pytest.mark.parametrize("base", STANDINS)
def test_switch_in_family_never_writes_the_class(base):
    cls = _recording_standin(base)
    original = cls.__dict__["call"]
    assert m.switch("passthrough", target=cls) is True  # stock -> interception: one write
    wrapper = cls.__dict__["call"]
    snapshot = dict(cls.__dict__)
    cls.writes.clear()
    for spec in ("tls", "delay:0.5us", "passthrough", "delay:2us", "tls", "tls", "passthrough"):
        assert m.switch(spec, target=cls) is False, spec
        assert cls.__dict__["call"] is wrapper
        assert m.active() == m.validate(spec) == wrapper.__launchbench_mechanism__
        assert wrapper.mode == m.parse(spec)[0]
    assert cls.writes == [] and dict(cls.__dict__) == snapshot
    m.uninstall()
    assert cls.__dict__["call"] is original and cls.writes == ["call"]


def test_switch_reports_every_class_write():
    cls = _recording_standin(Dispatcher030)
    steps = [("stock", False), ("tls", True), ("passthrough", False), ("contextvar", True), ("delay", True),
             ("tls", False), ("stock", True), ("stock", False), ("contextvar", True), ("contextvar", True),
             ("stock", True)]
    for spec, writes in steps:
        cls.writes.clear()
        assert m.switch(spec, target=cls) is writes, spec
        assert bool(cls.writes) is writes, (spec, cls.writes)
        assert m.active() == m.validate(spec)
    assert cls.__dict__["call"] is Dispatcher030.__dict__["call"]


def test_switch_delay_spins_what_install_would():
    m.switch("passthrough", target=Dispatcher030)
    m.switch("delay:3us", target=Dispatcher030)
    wrapper = Dispatcher030.__dict__["call"]
    assert wrapper.spin_ns == max(0, 3000 - m.spin_overhead_ns())
    m.switch("delay:10ns", target=Dispatcher030)
    assert wrapper.spin_ns == max(0, 10 - m.spin_overhead_ns()) and wrapper.mode == "delay"
    m.switch("tls", target=Dispatcher030)
    assert wrapper.spin_ns == 0
    m.install("delay:3us", target=Dispatcher030)
    assert Dispatcher030.__dict__["call"].spin_ns == max(0, 3000 - m.spin_overhead_ns())


@pytest.mark.parametrize("cls", STANDINS)
def test_switched_mechanism_captures_like_an_installed_one(cls):
    args, stream = (object(), 2), object()
    for spec in ("passthrough", "tls", "delay:1us", "tls", "passthrough"):
        m.switch(spec, target=cls)
        d = cls()
        assert d[(3, 1, 1), (32, 1, 1), stream, 64](*args) == "launched"
        for _, cfg in d.seen:
            if spec != "tls":
                assert cfg is None
            else:
                assert cfg.dispatcher is d and cfg.args == args and cfg.stream is stream
                assert cfg.griddim == (3, 1, 1) and cfg.sharedmem == 64
    assert m.current_launch_config() is None


def test_switch_to_another_target_restores_the_first():
    o29, o30 = Dispatcher029.__dict__["call"], Dispatcher030.__dict__["call"]
    m.switch("tls", target=Dispatcher029)
    assert m.switch("passthrough", target=Dispatcher030) is True
    assert Dispatcher029.__dict__["call"] is o29
    assert Dispatcher030.__dict__["call"].__wrapped__ is o30
    m.uninstall()
    assert Dispatcher030.__dict__["call"] is o30


def test_switch_reinstalls_when_someone_replaced_the_wrapper():
    class Quick:
        def call(self, args, launch_config):
            return "mine"

    original = Quick.__dict__["call"]
    m.switch("tls", target=Quick)

    def theirs(self, args, launch_config):
        return "theirs"

    Quick.call = theirs  # not ours any more: an in-place switch would not reach the launch path
    assert m.switch("passthrough", target=Quick) is True
    assert Quick.__dict__["call"].__wrapped__ is original  # install() put back the original first
    m.uninstall()
    assert Quick.__dict__["call"] is original


def test_switch_with_a_bad_spec_changes_nothing():
    m.switch("tls", target=Dispatcher030)
    wrapper = Dispatcher030.__dict__["call"]
    with pytest.raises(UserError):
        m.switch("delay:5ms", target=Dispatcher030)
    assert m.active() == "tls" and wrapper.mode == "tls" and Dispatcher030.__dict__["call"] is wrapper


# ------------------------------------------------------------------ what is captured

@pytest.mark.parametrize("cls", STANDINS)
@pytest.mark.parametrize("spec", ALL_SPECS)
def test_mechanism_sees_griddim_blockdim_sharedmem_args(cls, spec):
    d = cls()
    args = (object(), [1.0], 3)
    stream = object()
    m.install(spec, target=cls)
    assert d[(4, 1, 1), (64, 2, 1), stream, 128](*args) == "launched"
    assert [phase for phase, _ in d.seen] == ["compile", "launch"]
    for _, cfg in d.seen:
        if spec not in CAPTURING:
            assert cfg is None
            continue
        assert isinstance(cfg, m.LaunchConfig)
        assert cfg.dispatcher is d
        assert cfg.args == args and all(a is b for a, b in zip(cfg.args, args))
        assert cfg.griddim == (4, 1, 1) and cfg.blockdim == (64, 2, 1)
        assert cfg.stream is stream and cfg.sharedmem == 128
    assert m.current_launch_config() is None


@pytest.mark.parametrize("cls", STANDINS)
@pytest.mark.parametrize("spec", CAPTURING)
def test_capture_restored_after_exception(cls, spec):
    def fail():
        raise ValueError("launch failed")

    d = cls(body=fail)
    m.install(spec, target=cls)
    with pytest.raises(ValueError, match="launch failed"):
        d[1, 1](1)
    assert d.seen[-1][1].griddim == 1
    assert m.current_launch_config() is None
    from launchbench.workloads import _tls

    assert _tls.depth() == 0


@pytest.mark.parametrize("cls", STANDINS)
@pytest.mark.parametrize("spec", CAPTURING)
def test_nested_launch_restores_outer_config(cls, spec):
    inner = cls()
    after_inner = []

    def launch_inner():
        inner[2, 2, 0, 0]("inner-arg")
        after_inner.append(m.current_launch_config())

    outer = cls(body=launch_inner)
    m.install(spec, target=cls)
    outer[1, 1, 0, 0]("outer-arg")
    assert inner.seen[-1][1].args == ("inner-arg",) and inner.seen[-1][1].griddim == 2
    assert after_inner[0].args == ("outer-arg",) and after_inner[0].dispatcher is outer
    assert m.current_launch_config() is None


@pytest.mark.parametrize("spec", CAPTURING)
def test_threads_see_their_own_launch(spec):
    barrier = threading.Barrier(4)
    results, errors = {}, []

    def body():
        barrier.wait(timeout=10)  # all four launches are in flight at once
        results[threading.get_ident()] = m.current_launch_config()

    def worker(i):
        try:
            d = Dispatcher030(body=body)
            d[i + 1, 32](i)
            assert results[threading.get_ident()].args == (i,)
            assert results[threading.get_ident()].griddim == i + 1
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)

    m.install(spec, target=Dispatcher030)
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert len(results) == 4


def _per_call_ns(fn, n=300, batches=40):
    # many short batches: the fastest one is the least disturbed by other processes
    best = float("inf")
    for _ in range(batches):
        t0 = time.perf_counter_ns()
        for _ in range(n):
            fn()
        best = min(best, (time.perf_counter_ns() - t0) / n)
    return best


@pytest.mark.timing
@pytest.mark.parametrize("spec, expected_ns", [("delay:0.5us", 500), ("delay:5us", 5000)])
def test_delay_adds_the_requested_time(spec, expected_ns):
    class Quick:
        def call(self, args, launch_config):
            pass

    d, cfg = Quick(), object()
    m.install("passthrough", target=Quick)
    base = _per_call_ns(lambda: d.call((), cfg))
    m.install(spec, target=Quick)
    delayed = _per_call_ns(lambda: d.call((), cfg))
    # the compare tool's sensitivity check needs +0.5us to read as 0.5 +/- 0.2 us;
    # longer waits also absorb timer interrupts on a busy CI machine (~1 %)
    assert abs((delayed - base) - expected_ns) < 200 + 0.05 * expected_ns, (delayed - base)


# ------------------------------------------------------------------ the real numba-cuda class

@pytest.fixture
def real_dispatcher():
    if os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0"):
        pytest.skip("the simulator replaces CUDADispatcher with a dummy class")
    from numba.cuda.dispatcher import CUDADispatcher

    return CUDADispatcher


@pytest.mark.parametrize("spec", ALL_SPECS)
def test_real_dispatcher_restored_exactly(real_dispatcher, spec):
    original = real_dispatcher.__dict__["call"]
    m.install(spec)
    assert (real_dispatcher.__dict__["call"] is original) == (spec == "stock")
    m.uninstall()
    assert real_dispatcher.__dict__["call"] is original


def test_real_dispatcher_switch_keeps_its_dict(real_dispatcher):
    original = real_dispatcher.__dict__["call"]
    assert m.switch("passthrough") is True
    snapshot = dict(real_dispatcher.__dict__)
    for spec in ("tls", "delay:0.5us", "passthrough", "tls"):
        assert m.switch(spec) is False
        assert dict(real_dispatcher.__dict__) == snapshot
    assert m.switch("stock") is True
    assert real_dispatcher.__dict__["call"] is original


class _StopCompile(Exception):
    pass


@pytest.mark.parametrize("spec", ALL_SPECS)
def test_real_dispatcher_config_visible_during_compilation(real_dispatcher, spec, monkeypatch):
    """A real launch of a real kernel, stopped at compilation (no GPU needed)."""
    import warnings

    import numpy as np
    from numba import cuda

    seen = []

    def compile_and_stop(self, sig):
        seen.append(m.current_launch_config())
        raise _StopCompile

    monkeypatch.setattr(real_dispatcher, "compile", compile_and_stop)

    @cuda.jit
    def kernel(a):
        pass

    arr = np.zeros(4, dtype=np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # low-occupancy warning for the 2-block grid
        launch = kernel[2, 32, 0, 8]
    m.install(spec)
    with pytest.raises(_StopCompile):
        launch(arr)
    assert len(seen) == 1
    if spec not in CAPTURING:
        assert seen[0] is None
    else:
        cfg = seen[0]
        assert cfg.dispatcher is kernel
        assert cfg.args == (arr,) and cfg.args[0] is arr
        assert tuple(cfg.griddim) == (2, 1, 1) and tuple(cfg.blockdim) == (32, 1, 1)
        assert cfg.sharedmem == 8
    assert m.current_launch_config() is None


def test_install_refuses_the_simulator():
    code = ("import launchbench.workloads.capture.mechanisms as m\n"
            "try:\n    m.install('tls')\nexcept Exception as e:\n    print(type(e).__name__, e)\n")
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.startswith("UserError") and "simulator" in out.stdout
