"""Argument kinds (arrays, floats, CuPy, torch), eager signatures, many arguments and
the per-argument slope with its interval. CuPy and torch are replaced by stand-in modules (or
made unimportable) with monkeypatch, so these run on any CPU machine."""
import json
import os
import random
import subprocess
import sys
import types

import pytest

from launchbench import cli
from launchbench.base.errors import UserError
from launchbench.commands import common_args
from launchbench.engine import analysis, stats
from launchbench.output import argkinds as summary_mod
from launchbench.workloads import argkinds, stages

# ---------------------------------------------------------------- kinds, signatures, counts

def test_signature_matches_the_kind_of_each_argument():
    assert argkinds.signature(0) == "void()"
    assert argkinds.signature(2, "array") == "void(float32[::1], float32[::1])"
    assert argkinds.signature(3, "mixed") == "void(float32[::1], float64, float32[::1])"
    assert argkinds.signature(2, "scalar") == "void(float64, float64)"
    assert argkinds.signature(1, "cupy") == argkinds.signature(1, "torch") == "void(float32[::1])"


def test_kind_dispatch_and_count_errors_are_one_line_user_errors():
    with pytest.raises(UserError, match="--arg-kind 'tuple': use one of array, scalar, mixed, cupy, torch"):
        argkinds.check_kind("tuple")
    with pytest.raises(UserError, match="--dispatch 'later'"):
        argkinds.check_dispatch("later")
    assert stages.ARG_KINDS == argkinds.KINDS  # breakdown and compare share one list


class FakeCuda:
    """Records what cuda.jit was asked for; to_device returns a tagged tuple."""

    def __init__(self):
        self.jitted = []

    def jit(self, first):
        if isinstance(first, str):
            return lambda func: self.jitted.append(("eager", first, func.__name__)) or ("kernel", first)
        self.jitted.append(("lazy", None, first.__name__))
        return ("kernel", None)

    def to_device(self, array):
        return ("device", array.dtype.name, array.shape)


def test_build_kernel_lazy_and_eager():
    cuda = FakeCuda()
    argkinds.build_kernel(cuda, 26, "array", "lazy")
    argkinds.build_kernel(cuda, 2, "mixed", "eager")
    assert cuda.jitted == [("lazy", None, "k"), ("eager", "void(float32[::1], float64)", "k")]
    with pytest.raises(UserError, match="0..32"):
        argkinds.build_kernel(cuda, 33)


def test_an_all_scalar_kernel_takes_up_to_256_arguments_the_others_32():
    """256 float64 parameters are 2 KiB of CUDA's 4 KiB (numba-cuda-mlir's ubench row); 256 arrays
    (56 B each in numba-cuda) would not fit, so a kernel with any array stays at 32."""
    cuda = FakeCuda()
    argkinds.build_kernel(cuda, 256, "scalar", "eager")
    assert cuda.jitted[-1][1] == "void(" + ", ".join(["float64"] * 256) + ")"
    assert [argkinds.max_args(k) for k in ("scalar", "array", "mixed", "cupy", "torch", None)] == [256] + [32] * 5
    for kind, n in (("scalar", 257), ("mixed", 33), ("cupy", 33)):
        with pytest.raises(UserError, match=f"0..{argkinds.max_args(kind)} arguments here, not {n}"):
            argkinds.build_kernel(cuda, n, kind)


def test_numba_kinds_make_device_arrays_and_floats():
    cuda = FakeCuda()
    assert argkinds.make_args(3, "mixed", cuda) == [("device", "float32", (1,)), 1.5, ("device", "float32", (1,))]
    assert argkinds.make_args(2, "scalar", cuda) == [1.5, 1.5]
    assert argkinds.make_args(0, "array", cuda) == []


def _stand_in(name, calls):
    mod = types.ModuleType(name)
    mod.float32 = "f4"
    if name == "cupy":
        mod.zeros = lambda n, dtype: calls.append((name, n, dtype, None)) or (name, n)
    else:
        mod.zeros = lambda n, dtype, device: calls.append((name, n, dtype, device)) or (name, n)
    return mod


@pytest.mark.parametrize("kind,device", [("cupy", None), ("torch", "cuda")])
def test_cupy_and_torch_arguments_come_from_their_packages(monkeypatch, kind, device):
    calls = []
    monkeypatch.setitem(sys.modules, kind, _stand_in(kind, calls))
    assert argkinds.available(kind)
    assert argkinds.make_args(2, kind) == [(kind, 1), (kind, 1)]
    assert calls == [(kind, 1, "f4", device)] * 2


@pytest.mark.parametrize("kind,package", [("cupy", "cupy-cuda13x"), ("torch", "torch")])
def test_missing_package_is_a_one_line_error_naming_it(monkeypatch, kind, package):
    monkeypatch.setitem(sys.modules, kind, None)  # import raises ImportError
    assert not argkinds.available(kind)
    with pytest.raises(argkinds.ArgKindUnavailable) as info:
        argkinds.make_args(1, kind, FakeCuda())
    msg = str(info.value)
    assert "\n" not in msg and f"needs {kind}" in msg and f"install {package}" in msg
    assert isinstance(info.value, UserError)


def test_array_kind_needs_no_cupy_or_torch(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)
    monkeypatch.setitem(sys.modules, "torch", None)
    assert argkinds.make_args(1, "array", FakeCuda()) == [("device", "float32", (1,))]


def test_simulator_kernels_of_every_numba_kind_launch():
    """The real factories and both dispatches under numba-cuda's simulator (a subprocess: the
    simulator must be chosen before numba.cuda is imported)."""
    code = (
        "from launchbench.workloads import argkinds\n"
        "from launchbench.base import cudamod\n"
        "cuda = cudamod.import_cuda()\n"
        "for kind in ('array', 'scalar', 'mixed'):\n"
        "    for dispatch in ('lazy', 'eager'):\n"
        "        for n in (0, 3, 26):\n"
        "            k = argkinds.build_kernel(cuda, n, kind, dispatch)\n"
        "            k[1, 1](*argkinds.make_args(n, kind, cuda))\n"
        "print('ok')\n")
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-2000:]


# ---------------------------------------------------------------- options and plumbing

def test_options_reach_the_worker_setup():
    p = cli.build_parser()
    a = p.parse_args(["compare", "--arg-kind", "torch", "--dispatch", "eager", "--args", "0,26"])
    assert common_args.arg_setup(a) == {"arg_kind": "torch", "dispatch": "eager"}
    assert common_args.arg_setup(p.parse_args(["compare"])) == {}  # defaults: old workers see nothing new
    b = p.parse_args(["breakdown", "--arg-kind", "cupy", "--dispatch", "eager"])
    assert (b.arg_kind, b.dispatch) == ("cupy", "eager")
    with pytest.raises(SystemExit):
        p.parse_args(["compare", "--dispatch", "later"])


def test_compare_plan_carries_dispatch(monkeypatch, tmp_path):
    from launchbench.commands import compare
    from launchbench.engine import runner

    plans = []

    def fake_run(plan, progress, on_round=None):
        plans.append(plan)
        raise KeyboardInterrupt

    monkeypatch.setattr(runner, "run", fake_run)
    args = cli.build_parser().parse_args(["compare", "--simulator", "--dispatch", "eager", "--variant",
                                          f"a=env:{sys.prefix}", "--variant", "b=passthrough@a",
                                          "-o", str(tmp_path / "r.json"), "--quiet"])
    with pytest.raises(KeyboardInterrupt):
        compare.run(args)
    assert plans[0].setup == {"dispatch": "eager"}
    assert compare._settings(args, [0], {0: 1}, False, None)["dispatch"] == "eager"


# ---------------------------------------------------------------- slopes

def test_lsq_line_is_exact_on_a_line_and_refuses_one_x():
    slope, icept = stats.lsq_line([0, 1, 2, 4, 8, 16, 26], [3 + 0.5 * x for x in (0, 1, 2, 4, 8, 16, 26)])
    assert slope == pytest.approx(0.5) and icept == pytest.approx(3)
    with pytest.raises(ValueError):
        stats.lsq_line([2, 2], [1, 2])


def test_slope_ci_over_rounds_covers_the_true_slope_and_narrows():
    rng = random.Random(3)
    xs = [0, 1, 2, 4, 8, 16, 26]

    def rounds(k, noise):
        # each round shifted as a whole (a slow process): the per-round fit removes it
        return [[10 + shift + 0.7 * x + rng.gauss(0, noise) for x in xs]
                for shift in (rng.gauss(0, 3) for _ in range(k))]

    few, many = stats.slope_ci(xs, rounds(5, 0.2)), stats.slope_ci(xs, rounds(80, 0.2))
    for rec in (few, many):
        assert rec["ci"][0] < 0.7 < rec["ci"][1] and rec["method"].startswith("per-round")
    assert many["ci"][1] - many["ci"][0] < few["ci"][1] - few["ci"][0]
    assert many["n"] == 80


def test_slope_ci_one_round_uses_the_residuals():
    one = stats.slope_ci([0, 1, 2, 3], [[1.0, 2.1, 2.9, 4.0]])
    assert one["n"] == 1 and one["ci"][0] < 1.0 < one["ci"][1] and "one round" in one["method"]
    exact = stats.slope_ci([0, 1], [[1.0, 3.0]])
    assert exact["us"] == pytest.approx(2.0) and exact["ci"] == [exact["us"], exact["us"]]


def _samples(slopes: dict, counts, rounds=12, repeats=3, seed=1):
    """Sample records whose launch time grows by slopes[variant] µs per argument; every round and
    repeat slot shares a machine-state offset, so only the paired slope is precise."""
    rng = random.Random(seed)
    out = []
    for r in range(rounds):
        for rep in range(repeats):
            for n in counts:
                state = rng.gauss(0, 2.0)
                for name, slope in slopes.items():
                    out.append({"variant": name, "round": r, "repeat": rep, "nargs": n,
                                "us": 15 + state + slope * n + rng.gauss(0, 0.05)})
    return out


def test_per_arg_pairs_the_delta_and_reports_each_variant():
    counts = [0, 1, 2, 4, 8, 16, 26]
    got = analysis.per_arg(_samples({"v029": 0.8, "v030": 1.3}, counts), ["v029", "v030"], "v029", counts)
    assert set(got) == {"v029", "v030", "v030-v029"}
    d = got["v030-v029"]
    assert d["ci"][0] < 0.5 < d["ci"][1] and d["ci"][0] > 0  # a real 0.5 µs/arg, told apart from 0
    # the pairing removes the shared machine state: the delta is far tighter than either variant
    assert d["ci"][1] - d["ci"][0] < (got["v030"]["ci"][1] - got["v030"]["ci"][0]) / 3
    assert analysis.per_arg([], ["a"], "a", [2]) == {}


def test_per_arg_of_equal_variants_contains_zero():
    counts = [0, 4, 26]
    got = analysis.per_arg(_samples({"a": 1.0, "b": 1.0}, counts, seed=9), ["a", "b"], "a", counts)
    assert got["b-a"]["ci"][0] <= 0 <= got["b-a"]["ci"][1]


# ---------------------------------------------------------------- the GPU step's summary

def test_summary_reads_the_step_outputs_and_reports_missing_runs(tmp_path):
    counts = [0, 1, 26]
    samples = _samples({"v029": 0.8, "v030": 1.3}, counts)
    stat_recs, delta_recs = analysis.analyze(samples, ["v029", "v030"], "v029", counts)
    doc = {"settings": {"arg_counts": counts}, "reference": "v029", "rounds_completed": 12,
           "variants": [{"name": "v029"}, {"name": "v030"}], "stats": stat_recs, "deltas": delta_recs,
           "per_arg": analysis.per_arg(samples, ["v029", "v030"], "v029", counts)}
    (tmp_path / "compare-cupy-lazy.json").write_text(json.dumps(doc))
    bd = {"analysis": {"stage_deltas": {"v030": {"0": {"typeof": {"us": 0.1, "ci": [0, 0.2]}},
                                                 "26": {"full": {"us": 9.0, "ci": [8, 10]},
                                                        "typeof": {"us": 6.0, "ci": [5, 7]},
                                                        "marshal_args": {"us": -1.0, "ci": [-2, 0]},
                                                        "rest:full": {"us": 50.0, "ci": [0, 99]}}}}}}
    (tmp_path / "breakdown-torch.json").write_text(json.dumps(bd))
    assert summary_mod.main([str(tmp_path)]) == 0
    md = (tmp_path / "results-section.md").read_text()
    assert "| cupy | lazy | 12 |" in md and "| torch | eager | - | no results |" in md
    assert "torch, v030 at 26 args: typeof +6.000 [+5.000, +7.000], marshal_args -1.000" in md
    saved = json.loads((tmp_path / "argkinds-summary.json").read_text())
    assert saved["breakdown"]["torch"]["v030"]["stages"][0]["stage"] == "typeof"
    assert 0.4 < saved["compare"]["cupy/lazy"]["per_arg"]["v030-v029"]["us"] < 0.6


# ---------------------------------------------------------------- asv: benchmarks/bench_argkinds.py

def test_asv_benchmark_smoke_under_the_simulator():
    code = (
        "from benchmarks import bench_argkinds as b\n"
        "t = b.TimeArgKindLaunch()\n"
        "assert (t.number, t.timer) == (1, b.common.CLOCK.now)\n"
        "for n in b.ARG_COUNTS:\n"
        "    for d in b.DISPATCHES:\n"
        "        before = b.common.CLOCK.now()\n"
        "        t.setup('array', n, d); t.time_launch('array', n, d)\n"
        "        assert b.common.CLOCK.now() > before  # the sample asv records: the batch's seconds per launch\n"
        "        run = t.run; t.setup('array', n, d); assert t.run is run  # built once per process\n"
        "for kind in ('cupy', 'torch'):\n"
        "    try:\n"
        "        t.setup(kind, 1, 'lazy')\n"
        "    except NotImplementedError as exc:\n"
        "        print('skip', kind, exc)\n"
        "print('ok')\n")
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", LAUNCHBENCH_SMOKE="1")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          cwd=os.path.dirname(os.path.dirname(__file__)))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.splitlines()[-1] == "ok"
    assert "skip cupy" in proc.stdout and "skip torch" in proc.stdout


def test_asv_slot_batch_holds_a_few_milliseconds_of_launches_within_bounds():
    from launchbench.workloads import launchers as bench_argkinds

    assert bench_argkinds.slot_batch(30e-6, target_s=3e-3, most=100) == 100  # a fast row: the usual 100
    assert bench_argkinds.slot_batch(1.6e-3, target_s=3e-3, most=100) == 2   # 26 torch tensors, lazily
    assert bench_argkinds.slot_batch(10e-3, target_s=3e-3, most=100) == 1    # never an empty batch
    assert bench_argkinds.slot_batch(0.0, target_s=3e-3, most=100) == 100    # a clock that did not move


def test_asv_sample_divides_each_slot_by_the_reference_and_uses_the_rows_batch():
    """The recorded value is median(launch / reference) x R0 over slots, with the row's own batch."""
    from benchmarks import bench_argkinds

    class Run:
        def __init__(self, seconds):
            self.seconds, self.calls = seconds, []

        def __call__(self, n):
            self.calls.append(n)
            return self.seconds

    t = bench_argkinds.TimeArgKindLaunch()
    t.settings, t.run, t.batch, t.ref = {"slots": 6, "r0": 3.7}, Run(74e-6), 3, Run(3.7e-6)
    before = bench_argkinds.common.CLOCK.now()
    t.time_launch("torch", 26, "lazy")
    assert bench_argkinds.common.CLOCK.now() - before == pytest.approx(74e-6)  # 20 x R0 3.7 µs
    assert t.run.calls == [3] * 6 and len(t.ref.calls) == 6


def test_asv_benchmark_skips_when_the_package_is_missing(monkeypatch):
    from launchbench.workloads import launchers

    monkeypatch.delenv("NUMBA_ENABLE_CUDASIM", raising=False)
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(NotImplementedError, match="torch is not importable"):
        launchers.one_array_or_skip("torch")


def test_too_many_arguments_is_a_one_line_error_before_any_env_is_built(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "launchbench", "compare", "--simulator", "--args", "0,40",
                           "--variant", f"a=env:{sys.prefix}", "--variant", "b=passthrough@a",
                           "-o", str(tmp_path / "r.json")], capture_output=True, text=True)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == ("launchbench: error: --args '0,40': 40 is more than 32, "
                                                    "the most this command takes; e.g. --args 0")
    assert cli.build_parser().parse_args(["breakdown", "--args", "0,8,26"]).args == "0,8,26"
    # scalars go to 256; the refusal names the kind's own most
    proc = subprocess.run([sys.executable, "-m", "launchbench", "compare", "--simulator", "--args", "0,300",
                           "--arg-kind", "scalar", "--variant", f"a=env:{sys.prefix}", "--variant", "b=passthrough@a",
                           "-o", str(tmp_path / "r.json")], capture_output=True, text=True)
    assert proc.returncode == 2 and proc.stderr.strip().splitlines()[-1].startswith(
        "launchbench: error: --args '0,300': 300 is more than 256, the most this command takes")


# ---------------------------------------------------------------- peers: numba-cuda's launcher with other arguments

def test_peers_numba_launcher_takes_kind_and_dispatch_under_the_simulator():
    code = (
        "import sys\n"
        "from launchbench.workloads import peers, argkinds\n"
        "runs, reasons = peers.build_launchers(['numba_cuda'], [0, 3], 5, ('mixed', 'eager'))\n"
        "assert not reasons and runs['numba_cuda'][3](10) > 0, reasons\n"
        "sys.modules['cupy'] = None\n"
        "try:\n"
        "    peers.build_launchers(['numba_cuda'], [1], 1, ('cupy', 'lazy'))\n"
        "except argkinds.ArgKindUnavailable as exc:\n"
        "    print('refused:', exc)\n"
        "print('ok')\n")
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert proc.returncode == 0 and proc.stdout.splitlines()[-1] == "ok", proc.stderr[-2000:]
    assert "refused: --arg-kind cupy needs cupy" in proc.stdout
    a = cli.build_parser().parse_args(["peers", "--arg-kind", "torch", "--dispatch", "eager"])
    assert common_args.arg_setup(a) == {"arg_kind": "torch", "dispatch": "eager"}
