"""Launch-config capture mechanisms, switchable inside one process.

Each mechanism replaces ``CUDADispatcher.call`` of the imported numba-cuda
with a wrapper, so the cost of *capturing* the launch configuration is
measured on one build, free of every other difference between releases:

- ``stock``: the original method, untouched.
- ``passthrough``: the interception, capturing nothing -- the cost of the
  wrapper itself. passthrough, tls and delay are the same C interception
  (``launchbench.workloads._tls.Interceptor``), so their differences are exactly
  what they do around the call.
- ``contextvar``: as described for numba-cuda pull request #288: per launch,
  a frozen dataclass is built and set in a ``ContextVar`` by a
  ``@contextlib.contextmanager``, and reset afterwards.
- ``tls``: our C extension ``launchbench.workloads._tls`` (a per-thread stack): the
  C interception pushes the launch configuration and args before the
  launch and pops them after (also when it raises).
- ``delay[:T]``: passthrough plus a calibrated busy-wait of T per launch
  (default 0.5us) -- a known cost that a comparison must be able to see.
- ``lctls`` (numba-cuda 0.30 only): a what-if, not a wrapper -- 0.30's launch
  path with its own capture (the args swap, the launch-config keyword)
  replaced by the tls capture, and ``current_launch_config()`` and
  ``_LaunchConfiguration.args`` reading it (``launchbench.workloads.capture.lctls``).
- ``hoist-imports``: a what-if, not a wrapper -- the installed numba-cuda with the imports
  its launch-path functions run at every call (``args.py``'s ``to_device``) run once at
  set-up instead (``launchbench.workloads.hoist``); ``call`` is left as it is.

Both launch signatures are intercepted: numba-cuda <= 0.29
``call(self, args, griddim, blockdim, stream, sharedmem)`` and >= 0.30
``call(self, args, launch_config)``. Which one is detected once, at
install time, so nothing is inspected per launch.

``install`` writes ``CUDADispatcher.call``; every class write makes CPython
drop the class's type version tag, so each specialized attribute lookup on a
dispatcher in the launch path misses until its adaptive cooldown (about 52
executions on 3.12) lets it re-specialize -- and from 3.13 a class gets at
most 1000 version tags. ``switch`` therefore moves among passthrough, tls
and delay by changing the installed Interceptor's mode in place, and writes
the class only when it has to (to or from stock or contextvar).

Import-light on purpose: numba is imported only by ``install``.
"""
from __future__ import annotations

import contextlib
import contextvars
import functools
import re
from dataclasses import dataclass

from ...base.device import import_cuda, simulator_enabled
from ...base.errors import UserError
from .. import hoist
from . import lctls
from .intercept import SIGNATURE_029, SIGNATURE_030, signature_of
from .intercept import tls_module as _tls_module

MECHANISMS = ("stock", "passthrough", "contextvar", "tls", "delay", "lctls", "hoist-imports")
DEFAULT_DELAY_NS = 500
_MAX_DELAY_NS = 1_000_000  # 1 ms: anything longer is a typo, not a launch cost

_UNITS_NS = {"ns": 1, "us": 1_000, "µs": 1_000, "ms": 1_000_000}
_DELAY_RE = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*(ns|us|µs|ms)\s*$")


# --------------------------------------------------------------------------
# Spec parsing (pure)
# --------------------------------------------------------------------------

def parse(spec: str) -> tuple[str, int]:
    """``spec`` -> (mechanism name, delay in ns; 0 unless delay)."""
    if not isinstance(spec, str):
        raise UserError(f"mechanism must be a string, got {type(spec).__name__}; use one of {', '.join(MECHANISMS)}")
    name, sep, arg = spec.strip().partition(":")
    name = name.strip().lower()
    if name not in MECHANISMS:
        raise UserError(
            f"unknown mechanism {spec!r}; use one of {', '.join(MECHANISMS)} (delay takes a time, e.g. delay:0.5us)"
        )
    if name != "delay":
        if sep:
            raise UserError(f"mechanism {name!r} takes no argument (got {spec!r}); write just {name!r}")
        return name, 0
    if not sep:
        return name, DEFAULT_DELAY_NS
    match = _DELAY_RE.match(arg)
    if not match:
        raise UserError(f"bad delay {arg!r} in {spec!r}; write a time with a unit, e.g. delay:0.5us or delay:500ns")
    ns = round(float(match.group(1)) * _UNITS_NS[match.group(2)])
    if ns > _MAX_DELAY_NS:
        raise UserError(f"delay {arg!r} is over 1ms per launch; use a sub-millisecond delay such as delay:0.5us")
    return name, ns


def format_spec(name: str, delay_ns: int = 0) -> str:
    """The canonical spelling of a mechanism (``delay:500ns``)."""
    return f"delay:{delay_ns}ns" if name == "delay" else name


def validate(spec: str) -> str:
    """Check a mechanism spec without importing numba; return its canonical form."""
    return format_spec(*parse(spec))


# --------------------------------------------------------------------------
# What the capturing mechanisms make visible
# --------------------------------------------------------------------------

@dataclass(frozen=True, repr=False)
class LaunchConfig:
    """One launch's configuration, as the contextvar mechanism captures it."""

    dispatcher: object
    args: tuple
    griddim: object
    blockdim: object
    stream: object
    sharedmem: object

    def __repr__(self) -> str:
        # Not the fields' own reprs: a cuda.core Stream's repr calls the driver.
        name = getattr(self.dispatcher, "__name__", type(self.dispatcher).__name__)
        return (
            f"LaunchConfig({name}, {len(self.args)} args, griddim={self.griddim!r}, "
            f"blockdim={self.blockdim!r}, stream={type(self.stream).__name__}, sharedmem={self.sharedmem!r})"
        )


_CONFIG_VAR: contextvars.ContextVar = contextvars.ContextVar("launchbench_launch_config", default=None)


@contextlib.contextmanager
def _launch_config_scope(dispatcher, args, griddim, blockdim, stream, sharedmem):
    token = _CONFIG_VAR.set(LaunchConfig(dispatcher, args, griddim, blockdim, stream, sharedmem))
    try:
        yield
    finally:
        _CONFIG_VAR.reset(token)


def current_launch_config():
    """The launch being made (``LaunchConfig``) under contextvar or tls, else None.

    Set for the whole call: launch-triggered compilation and the launch.
    """
    config = _CONFIG_VAR.get()
    if config is not None:
        return config
    tls = _tls_module(required=False)
    if tls is None:
        return None
    raw = tls.current()
    if raw is None:
        return None
    args = tls.current_args()
    if isinstance(raw, tuple):  # 0.29 signature: (dispatcher, griddim, blockdim, stream, sharedmem)
        return LaunchConfig(raw[0], args, *raw[1:])
    # 0.30 signature: numba-cuda's own configured launch object
    return LaunchConfig(raw.dispatcher, args, raw.griddim, raw.blockdim, raw.stream, raw.sharedmem)


# --------------------------------------------------------------------------
# The calibrated delay (the C extension itself: launchbench.workloads.capture.intercept)
# --------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def spin_overhead_ns() -> int:
    """What a delay's busy-wait costs beyond the time it waits, measured once per process.

    The spin runs inside the C interception: its only extra is the clock read
    that starts it. Subtracted from a requested delay so that ``delay:T`` adds
    T per launch over ``passthrough``.
    """
    return _tls_module().clock_overhead_ns()


# --------------------------------------------------------------------------
# Wrappers: passthrough, tls and delay are one C interception
# (launchbench.workloads._tls.Interceptor) differing only in what it does around the
# call, so tls - passthrough is the capture alone. contextvar stays Python:
# a Python context manager per launch IS that mechanism.
# --------------------------------------------------------------------------

_SIGNATURE_NAMES = {SIGNATURE_029: "0.29", SIGNATURE_030: "0.30"}


def _wrap_contextvar(orig, sig):
    scope = _launch_config_scope
    if sig == SIGNATURE_030:
        def call(self, args, launch_config):
            with scope(self, args, launch_config.griddim, launch_config.blockdim,
                       launch_config.stream, launch_config.sharedmem):
                return orig(self, args, launch_config)
    else:
        def call(self, args, griddim, blockdim, stream, sharedmem):
            with scope(self, args, griddim, blockdim, stream, sharedmem):
                return orig(self, args, griddim, blockdim, stream, sharedmem)
    return call


def _spin_ns(delay_ns: int) -> int:
    """The busy-wait that makes ``delay:<delay_ns>`` add delay_ns over passthrough."""
    return max(0, delay_ns - spin_overhead_ns())


def _intercept(orig, sig, name, spin_ns=0):
    """The C interception of ``orig``: forwards every call, capturing per ``name``."""
    return _tls_module().Interceptor(orig, name, spin_ns=spin_ns, signature=_SIGNATURE_NAMES[sig])


def make_wrapper(spec: str, orig):
    """The replacement for ``orig`` (an unbound ``call``) under ``spec``; None for stock."""
    name, delay_ns = parse(spec)
    sig = signature_of(orig)
    if name == "stock":
        return None
    if name == "contextvar":
        wrapper = _wrap_contextvar(orig, sig)
    elif name == "delay":
        wrapper = _intercept(orig, sig, name, _spin_ns(delay_ns))
    else:
        wrapper = _intercept(orig, sig, name)
    functools.update_wrapper(wrapper, orig)
    wrapper.__launchbench_mechanism__ = format_spec(name, delay_ns)
    return wrapper


# --------------------------------------------------------------------------
# Installing onto a dispatcher class
# --------------------------------------------------------------------------

class _State:
    target = None     # the class patched
    original = None   # its own ``call`` before we touched it (the very object)
    wrapper = None    # what we set as ``target.call``
    spec = "stock"


# The mechanisms that are one Interceptor in different modes.
_IN_PLACE = frozenset({"passthrough", "tls", "delay"})


def _default_target():
    if simulator_enabled():
        raise UserError(
            "the CUDA simulator's kernels never reach CUDADispatcher.call, so no mechanism can be "
            "installed on them; unset NUMBA_ENABLE_CUDASIM (or pass target= a stand-in dispatcher class)"
        )
    import_cuda()
    from numba.cuda.dispatcher import CUDADispatcher

    return CUDADispatcher


def install(spec: str, target=None) -> None:
    """Make ``spec`` the active mechanism on numba-cuda's CUDADispatcher (or ``target``).

    Replaces any active mechanism. ``stock`` leaves the class untouched.
    """
    name, delay_ns = parse(spec)
    target = _default_target() if target is None else target
    uninstall()
    if name == "stock":
        return
    original = target.__dict__.get("call")
    if original is None:
        raise UserError(f"{target.__qualname__} defines no call method of its own; pass the class that does")
    if name == "lctls":  # patches more than call: launchbench.workloads.capture.lctls writes and restores its own
        wrapper = lctls.install(lctls.targets_for(target))
        wrapper.__launchbench_mechanism__ = "lctls"
        _State.target, _State.original, _State.wrapper, _State.spec = target, original, wrapper, "lctls"
        return
    if name == "hoist-imports":  # swaps functions' code, writes no class: launchbench.workloads.hoist
        hoist.install()
        _State.target, _State.original, _State.wrapper, _State.spec = target, original, original, "hoist-imports"
        return
    wrapper = make_wrapper(spec, original)
    _State.target, _State.original, _State.wrapper = target, original, wrapper
    _State.spec = wrapper.__launchbench_mechanism__
    target.call = wrapper


def _switchable(target) -> bool:
    """Whether the installed wrapper is our Interceptor, still in place on *target*."""
    wrapper = _State.wrapper
    tls = _tls_module(required=False)
    return (tls is not None and isinstance(wrapper, tls.Interceptor) and _State.target is target
            and target.__dict__.get("call") is wrapper)


def switch(spec: str, target=None) -> bool:
    """Make ``spec`` active, writing the class only where it must; True if it wrote it.

    passthrough, tls and delay are one Interceptor: between them the installed
    one changes mode in place (``Interceptor.set_mode``), so the class, its
    type version tag and the launch path's specialized lookups stay as they
    are. Anything else (stock, contextvar, another target, nothing of ours
    installed) goes through ``install``. ``uninstall`` still restores the very
    original function.
    """
    name, delay_ns = parse(spec)
    target = _default_target() if target is None else target
    if name in _IN_PLACE and _switchable(target):
        canonical = format_spec(name, delay_ns)
        _State.wrapper.set_mode(name, spin_ns=_spin_ns(delay_ns) if name == "delay" else 0)
        _State.wrapper.__launchbench_mechanism__ = canonical  # the instance's dict, not the class's
        _State.spec = canonical
        return False
    if name == "stock" and _State.target is None:
        return False  # already stock: nothing to write
    install(spec, target)
    return True


def uninstall() -> None:
    """Restore the original ``call`` (the very same function object)."""
    if _State.spec == "lctls":
        lctls.uninstall()
    if _State.spec == "hoist-imports":
        hoist.uninstall()
    if _State.target is not None and _State.wrapper is not _State.original:
        _State.target.call = _State.original
    _State.target, _State.original, _State.wrapper, _State.spec = None, None, None, "stock"


def active() -> str:
    """The installed mechanism's canonical spec; "stock" when none."""
    return _State.spec


def details() -> list | None:
    """What the installed what-if changed, for the worker's set-up info: hoist-imports' record per
    function (``hoist.report``); None for the other mechanisms."""
    return hoist.report() if _State.spec == "hoist-imports" else None


@contextlib.contextmanager
def installed(spec: str, target=None):
    """``with installed("tls"): ...`` -- install for the block, then restore stock."""
    install(spec, target)
    try:
        yield
    finally:
        uninstall()
