"""Variant spec parsing and resolution (launchbench.environments.variants)."""
import os
import sys

import pytest

from launchbench.base.errors import UserError
from launchbench.environments import variants

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def fake_checkout(tmp_path):
    (tmp_path / "numba_cuda" / "numba" / "cuda").mkdir(parents=True)
    for rel in variants.CUDA_PACKAGE_FILES:  # numba-cuda's CUDA package: what check_repo looks for
        (tmp_path / rel).write_text("")
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "numba-cuda"\n')
    return str(tmp_path)


def test_default_is_baseline_contextvar_v2():
    vs, ref = variants.parse_variants([])
    assert ref == "baseline"
    assert [(v.name, v.kind, v.mechanism, v.base.target) for v in vs] == [
        ("baseline", "wheel", None, "numba-cuda==0.29.0"),
        ("contextvar", "mechanism", "contextvar", "numba-cuda==0.29.0"),
        ("v2", "wheel", None, "numba-cuda==0.30.4"),
    ]
    # the mechanism is replayed in the baseline's environment
    assert vs[0].base == vs[1].base


def test_default_pins_equal_constraints_txt():
    path = os.path.join(ROOT, "constraints.txt")
    assert variants.parse_pins(path) == variants.DEFAULT_PINS
    assert variants.parse_pins(None) == variants.DEFAULT_PINS


def test_forms_and_order(tmp_path):
    repo = fake_checkout(tmp_path)
    items = [("repo", f"mine={repo}"), ("variant", "rel=numba_cuda==0.30.4"),
             ("variant", "cal=delay:0.5us@mine"), ("variant", f"here=env:{sys.prefix}")]
    vs, ref = variants.parse_variants(items)
    assert ref == "mine"
    assert [v.kind for v in vs] == ["repo", "wheel", "mechanism", "env"]
    assert vs[0].base.target == os.path.realpath(repo)
    assert vs[1].base.target == "numba-cuda==0.30.4"
    assert vs[2].base == vs[0].base and vs[2].mechanism == "delay:500ns"
    assert vs[3].base.kind == "env"


def test_reference_can_be_named():
    _, ref = variants.parse_variants([("variant", "a=numba-cuda==0.29.0"), ("variant", "b=numba-cuda==0.30.4")], "b")
    assert ref == "b"


@pytest.mark.parametrize("items, needle", [
    ([("variant", "a=numba-cuda>=0.29"), ("variant", "b=numba-cuda==0.30.4")], "unknown variant spec"),
    ([("variant", "a"), ("variant", "b=numba-cuda==0.30.4")], "expected NAME=SPEC"),
    ([("variant", "1a=numba-cuda==0.29.0"), ("variant", "b=numba-cuda==0.30.4")], "must start with a letter"),
    ([("variant", "a=numba-cuda==0.29.0"), ("variant", "a=numba-cuda==0.30.4")], "used twice"),
    ([("variant", "a=numba-cuda==0.29.0")], "at least two variants"),
    ([("variant", "a=numba-cuda==0.29.0"), ("variant", "b=warp@a")], "unknown mechanism"),
    ([("variant", "a=numba-cuda==0.29.0"), ("variant", "b=contextvar@nosuch")], "unknown variant spec"),
    ([("repo", "a=/definitely/not/here"), ("variant", "b=numba-cuda==0.30.4")], "does not exist"),
    ([("variant", "a=env:/definitely/not/here"), ("variant", "b=numba-cuda==0.30.4")], "does not exist"),
])
def test_bad_specs_are_one_line_user_errors(items, needle):
    with pytest.raises(UserError) as info:
        variants.parse_variants(items)
    assert needle in str(info.value) and "\n" not in str(info.value)


def test_not_numba_cuda_checkout(tmp_path):
    with pytest.raises(UserError, match="is not a numba-cuda checkout"):
        variants.check_repo(str(tmp_path))


def test_unknown_reference():
    with pytest.raises(UserError, match="--reference"):
        variants.parse_variants([("variant", "a=numba-cuda==0.29.0"), ("variant", "b=numba-cuda==0.30.4")], "c")


def test_pins_file(tmp_path):
    f = tmp_path / "c.txt"
    f.write_text("# comment\nnumba==0.65.1  # pinned\nNumPy==2.3.5\n")
    assert variants.parse_pins(str(f)) == {"numba": "0.65.1", "numpy": "2.3.5"}
    f.write_text("numba>=0.65\n")
    with pytest.raises(UserError, match="expected name==version"):
        variants.parse_pins(str(f))
