"""The stages of a numba-cuda launch as a tree, for the paired breakdown (``launchbench breakdown --variant``).

``base_loops`` (the loops of the single-environment ``launchbench breakdown``)
times seven stages of ``cfg(*args)`` on their own; summed, they leave microseconds
of the launch unexplained (lab/README.md). The
rest of this module adds the loops that split that remainder and the
marshalling stage:

* **levels**: the real calls that contain other stages, each timed whole --
  ``full`` (``cfg(*args)``) contains ``configured_call`` and
  ``dispatcher_call`` (``k.call(...)``), which contains ``type_dispatch``,
  ``lc_bookkeeping``, ``dispatcher_frame`` and ``kernel_launch``
  (``_Kernel.launch``), which contains ``cufunc_lookup``, ``marshal_args``,
  ``launch_config``, ``driver_launch`` and ``launch_frame``. A level minus its
  children is the *rest* of that level: what its children cost more inside
  the real launch than alone. The old remainder is exactly the three frames
  plus the three rests.
* the **frames**, which no stage measured before: ``configured_call`` is
  upstream's own ``_LaunchConfiguration.__call__`` and ``dispatcher_frame``
  upstream's own ``CUDADispatcher.call``, each run on a stand-in whose
  callees are C no-ops (``"".format``); ``launch_frame`` replays
  ``_Kernel.launch``'s attribute reads and calls a Python function of its
  parameters (its module-global callees cannot be stood in for);
  ``marshal_frame`` is one such call per argument for ``_prepare_args``.
* **sub-stages**, per argument (part of a stage, not of the partition):
  ``typeof`` (the ``_numba_type_`` read the C dispatcher falls back to for a
  device array; Python scalars are typed in C), ``get_context``,
  ``param_pack`` (cuda.core's ``ParamHolder``: packing the marshalled values
  into the kernel-parameter buffer) and the marshalling operations of
  ``_Kernel._prepare_args``: ``marshal_extensions``, ``marshal_branch`` (the
  isinstance / ``==`` tests up to the argument's branch, in upstream's
  order), ``marshal_wrap`` (``wrap_arg``), ``marshal_to_device`` (containing
  ``marshal_imports``, the four function-level imports of ``to_device``, and
  ``marshal_view``, ``_to_strided_memory_view``), ``marshal_fields`` (size,
  itemsize, pointer, shape, strides of the view), ``marshal_convert`` (the
  ctypes value of a scalar) and ``marshal_pack`` (the appends to the
  kernel-argument list).
* **in situ**: ``X+launch`` runs stage X's body followed by the raw driver
  launch, each iteration; minus ``noop+launch`` it is what X costs when a
  driver call runs between two executions, as in a real launch (the driver
  evicts the interpreter's caches). If the rests are cache interaction, the
  in-situ costs account for them.

The sub-stage loops are generated from the kernel's own argument types
(``exec`` of straight-line code, like the kernels themselves), so each
iteration pays the operations and nothing else. numba-cuda is imported only
inside functions: the module stays import-light for the CLI.
"""
from __future__ import annotations

import inspect
import time

from . import argkinds
from .capture import lctls, mechanisms

#: The partition of ``full``: (level, its children). level - sum(children) is that level's rest.
TREE = (
    ("full", ("configured_call", "dispatcher_call")),
    ("dispatcher_call", ("type_dispatch", "lc_bookkeeping", "dispatcher_frame", "kernel_launch")),
    ("kernel_launch", ("cufunc_lookup", "marshal_args", "launch_config", "driver_launch", "launch_frame")),
)
LEVELS = tuple(parent for parent, _ in TREE)
#: The named work of a launch: these plus the three rests add up to ``full`` exactly.
LEAVES = ("configured_call", "type_dispatch", "lc_bookkeeping", "dispatcher_frame", "cufunc_lookup",
          "marshal_args", "launch_config", "driver_launch", "launch_frame")
#: Finer splits of a leaf, per argument; their rests are named work of that leaf (its frames, C code).
SUBTREE = (
    ("type_dispatch", ("typeof",)),
    ("cufunc_lookup", ("get_context",)),
    ("marshal_args", ("marshal_frame", "marshal_extensions", "marshal_branch", "marshal_wrap", "marshal_to_device",
                      "marshal_fields", "marshal_convert", "marshal_pack")),
    ("marshal_to_device", ("marshal_imports", "marshal_view")),
    ("driver_launch", ("param_pack",)),
)
SUBSTAGES = tuple(s for _, children in SUBTREE for s in children)
#: Stages timed in situ (followed by a raw driver launch every iteration).
INSITU = ("configured_call", "type_dispatch", "lc_bookkeeping", "dispatcher_frame", "cufunc_lookup", "marshal_args",
          "launch_config", "launch_frame")
#: Outside ``cfg(*args)``: building the configured launch.
OUTSIDE = ("configure", "full_with_configure")
#: Baselines: an empty loop (subtracted from every plain stage), the raw launch after a no-op body.
BASELINE = "loop"
INSITU_BASELINE = "noop+launch"
#: Rests that are no named work: the frame and in-situ effects of a level.
UNEXPLAINED = tuple(f"rest:{level}" for level in LEVELS)
#: Levels whose parts also run back to back in one loop, as the level runs them (``parts:L``),
#: and the same with one part left out (``parts:L-X``). In context, X costs ``parts:L - parts:L-X``
#: (``incontext:X``); ``L - parts:L`` is what the level costs beyond its parts (``rest:parts:L``),
#: and ``parts:L - (sum of the parts alone)`` what they cost more together than alone
#: (``interaction:L``): rest:L is exactly their sum. ``joint:L`` = parts:L minus the sum of the
#: in-context costs: 0 when the in-context costs add up to the level's parts.
PARTS_LEVELS = ("kernel_launch", "dispatcher_call", "full")


def parts_of(level: str) -> str:
    return f"parts:{level}"


def parts_without(level: str, child: str) -> str:
    return f"{parts_of(level)}-{child}"


def parts_children(level: str) -> tuple:
    return dict(TREE)[level]


def is_parts_stage(stage: str) -> bool:
    return stage.startswith("parts:")


#: 0.30's launch-config routing in ``CUDADispatcher.call`` for the compiled ``kernel``, as statements
#: (the lctls stage loop and the dispatcher_call parts loop run it inline).
LC_ROUTING_SRC = ("k._select_launch_config_dispatcher(cfg)\nk._update_launch_config_sensitivity(kernel, cfg)\n"
                  "for callback in cfg.pre_launch_callbacks: callback(kernel, cfg)")

#: What an unexplained part may cost at most before the breakdown calls it unsplit.
UNEXPLAINED_LIMIT_US = 0.5

NOTES = {
    "configured_call": "_LaunchConfiguration.__call__ itself (upstream's function on a stand-in whose "
                       "dispatcher.call is a C no-op): *args packing and attribute reads",
    "lc_bookkeeping": "absent before numba-cuda 0.30 (costs 0 there)",
    "dispatcher_frame": "CUDADispatcher.call itself: upstream's function run on a stand-in whose callees are "
                        "C no-ops (its specialized branch, which skips _cuda_call's keyword dict)",
    "launch_frame": "_Kernel.launch's own reads (debug, _codelibrary, argument_types, _prepare_args per "
                    "argument, cooperative) and the call of a 6-parameter Python function",
    "marshal_frame": "the Python call of _prepare_args, once per argument",
    "typeof": "per device array, the _numba_type_ read the C dispatcher falls back to; the failed "
              "fingerprint before it and overload resolution stay in type_dispatch's rest",
    "driver_launch": "cuda.core launch + cuLaunchKernel; param_pack is its ParamHolder (the "
                     "kernel-parameter buffer)",
    "rest:full": "cfg(*args) minus configured_call and dispatcher_call: what they cost more inside "
                 "the real launch than alone",
    "rest:dispatcher_call": "what CUDADispatcher.call's stages cost more inside the real launch than alone "
                            "(and a mechanism's wrapper)",
    "rest:kernel_launch": "what _Kernel.launch's stages cost more inside the real launch than alone",
    "insitu": "X+launch minus noop+launch: stage X with a driver launch between iterations, as in a real launch",
    "incontext": "parts:L minus parts:L-X: what part X costs among the other parts of its level L "
                 "(_Kernel.launch or CUDADispatcher.call), run back to back in one loop",
    "rest:parts": "a level minus its parts run back to back: what the level costs beyond them",
    "interaction": "a level's parts run back to back minus their sum alone: what they cost more together",
    "joint": "a level's parts run back to back minus the sum of their in-context costs: 0 when those add up",
}


def stage_names(insitu: bool = True) -> list:
    """Every stage the stages workload times, baselines first."""
    names = [BASELINE, *OUTSIDE, *LEVELS, *LEAVES, *SUBSTAGES]
    if insitu:
        names += [INSITU_BASELINE] + [f"{s}+launch" for s in INSITU]
    for level in PARTS_LEVELS:
        names += [parts_of(level)] + [parts_without(level, c) for c in parts_children(level)]
    out: list = []
    for name in names:
        if name not in out:
            out.append(name)
    return out


def baseline_of(stage: str) -> str:
    return INSITU_BASELINE if stage.endswith("+launch") else BASELINE


# ---------------------------------------------------------------- kernel arguments

# the kinds and their factories live in launchbench.workloads.argkinds (CuPy, torch, eager signatures)
ARG_KINDS = argkinds.KINDS
#: The scalar argument: a Python float, typed float64 (what ``k[g, b](x, alpha)`` passes).
SCALAR_VALUE = argkinds.SCALAR_VALUE
check_arg_kind = argkinds.check_kind
arg_is_array = argkinds.is_array


def make_args(nargs: int, kind: str = "array") -> list:
    """The kernel arguments of one arg count (device arrays need numba-cuda and a GPU or the simulator)."""
    return argkinds.make_args(nargs, kind)


# ---------------------------------------------------------------- breakdown's seven stages

def launch_path_style(call) -> str:
    """'launch_config' for 0.30+'s ``call(args, launch_config)``, 'griddim' for 0.29's.

    Gated on the signature, not the version string, so a development build
    between releases is handled by what it actually does.
    """
    params = list(inspect.signature(call).parameters)
    if params[:1] == ["self"]:
        params = params[1:]
    if params == ["args", "launch_config"]:
        return "launch_config"
    if params == ["args", "griddim", "blockdim", "stream", "sharedmem"]:
        return "griddim"
    raise ValueError(f"unrecognised CUDADispatcher.call signature {params}")


def base_loops(kernel_dispatcher, cfg, args):
    """Timed loops, one per stage of ``launchbench.workloads.breakdown`` (its seven, the empty loop and the two
    totals): each takes n and returns seconds. (style, loops)."""
    from numba import cuda
    from numba.cuda import dispatcher as nd
    from numba.cuda.cext import _dispatcher

    style = launch_path_style(nd.CUDADispatcher.call)
    k = kernel_dispatcher
    dispatch_kw = {nd._LAUNCH_CONFIG_KW: cfg} if style == "launch_config" else {}
    cuda_call = _dispatcher.Dispatcher._cuda_call
    compiled = cuda_call(k, *args, **dispatch_kw)
    stream, griddim, blockdim, sharedmem = cfg.stream, cfg.griddim, cfg.blockdim, cfg.sharedmem
    argtypes = compiled.argument_types
    prepare = compiled._prepare_args
    codelib = compiled._codelibrary
    cukernel = codelib.get_cufunc().kernel
    kernelargs: list = []
    for t, v in zip(argtypes, args):
        prepare(t, v, stream, [], kernelargs)
    LaunchConfig, launch = nd.LaunchConfig, nd.launch
    try:
        from numba.cuda._compat import CUDA_CORE_GE_1_0
    except ImportError:  # 0.29: cuda-core < 1.0 only
        CUDA_CORE_GE_1_0 = False
    coop_kw = "is_cooperative" if CUDA_CORE_GE_1_0 else "cooperative_launch"
    lc_kw = {"grid": griddim, "block": blockdim, "shmem_size": sharedmem, coop_kw: compiled.cooperative}
    config = LaunchConfig(**lc_kw)
    sync = cuda.synchronize
    clock = time.perf_counter
    loop = empty_loop()

    def configure(n):
        t0 = clock()
        for _ in range(n):
            k[1, 1]
        return clock() - t0

    def type_dispatch(n):
        t0 = clock()
        for _ in range(n):
            cuda_call(k, *args, **dispatch_kw)
        return clock() - t0

    def lc_bookkeeping(n):
        t0 = clock()
        for _ in range(n):
            prev = cfg._push_args(args)
            try:
                k._select_launch_config_dispatcher(cfg)
                k._update_launch_config_sensitivity(compiled, cfg)
                for callback in cfg.pre_launch_callbacks:
                    callback(compiled, cfg)
            finally:
                cfg._pop_args(prev)
        return clock() - t0

    def cufunc_lookup(n):
        t0 = clock()
        for _ in range(n):
            codelib.get_cufunc().kernel
        return clock() - t0

    def marshal_args(n):
        t0 = clock()
        for _ in range(n):
            retr: list = []
            kargs: list = []
            for t, v in zip(argtypes, args):
                prepare(t, v, stream, retr, kargs)
        return clock() - t0

    def launch_config(n):
        t0 = clock()
        for _ in range(n):
            LaunchConfig(**lc_kw)
        return clock() - t0

    def driver_launch(n):
        t0 = clock()
        for _ in range(n):
            launch(stream, config, cukernel, *kernelargs)
        sync()
        return clock() - t0

    def full(n):
        t0 = clock()
        for _ in range(n):
            cfg(*args)
        sync()
        return clock() - t0

    def full_with_configure(n):
        t0 = clock()
        for _ in range(n):
            k[1, 1](*args)
        sync()
        return clock() - t0

    loops = {
        "loop": loop,
        "configure": configure,
        "type_dispatch": type_dispatch,
        "cufunc_lookup": cufunc_lookup,
        "marshal_args": marshal_args,
        "launch_config": launch_config,
        "driver_launch": driver_launch,
        "full": full,
        "full_with_configure": full_with_configure,
    }
    if style == "launch_config":
        loops["lc_bookkeeping"] = lc_bookkeeping
    return style, loops


# ---------------------------------------------------------------- loops

def inline_loop(body_src: str, namespace: dict, sync: bool = False, name: str = "stage"):
    """``loop(n) -> seconds``: *body_src* (straight-line statements) *n* times, with one
    synchronize inside the timed region when *sync* (as every launching loop in launchbench)."""
    body = "\n".join("        " + line for line in body_src.splitlines() if line.strip()) or "        pass"
    name = "_stage_" + "".join(c if c.isalnum() else "_" for c in name)  # never a name the body uses
    src = (f"def {name}(n):\n"
           f"    t0 = _clock()\n"
           f"    for _ in range(n):\n{body}\n"
           + ("    _sync()\n" if sync else "")
           + "    return _clock() - t0\n")
    ns = dict(namespace)
    ns.setdefault("_clock", time.perf_counter)
    exec(compile(src, f"<launchbench stage {name}>", "exec"), ns)
    return ns[name]


def _inline_body(body_src: str, namespace: dict):
    """A no-argument function running *body_src* once (an in-situ body)."""
    body = "\n".join("    " + line for line in body_src.splitlines() if line.strip()) or "    pass"
    ns = dict(namespace)
    exec(compile(f"def _body():\n{body}\n", "<launchbench stage body>", "exec"), ns)
    return ns["_body"]


def _unwrapped(call):
    """The function a mechanism wraps (``__wrapped__``), or *call* itself."""
    return getattr(call, "__wrapped__", call)


def empty_loop():
    """``loop(n)``: the bare timed loop, the baseline every stage's time is taken over."""
    clock = time.perf_counter

    def loop(n):
        t0 = clock()
        for _ in range(n):
            pass
        return clock() - t0

    return loop


def insitu_loop(body, launch, sync, name: str = "stage"):
    """``loop(n)``: body() then launch() every iteration, one synchronize at the end."""
    clock = time.perf_counter

    def loop(n):
        t0 = clock()
        for _ in range(n):
            body()
            launch()
        sync()
        return clock() - t0

    loop.__name__ = name
    return loop


class _Hollow:
    """A stand-in configured launch: upstream's ``__call__`` runs on it and calls a C no-op."""

    class _Target:
        call = staticmethod("".format)  # accepts any arguments, returns at once

    def __init__(self, griddim, blockdim, stream, sharedmem):
        self.dispatcher = self._Target()
        self.griddim, self.blockdim, self.stream, self.sharedmem = griddim, blockdim, stream, sharedmem


class _HollowKernel:
    launch = staticmethod("".format)


class _HollowDispatcher:
    """Runs upstream's ``CUDADispatcher.call`` with plain attributes where the class has
    properties and C no-ops for every callee: what remains is the function's own frame."""

    specialized = True

    def __init__(self, launch_config):
        self.overloads = {None: _HollowKernel()}
        self._select_launch_config_dispatcher = {launch_config: self}.get  # returns self, in C
        self._update_launch_config_sensitivity = "".format


class _HollowLaunchConfig(_Hollow):
    """0.30's configured launch as ``CUDADispatcher.call`` reads it, with C no-op push and pop."""

    def __init__(self, griddim, blockdim, stream, sharedmem):
        super().__init__(griddim, blockdim, stream, sharedmem)
        self._push_args = self._pop_args = "".format
        self.pre_launch_callbacks = []


def _noop_prepare(self, ty, val, stream, retr, kernelargs):
    """A Python method frame with _prepare_args' parameters."""


def _noop_launch(self, args, griddim, blockdim, stream=0, sharedmem=0):
    """A Python method frame with _Kernel.launch's parameters."""


def _branch_tests(ty, types) -> list:
    """The tests ``_Kernel._prepare_args`` makes (0.29 and 0.30 alike, in its order) before it
    reaches *ty*'s branch, as source fragments over the names A, P, I, F16, F64, F32, B."""
    tests = [("isinstance", "A", isinstance(ty, types.Array)),
             ("isinstance", "P", isinstance(ty, types.CPointer)),
             ("isinstance", "I", isinstance(ty, types.Integer)),
             ("eq", "F16", ty == types.float16), ("eq", "F64", ty == types.float64),
             ("eq", "F32", ty == types.float32), ("eq", "B", ty == types.boolean)]
    out = []
    for kind, name, hit in tests:
        out.append((kind, name))
        if hit:
            return out
    return out  # other types: every test above, then more (not modelled)


def marshal_parts(argtypes, args, stream, types):
    """Per-argument marshalling operations as straight-line source, for generated loops."""
    import ctypes

    ns = {"A": types.Array, "P": types.CPointer, "I": types.Integer, "F16": types.float16,
          "F64": types.float64, "F32": types.float32, "B": types.boolean, "ctypes": ctypes,
          "c_double": ctypes.c_double, "c_float": ctypes.c_float, "stream": stream}
    branch, wrap, to_device, imports, view, fields, convert, pack = ([] for _ in range(8))
    for i, (ty, val) in enumerate(zip(argtypes, args)):
        ns[f"t{i}"], ns[f"v{i}"] = ty, val
        for kind, name in _branch_tests(ty, types):
            branch.append(f"isinstance(t{i}, {name})" if kind == "isinstance" else f"t{i} == {name}")
        if isinstance(ty, types.Array):
            from numba.cuda.args import wrap_arg
            from numba.cuda.cudadrv.devicearray import _to_strided_memory_view

            ns["wrap_arg"], ns["_to_smv"] = wrap_arg, _to_strided_memory_view
            ns[f"w{i}"] = wrap_arg(val)
            devary = ns[f"w{i}"].to_device([], stream)
            ns[f"d{i}"] = devary
            wrap.append(f"wrap_arg(v{i})")
            to_device.append(f"w{i}.to_device(retr, stream)")
            imports += ["from .cudadrv.devicearray import _to_strided_memory_view",
                        "from .cudadrv.devicearray import _make_strided_memory_view",
                        "from .cudadrv.driver import driver", "from .cudadrv import devices"]
            view.append(f"_to_smv(v{i}, copy=True, stream=stream)")
            fields.append(f"d{i}.size; d{i}.dtype.itemsize; d{i}.ptr; d{i}.shape; d{i}._layout.strides_in_bytes")
            ns[f"p{i}"] = (devary.size, devary.dtype.itemsize, devary.ptr, tuple(devary.shape),
                           tuple(devary._layout.strides_in_bytes or ()))
            pack.append(f"ka.append(0); ka.append(0); ka.append(p{i}[0]); ka.append(p{i}[1]); "
                        f"ka.append(p{i}[2]); ka.extend(p{i}[3]); ka.extend(p{i}[4])")
        else:
            if isinstance(ty, types.Integer):
                convert.append(f'getattr(ctypes, "c_%s" % t{i})(v{i})')
            elif ty == types.float64:
                convert.append(f"c_double(v{i})")
            elif ty == types.float32:
                convert.append(f"c_float(v{i})")
            ns[f"c{i}"] = val
            pack.append(f"ka.append(c{i})")
    return ns, {"marshal_branch": branch, "marshal_wrap": wrap, "marshal_to_device": to_device,
                "marshal_imports": imports, "marshal_view": view, "marshal_fields": fields,
                "marshal_convert": convert, "marshal_pack": pack}


def more_loops(k, cfg, args, style: str) -> dict:
    """The loops this module adds to ``base_loops``' (same objects, same kernel)."""
    from numba import cuda
    from numba.cuda import dispatcher as nd
    from numba.cuda.cext import _dispatcher
    from numba.cuda.cudadrv import devices

    # under lctls the capture is launchbench's: no keyword, no args swap (launchbench.workloads.capture.lctls)
    own_capture = style == "launch_config" and mechanisms.active() != "lctls"
    kw_name = getattr(nd, "_LAUNCH_CONFIG_KW", None)
    dispatch_kw = {kw_name: cfg} if own_capture else {}
    cuda_call = _dispatcher.Dispatcher._cuda_call
    compiled = cuda_call(k, *args, **dispatch_kw)
    stream, griddim, blockdim, sharedmem = cfg.stream, cfg.griddim, cfg.blockdim, cfg.sharedmem
    argtypes = compiled.argument_types
    prepare = compiled._prepare_args
    kernelargs: list = []
    for t, v in zip(argtypes, args):
        prepare(t, v, stream, [], kernelargs)
    codelib = compiled._codelibrary
    cukernel = codelib.get_cufunc().kernel
    try:
        from numba.cuda._compat import CUDA_CORE_GE_1_0
    except ImportError:  # 0.29: cuda-core < 1.0 only
        CUDA_CORE_GE_1_0 = False
    lc_kw = {"grid": griddim, "block": blockdim, "shmem_size": sharedmem,
             ("is_cooperative" if CUDA_CORE_GE_1_0 else "cooperative_launch"): compiled.cooperative}
    LaunchConfig, launch = nd.LaunchConfig, nd.launch
    config = LaunchConfig(**lc_kw)
    sync = cuda.synchronize
    hollow = _Hollow(griddim, blockdim, stream, sharedmem)
    ns = {"k": k, "cfg": cfg, "args": tuple(args), "compiled": compiled, "griddim": griddim,
          "blockdim": blockdim, "stream": stream, "sharedmem": sharedmem, "_sync": sync,
          "lc_call": type(cfg).__call__, "hollow": hollow, "call": k.call, "kl": compiled.launch,
          "get_context": devices.get_context, "ParamHolder": param_holder(launch),
          "kernelargs": list(kernelargs), "extensions_of": compiled}
    call_src = "call(args, cfg)" if style == "launch_config" else "call(args, griddim, blockdim, stream, sharedmem)"
    loops = {
        "dispatcher_call": inline_loop(call_src, ns, sync=True, name="dispatcher_call"),
        "kernel_launch": inline_loop("kl(args, griddim, blockdim, stream, sharedmem)", ns, sync=True,
                                      name="kernel_launch"),
        "configured_call": inline_loop("lc_call(hollow, *args)", ns, name="configured_call"),
        "get_context": inline_loop("get_context()", ns, name="get_context"),
        "marshal_extensions": inline_loop(
            "\n".join("for extension in reversed(extensions_of.extensions): pass" for _ in args) or "pass",
            ns, name="marshal_extensions"),
    }
    # the frames: CUDADispatcher.call hollowed (upstream's function, or lctls' body, on a stand-in);
    # _Kernel.launch's reads and call; one _prepare_args call per argument
    frame_fn = lctls.body() if mechanisms.active() == "lctls" else _unwrapped(nd.CUDADispatcher.__dict__["call"])
    hcfg = _HollowLaunchConfig(griddim, blockdim, stream, sharedmem)
    ns.update(frame_fn=frame_fn, hdisp=_HollowDispatcher(hcfg), hcfg=hcfg, noop_prepare=_noop_prepare,
              noop_launch=_noop_launch, CUDA_CORE_GE_1_0=CUDA_CORE_GE_1_0)
    frame_src = ("frame_fn(hdisp, args, hcfg)" if style == "launch_config"
                 else "frame_fn(hdisp, args, griddim, blockdim, stream, sharedmem)")
    launch_glue = ("noop_launch(compiled, args, griddim, blockdim, stream, sharedmem)\n"
                   "compiled._codelibrary\ncompiled.debug\ncompiled.argument_types\n"
                   + "".join("compiled._prepare_args\n" for _ in args)
                   + "CUDA_CORE_GE_1_0\ncompiled.cooperative\ncompiled.debug")
    loops["dispatcher_frame"] = inline_loop(frame_src, ns, name="dispatcher_frame")
    loops["launch_frame"] = inline_loop(launch_glue, ns, name="launch_frame")
    loops["marshal_frame"] = inline_loop(
        "\n".join(f"noop_prepare(compiled, argtypes[{i}], args[{i}], stream, retr, ka)" for i in range(len(args)))
        or "pass", dict(ns, argtypes=tuple(argtypes), retr=[], ka=[]), name="marshal_frame")
    bodies_extra = {
        "dispatcher_frame": (lambda: frame_fn(ns["hdisp"], args, hcfg)) if style == "launch_config"
        else (lambda: frame_fn(ns["hdisp"], args, griddim, blockdim, stream, sharedmem)),
        "launch_frame": _inline_body(launch_glue, ns),
    }
    typed = [i for i, v in enumerate(args) if hasattr(type(v), "_numba_type_")]
    for i in typed:
        ns[f"v{i}"] = args[i]
    # the C fallback's HasAttr + GetAttr of _numba_type_, then its _code
    loops["typeof"] = inline_loop("\n".join(f'hasattr(v{i}, "_numba_type_"); v{i}._numba_type_._code'
                                             for i in typed) or "pass", ns, name="typeof")
    if ns["ParamHolder"] is not None:
        loops["param_pack"] = inline_loop("ParamHolder(kernelargs)", ns, name="param_pack")
    mns, parts = marshal_parts(argtypes, args, stream, nd.types)  # the types _prepare_args tests against
    import numba.cuda.args as args_module  # its imports resolve against this package, spec and all

    mns.update(_sync=sync, retr=[], ka=[], __package__=args_module.__package__, __name__=args_module.__name__,
               __spec__=args_module.__spec__)
    for stage, lines in parts.items():
        body = "\n".join(lines)
        if stage in ("marshal_to_device", "marshal_pack"):
            body = ("retr = []\n" if stage == "marshal_to_device" else "ka = []\n") + body
        loops[stage] = inline_loop(body, mns, name=stage)

    # in situ: each body, then the raw driver launch
    def raw_launch():
        launch(stream, config, cukernel, *kernelargs)

    def marshal_body():
        retr, kargs = [], []
        for t, v in zip(argtypes, args):
            prepare(t, v, stream, retr, kargs)

    bodies = {
        **bodies_extra,
        "noop": lambda: None,
        "configured_call": lambda: type(cfg).__call__(hollow, *args),
        "type_dispatch": lambda: cuda_call(k, *args, **dispatch_kw),
        "cufunc_lookup": lambda: codelib.get_cufunc().kernel,
        "marshal_args": marshal_body,
        "launch_config": lambda: LaunchConfig(**lc_kw),
    }
    if own_capture:
        def lc_body():
            prev = cfg._push_args(args)
            try:
                k._select_launch_config_dispatcher(cfg)
                k._update_launch_config_sensitivity(compiled, cfg)
                for callback in cfg.pre_launch_callbacks:
                    callback(compiled, cfg)
            finally:
                cfg._pop_args(prev)

        bodies["lc_bookkeeping"] = lc_body
    elif style == "launch_config":  # lctls: the same routing; its push and pop are the Interceptor's, in C
        def lc_body():
            k._select_launch_config_dispatcher(cfg)
            k._update_launch_config_sensitivity(compiled, cfg)
            for callback in cfg.pre_launch_callbacks:
                callback(compiled, cfg)

        bodies["lc_bookkeeping"] = lc_body
        ns["cuda_call"] = cuda_call
        loops["lc_bookkeeping"] = inline_loop(LC_ROUTING_SRC, dict(ns, kernel=compiled), name="lc_bookkeeping")
        loops["type_dispatch"] = inline_loop("cuda_call(k, *args)", ns, name="type_dispatch")
    for name, body in bodies.items():
        loops[f"{name}+launch"] = insitu_loop(body, raw_launch, sync, name=f"{name}_launch")
    pns = dict(ns, codelib=codelib, argtypes=tuple(argtypes), prepare=prepare, LaunchConfig=LaunchConfig,
               lc_kw=lc_kw, launch=launch, cukernel=cukernel, config=config, kernelargs=tuple(kernelargs))
    part_src = {  # _Kernel.launch's parts in its order, each as its stage loop runs it alone
        "launch_frame": launch_glue,
        "cufunc_lookup": "kern = codelib.get_cufunc().kernel",
        "marshal_args": "retr = []\nkargs = []\nfor t, v in zip(argtypes, args): prepare(t, v, stream, retr, kargs)",
        "launch_config": "conf = LaunchConfig(**lc_kw)",
        "driver_launch": "launch(stream, conf, kern, *kargs)",
    }
    left_out = {"cufunc_lookup": "kern = cukernel", "marshal_args": "kargs = kernelargs",
                "launch_config": "conf = config", "launch_frame": "", "driver_launch": ""}
    loops.update(parts_loops("kernel_launch", part_src, left_out, pns, sync=True))
    # CUDADispatcher.call's parts: its frame (upstream's function on the stand-in), type dispatch,
    # the launch-config bookkeeping (0.30; with the capture's push and pop unless lctls does them),
    # then the kernel's launch
    lc_src = None
    if style == "launch_config":
        lc_src = (f"prev = cfg._push_args(args)\n{LC_ROUTING_SRC}\ncfg._pop_args(prev)" if own_capture
                  else LC_ROUTING_SRC)
    dns = dict(ns, cuda_call=cuda_call, dispatch_kw=dispatch_kw)
    call_parts = {
        "dispatcher_frame": frame_src,
        "type_dispatch": "kernel = cuda_call(k, *args, **dispatch_kw)" if dispatch_kw else "kernel = cuda_call(k, *args)",
        **({"lc_bookkeeping": lc_src} if lc_src else {}),
        "kernel_launch": "kernel.launch(args, griddim, blockdim, stream, sharedmem)",
    }
    loops.update(parts_loops("dispatcher_call", call_parts, {"type_dispatch": "kernel = compiled"}, dns, sync=True))
    # cfg(*args)'s two parts: _LaunchConfiguration.__call__ on its stand-in, then the dispatcher's call
    loops.update(parts_loops("full", {"configured_call": "lc_call(hollow, *args)", "dispatcher_call": call_src},
                             {}, ns, sync=True))
    return loops


def parts_loops(level: str, part_src: dict, left_out: dict, namespace: dict, sync: bool) -> dict:
    """``parts:L`` and each ``parts:L-X`` of *level* L as inline loops: *part_src*'s statements
    back to back; a left-out part's values come from *left_out*'s statements (precomputed
    objects), so the rest still runs as it would. A part this numba-cuda lacks (0.29's
    lc_bookkeeping) leaves nothing out: its ``parts:L-X`` is ``parts:L`` itself."""
    kids = parts_children(level)
    order = [c for c in part_src if c in kids]
    whole = parts_of(level)
    loops = {whole: inline_loop("\n".join(part_src[c] for c in order), namespace, sync=sync, name=whole)}
    for skip in kids:
        if skip not in order:
            loops[parts_without(level, skip)] = loops[whole]
            continue
        src = "\n".join(left_out.get(c, "") if c == skip else part_src[c] for c in order)
        loops[parts_without(level, skip)] = inline_loop(src, namespace, sync=sync, name=parts_without(level, skip))
    return loops


def param_holder(launch):
    """cuda.core's ``ParamHolder`` -- what ``launch`` packs the kernel arguments with -- or None
    where this cuda.core keeps it elsewhere."""
    import importlib

    module = getattr(launch, "__module__", None) or ""
    for candidate in (module.rsplit(".", 1)[0] + "._kernel_arg_handler", "cuda.core._kernel_arg_handler",
                      "cuda.core.experimental._kernel_arg_handler"):
        try:
            return importlib.import_module(candidate).ParamHolder
        except (ImportError, AttributeError, ValueError):
            continue
    return None


def worker_loops(kernel, args) -> tuple:
    """(style, loops) for one kernel: ``base_loops``' plus ``more_loops``."""
    cfg = kernel[1, 1]
    style, loops = base_loops(kernel, cfg, args)
    loops.update(more_loops(kernel, cfg, args, style))
    return style, loops
