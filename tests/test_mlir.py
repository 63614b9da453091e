"""numba-cuda-mlir as a variant kind: specs, env requirements, the module choice, the asv shim
and the conformance map. CPU only."""
import subprocess
import sys

import pytest

from launchbench.base import cudamod
from launchbench.base.errors import UserError
from launchbench.environments import variants
from launchbench.environments.envs import EnvManager


def test_mlir_specs_parse_to_their_own_module():
    vlist, ref = variants.parse_variants([("variant", "v2=numba-cuda==0.30.4"),
                                          ("variant", "mlir=numba-cuda-mlir==0.6.0"),
                                          ("variant", f"mlirenv=mlir-env:{sys.executable}")])
    by = {v.name: v.base for v in vlist}
    assert ref == "v2" and by["v2"].module == "numba-cuda"
    assert by["mlir"] == variants.Base("wheel", "numba-cuda-mlir==0.6.0", module="numba-cuda-mlir")
    assert by["mlirenv"].kind == "env" and by["mlirenv"].module == "numba-cuda-mlir"
    with pytest.raises(UserError, match="mlir-env:PATH"):
        variants.parse_variants([("variant", "a=numba-cuda==0.30.4"), ("variant", "b=numba_cuda_mlir")])
    with pytest.raises(UserError, match="does not exist"):
        variants.parse_variants([("variant", "a=numba-cuda==0.30.4"), ("variant", "b=mlir-env:/no/such/env")])


def test_mlir_envs_keep_only_the_pins_it_shares(tmp_path):
    mgr = EnvManager(env_dir=str(tmp_path), pins=dict(variants.DEFAULT_PINS), extras="cu13")
    mlir = mgr.requirements(variants.Base("wheel", "numba-cuda-mlir==0.6.0", module="numba-cuda-mlir"))
    assert mlir == ["numba-cuda-mlir[cu13]==0.6.0", "cuda-core==0.7.0", "numpy==2.3.5"]
    plain = mgr.requirements(variants.Base("wheel", "numba-cuda==0.30.4"))
    assert "numba==0.65.1" in plain and "llvmlite==0.47.0" in plain


def test_wheelhouse_fetches_the_mlir_wheel_for_mlir_variants():
    from launchbench.environments import wheelhouse

    versions = wheelhouse.numba_cuda_versions(["v2=numba-cuda==0.30.4", "mlir=numba-cuda-mlir==0.6.0",
                                               f"m2=mlir-env:{sys.executable}", "again=mlir"])
    assert versions == ["0.30.4", "numba-cuda-mlir==0.6.0"]
    reqs = wheelhouse.requirements(versions, pins={"numpy": "2.3.5"})
    assert reqs[:3] == ["numpy==2.3.5", "numba-cuda==0.30.4", "numba-cuda-mlir==0.6.0"]
    with pytest.raises(UserError, match="numba-cuda-mlir==X.Y.Z"):
        wheelhouse.numba_cuda_versions(["numba-cuda-mlir"])


def test_module_choice_and_its_errors():
    assert cudamod.choice({}) == "numba-cuda" and cudamod.distribution({}) == "numba-cuda"
    env = {cudamod.ENV: "numba-cuda-mlir"}
    assert cudamod.choice(env) == "numba-cuda-mlir" and cudamod.distribution(env) == "numba-cuda-mlir"
    with pytest.raises(ValueError, match="use one of"):
        cudamod.choice({cudamod.ENV: "cupy"})
    with pytest.raises(ImportError):  # numba-cuda-mlir is not installed in CI: the import fails, named
        cudamod.import_cuda(env)


def test_numba_cuda_is_the_default_module_under_the_simulator():
    code = ("from launchbench.base import cudamod; c = cudamod.import_cuda(); "
            "print(c.__name__, c.simulator_enabled if hasattr(c, 'simulator_enabled') else '')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**__import__("os").environ, "NUMBA_ENABLE_CUDASIM": "1"}).stdout
    assert out.startswith("numba.cuda")


def test_asv_rows_skip_on_an_unknown_cuda_module(monkeypatch):
    """The asv suite picks its module through base/cudamod (one choice for the CLI and the suite);
    an unknown LAUNCHBENCH_CUDA_MODULE makes a row skip in one line, not crash."""
    from launchbench.base import cudamod
    from launchbench.workloads import sampling

    monkeypatch.delenv("NUMBA_ENABLE_CUDASIM", raising=False)
    monkeypatch.setenv(cudamod.ENV, "torch")
    with pytest.raises(NotImplementedError, match="numba-cuda-mlir"):  # asv records a skip, not a crash
        sampling.gpu_or_skip()


def test_conformance_map_covers_every_numba_cuda_check_and_names_real_mlir_tests():
    import ast
    import pathlib

    from launchbench.workloads import lcs_mlir

    root = pathlib.Path(__file__).parent

    def tests_in(path):
        tree = ast.parse(path.read_text())
        return {n.name for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")}

    # the numba-cuda suite's body lives in the package (launchbench pr runs it in any env)
    upstream = tests_in(root.parent / "launchbench" / "workloads" / "lcs" / "conformance.py")
    ported = tests_in(root / "test_lcs_conformance_mlir.py")
    assert set(lcs_mlir.CONFORMANCE_MAP) == upstream  # every check mapped, none invented
    for name, (status, what) in lcs_mlir.CONFORMANCE_MAP.items():
        if status == "ported":
            assert what in ported, f"{name} -> {what} is not in tests/test_lcs_conformance_mlir.py"
        else:
            assert len(what) > 20, f"{name}: say why it is {status}"
    assert sum(lcs_mlir.map_summary().values()) == len(upstream)
    with pytest.raises(ValueError, match="unknown status"):
        lcs_mlir.map_summary({"t": ("maybe", "")})


def test_baking_replaces_the_launch_config_globals_in_the_ir():
    """The planner's rewrite, on numba's own IR (mlir uses the same IR classes): globals -> constants."""
    from numba.core import ir
    from numba.core.compiler import run_frontend

    from launchbench.workloads import lcs_mlir

    namespace = {g: lcs_mlir.UNBAKED for g in lcs_mlir.BAKED}
    exec("def probe(out):\n    out[0] = LB_BAKED_GRID\n    out[1] = LB_BAKED_BLOCK\n    out[2] = LB_BAKED_SHMEM\n",
         namespace)
    func_ir = run_frontend(namespace["probe"])
    assert lcs_mlir.reads_baked(func_ir, ir)
    values = lcs_mlir.baked_values({"grid": (2, 1, 1), "block": (128, 1, 1), "sharedmem": 256, "cluster": None})
    assert lcs_mlir.bake(func_ir, values, ir) == 3
    consts = [s.value.value for b in func_ir.blocks.values() for s in b.body
              if isinstance(s, ir.Assign) and isinstance(s.value, ir.Const)]
    assert {2, 128, 256} <= set(consts) and not lcs_mlir.reads_baked(func_ir, ir)
    exec("def twin(out):\n    out[0] = -1\n", namespace)
    assert not lcs_mlir.reads_baked(run_frontend(namespace["twin"]), ir)
    assert lcs_mlir.expected("lcs", (2,), (128,), 256) == [2, 128, 256, 2, 128]
    assert lcs_mlir.expected("twin", (1,), (32,)) == [-1, -1, -1, 1, 32]


class _StandInMarshaller:
    """The shape of numba-cuda-mlir 0.6.0's ``_ArgMarshaller`` fast path, counting what each layer runs."""

    def __init__(self, nargs):
        self.calls = {"lock": 0, "impl": 0, "launch": 0, "native": 0}
        self._sig_cache = {tuple([list] * nargs): ([object] * nargs, True)}
        self._launcher = self._native

    def _native(self, *args):
        self.calls["native"] += 1

    def __call__(self, *args):
        self.calls["lock"] += 1
        return self._call_impl(*args)

    def _call_impl(self, *args):
        self.calls["impl"] += 1
        types, _ = self._sig_cache[tuple(type(a) for a in args)]
        return self._launch(types, args)

    def _launch(self, argtypes, launch_args):
        self.calls["launch"] += 1
        return self._launcher(*launch_args)


def test_mlir_stage_loops_stop_each_layer_where_they_say():
    from launchbench.workloads import stages_mlir

    m = _StandInMarshaller(2)
    syncs = []
    loops = stages_mlir.mlir_loops(None, m, [[1], [2]], lambda: syncs.append(1))
    assert set(loops) == {"loop", "configure", *stages_mlir.STAGES, *stages_mlir.LEVELS}
    expect = {"full": (1, 1, 1, 1), "marshaller_call": (0, 1, 1, 1), "launch_frame": (0, 0, 1, 1),
              "native_launch": (0, 0, 0, 1), "lock_frame": (1, 0, 0, 0), "sig_lookup": (0, 1, 0, 0),
              "launch_bookkeeping": (0, 0, 1, 0)}
    for name, counts in expect.items():
        m.calls = dict.fromkeys(m.calls, 0)
        # the hollow copies count into their own dicts; read the real one and theirs together
        hollows = [h for h in (loops[name].__globals__.get(x) for x in ("no_lock", "no_launch", "no_native")) if h]
        for h in hollows:
            h.calls = m.calls
        loops[name](3)
        assert tuple(m.calls[k] // 3 for k in ("lock", "impl", "launch", "native")) == counts, name
    assert len(syncs) == 4  # the four levels that launch synchronize once per loop; hollow stages never do
    with pytest.raises(UserError, match="_ArgMarshaller"):
        stages_mlir.marshaller_of(object())


def test_mlir_stage_summary_partitions_full():
    from launchbench.workloads import stages_mlir

    med = {"full": 10.0, "marshaller_call": 9.0, "launch_frame": 7.5, "lock_frame": 0.5, "sig_lookup": 1.0,
           "launch_bookkeeping": 1.5, "native_launch": 6.0, "configure": 0.3}
    s = stages_mlir.summarize(med)
    assert s["sum_of_stages"] == 9.0 and s["rest"] == 1.0
    assert s["rest:marshaller_call"] == 0.5 and s["rest:launch_frame"] == 0.0
    doc = stages_mlir.document({"0": {"loop": [0.1, 0.1], **{k: [v + 0.1] for k, v in med.items()}}}, [0],
                               {}, "0.6.0")
    assert doc["stages"]["0"]["full"] == pytest.approx(10.0)
    assert "full" in stages_mlir.format_table(doc)


def test_mlir_summary_fits_each_arguments_cost_and_counts_conformance(tmp_path):
    import importlib.util
    import json
    import os

    path = os.path.join(os.path.dirname(__file__), os.pardir, "lab", "recipes", "mlir_summary.py")
    spec = importlib.util.spec_from_file_location("mlir_summary", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.slope([(0, 10.0), (1, 14.5), (2, 19.0)]) == (10.0, 4.5)
    stats = [{"variant": v, "nargs": n, "median": base + per * n}
             for v, base, per in (("v2", 11.0, 4.5), ("mlir", 9.0, 1.0)) for n in range(5)]
    (tmp_path / "compare.json").write_text(json.dumps({"stats": stats, "reference": "v2", "deltas": []}))
    (tmp_path / "conformance-envmlir.xml").write_text(
        '<testsuite><testcase name="a"/><testcase name="b"><failure/></testcase>'
        '<testcase name="c"><skipped/></testcase></testsuite>')
    assert mod.main(str(tmp_path)) == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["fits"]["mlir"]["per_arg_us"] == pytest.approx(1.0)
    assert summary["fits"]["v2"]["fixed_us"] == pytest.approx(11.0)
    assert summary["conformance"]["envmlir"] == {"passed": 1, "failed": 1, "skipped": 1}
    assert "| per argument (fit) | 4.50 | 1.00 |" in (tmp_path / "results-section.md").read_text()
