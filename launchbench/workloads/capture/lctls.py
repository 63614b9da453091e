"""``lctls``: what numba-cuda 0.30's launch would cost with launchbench's capture instead of its own.

On 0.30.x the launch-config capture is two C thread-local slots written from
Python: ``CUDADispatcher.call`` swaps the launch args in and out
(``_LaunchConfiguration._push_args`` / ``_pop_args``, two Python method calls
per launch) and hands the configured launch to ``_cuda_call`` as a keyword
(a dict built per launch), which sets the config slot while a launch-triggered
compile runs. ``lctls`` replaces both with ``launchbench.workloads._tls``: the C
``Interceptor`` (mode tls) pushes ``(launch_config, args)`` onto its
per-thread stack around a body that routes the launch as 0.30 does (LC-S
dispatcher selection, type dispatch -- without the keyword --, the sensitivity
update, the pre-launch callbacks, ``kernel.launch``), and numba-cuda's readers
are redirected to that stack:

- ``numba.cuda.launchconfig.current_launch_config()`` (and so
  ``ensure_current_launch_config``, ``mark_launch_config_sensitive``, the
  compiler's LC-S metadata and the cache keys): the innermost launch's config
  while that launch's compile runs on this thread, None otherwise -- not in
  callbacks, not in ``kernel.launch``, not outside launches -- as upstream;
- ``launchconfig.capture_compile_config``: records what a launch-triggered
  compile sees, as upstream;
- ``_LaunchConfiguration.args``: the innermost in-flight launch's args on
  this thread, None outside launches, as upstream.

"While that launch's compile runs" is marked by a wrapper of
``CUDADispatcher._compile_for_args`` (what the C dispatcher calls to compile),
which records the tls depth it runs at: only compiles pay for it, launches do
not. One difference remains: a launch made *inside* a launch-triggered compile
sees the outer config outside its own compile upstream, None here.

``install`` writes five attributes and ``uninstall`` puts the very same
objects back. The targets are parameters so that CPU tests can run the
semantics on stand-ins; by default they are numba-cuda's.
"""
from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass
from functools import wraps
from types import MethodType

from ...base.device import import_cuda
from ...base.errors import UserError
from .intercept import SIGNATURE_030, signature_of, tls_module

REQUIRED = ("_select_launch_config_dispatcher", "_update_launch_config_sensitivity", "_compile_for_args")
_MISSING = object()


@dataclass
class Targets:
    """What lctls patches: the dispatcher class, the configured-launch class, the launchconfig
    module, and the C type dispatch the body calls (``_dispatcher.Dispatcher._cuda_call``)."""

    dispatcher: type
    launch_configuration: type
    launchconfig: object
    cuda_call: object


def numba_targets() -> Targets:
    import_cuda()
    try:
        from numba.cuda import launchconfig
        from numba.cuda.cext import _dispatcher
        from numba.cuda.dispatcher import CUDADispatcher, _LaunchConfiguration
    except ImportError as exc:
        raise UserError(f"mechanism lctls needs numba-cuda 0.30 (its launch-config path): {exc}") from None
    return Targets(CUDADispatcher, _LaunchConfiguration, launchconfig, _dispatcher.Dispatcher._cuda_call)


def targets_for(dispatcher) -> Targets:
    """numba-cuda's targets, checked to be the class *dispatcher* (lctls patches numba-cuda's
    launch-config module and configured-launch class alongside its dispatcher)."""
    t = numba_targets()
    if dispatcher is not None and dispatcher is not t.dispatcher:
        raise UserError(f"mechanism lctls installs on numba-cuda's CUDADispatcher, not {dispatcher.__qualname__} "
                        "(it needs 0.30's launch-config path; no stand-in or simulator has one)")
    return t


def _tls():
    return tls_module()


# ---------------------------------------------------------------- compile marks

_marks = threading.local()


def _compile_depths() -> list:
    stack = getattr(_marks, "depths", None)
    if stack is None:
        stack = _marks.depths = []
    return stack


@contextlib.contextmanager
def compiling():
    """Mark a launch-triggered compile of the innermost in-flight launch on this thread."""
    tls = _tls()
    stack = _compile_depths()
    stack.append(tls.depth())
    try:
        yield
    finally:
        stack.pop()


def make_current_launch_config(upstream):
    """``current_launch_config()`` under lctls: the config being compiled for, else upstream's
    own slot (None, unless something passes the keyword to ``_cuda_call`` itself)."""
    tls = _tls()

    def current_launch_config():
        stack = getattr(_marks, "depths", None)
        if stack and stack[-1] == tls.depth() and stack[-1] > 0:
            return tls.current()
        return upstream()

    current_launch_config.__doc__ = upstream.__doc__
    current_launch_config.__launchbench_mechanism__ = "lctls"
    return current_launch_config


def make_compile_for_args(original):
    @wraps(original)
    def _compile_for_args(self, *args, **kws):
        with compiling():
            return original(self, *args, **kws)

    _compile_for_args.__launchbench_mechanism__ = "lctls"
    return _compile_for_args


def make_capture_compile_config(launchconfig):
    """``capture_compile_config`` under lctls: records, inside the compile mark, what the compile sees."""

    @contextlib.contextmanager
    def capture_compile_config(dispatcher):
        if dispatcher is None:
            raise TypeError("dispatcher is required")
        record = {"config": None}
        own = dispatcher.__dict__.get("_compile_for_args", _MISSING)
        original = dispatcher._compile_for_args

        def wrapped(self, *args, **kws):
            with compiling():
                record["config"] = launchconfig.current_launch_config()
            return original(*args, **kws)

        dispatcher._compile_for_args = MethodType(wrapped, dispatcher)
        try:
            yield record
        finally:
            if own is _MISSING:
                del dispatcher._compile_for_args
            else:
                dispatcher._compile_for_args = own

    capture_compile_config.__launchbench_mechanism__ = "lctls"
    return capture_compile_config


def _args_property():
    tls = _tls()

    def args(self):
        """The args of the launch in flight on this thread (None outside launches)."""
        return tls.current_args()

    return property(args)


# ---------------------------------------------------------------- the launch

def make_body(cuda_call):
    """``call(self, args, launch_config)`` without a capture of its own: 0.30's routing, with the
    type dispatch called without the launch-config keyword (the Interceptor has captured it)."""

    def call(self, args, launch_config):
        dispatcher = self._select_launch_config_dispatcher(launch_config)
        if dispatcher is not self:
            return dispatcher.call(args, launch_config)
        if self.specialized:
            kernel = next(iter(self.overloads.values()))
        else:
            kernel = cuda_call(self, *args)
        self._update_launch_config_sensitivity(kernel, launch_config)
        for callback in launch_config.pre_launch_callbacks:
            callback(kernel, launch_config)
        kernel.launch(args, launch_config.griddim, launch_config.blockdim, launch_config.stream,
                      launch_config.sharedmem)

    return call


def make_call(original, cuda_call):
    """The Interceptor that replaces ``CUDADispatcher.call`` (*original*, kept as __wrapped__)."""
    if signature_of(original) != SIGNATURE_030:
        raise UserError("mechanism lctls needs numba-cuda >= 0.30 (call(self, args, launch_config)); "
                        "this numba-cuda launches with call(self, args, griddim, ...), which has no "
                        "launch-config path to capture")
    body = make_body(cuda_call)
    _Saved.body = body
    return _tls().Interceptor(body, "tls", signature="0.30")


# ---------------------------------------------------------------- install / uninstall

class _Saved:
    targets: Targets | None = None
    originals: dict = {}
    body = None  # the function the installed Interceptor calls


def body():
    """The installed lctls call body (what ``CUDADispatcher.call`` runs inside the Interceptor)."""
    if _Saved.body is None:
        raise UserError("mechanism lctls is not installed")
    return _Saved.body


def _attrs(t: Targets) -> list:
    """(owner, name) of everything lctls writes, ``call`` first."""
    return [(t.dispatcher, "call"), (t.dispatcher, "_compile_for_args"), (t.launch_configuration, "args"),
            (t.launchconfig, "current_launch_config"), (t.launchconfig, "capture_compile_config")]


def _own(owner, name):
    d = owner.__dict__ if isinstance(owner, type) else vars(owner)
    return d.get(name, _MISSING)


def install(targets: Targets | None = None):
    """Patch *targets* (default numba-cuda's); returns the new ``call``. Idempotent per process:
    a second install first restores the first."""
    uninstall()
    t = targets or numba_targets()
    missing = [m for m in REQUIRED if not hasattr(t.dispatcher, m)]
    if missing or not hasattr(t.launchconfig, "current_launch_config"):
        raise UserError(f"mechanism lctls: {t.dispatcher.__qualname__} lacks {', '.join(missing) or 'launchconfig'}; "
                        "it needs numba-cuda 0.30's launch-config path")
    originals = {(id(o), n): (o, n, _own(o, n)) for o, n in _attrs(t)}
    original_call = _own(t.dispatcher, "call")
    if original_call is _MISSING:
        raise UserError(f"{t.dispatcher.__qualname__} defines no call method of its own")
    new = {
        "call": make_call(original_call, t.cuda_call),
        "_compile_for_args": make_compile_for_args(getattr(t.dispatcher, "_compile_for_args")),
        "args": _args_property(),
        "current_launch_config": make_current_launch_config(t.launchconfig.current_launch_config),
        "capture_compile_config": make_capture_compile_config(t.launchconfig),
    }
    import functools

    functools.update_wrapper(new["call"], original_call)
    _Saved.targets, _Saved.originals = t, originals
    for owner, name in _attrs(t):
        setattr(owner, name, new[name])
    return new["call"]


def uninstall() -> None:
    """Put back exactly what install replaced (the same objects; attributes it added, removed)."""
    if _Saved.targets is None:
        return
    for owner, name, value in _Saved.originals.values():
        if value is _MISSING:
            if _own(owner, name) is not _MISSING:
                delattr(owner, name)
        else:
            setattr(owner, name, value)
    _Saved.targets, _Saved.originals, _Saved.body = None, {}, None


def installed() -> bool:
    return _Saved.targets is not None
