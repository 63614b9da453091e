"""numba-cuda-mlir as a variant kind (issue 21): specs, env requirements, the module choice, the asv shim
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


def test_asv_shim_picks_the_module_and_rejects_unknown_ones(monkeypatch):
    from benchmarks import common

    monkeypatch.delenv(common.CUDA_MODULE_ENV, raising=False)
    assert common.cuda_module_name() == "numba-cuda" and common.cuda_module().__name__ == "numba.cuda"
    monkeypatch.setenv(common.CUDA_MODULE_ENV, "numba-cuda-mlir")
    assert common.cuda_module_name() == "numba-cuda-mlir"
    with pytest.raises(ImportError):  # not installed here; on the GPU machine it is
        common.cuda_module()
    monkeypatch.setenv(common.CUDA_MODULE_ENV, "torch")
    with pytest.raises(NotImplementedError, match="numba-cuda-mlir"):  # asv records a skip, not a crash
        common.cuda_module_name()
    from launchbench.base import cudamod

    assert set(common._CUDA_IMPORTS) == set(cudamod.MODULES)  # the shim and launchbench agree on the names


def test_conformance_map_covers_every_numba_cuda_check_and_names_real_mlir_tests():
    import ast
    import pathlib

    from launchbench.workloads import lcs_mlir

    root = pathlib.Path(__file__).parent

    def tests_in(name):
        tree = ast.parse((root / name).read_text())
        return {n.name for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")}

    upstream, ported = tests_in("test_lcs_conformance.py"), tests_in("test_lcs_conformance_mlir.py")
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
