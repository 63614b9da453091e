"""Unit tests for launchbench.output.asvtools, launchbench.commands.asv and launchbench.environments.ledger
(fast, no asv runs)."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from launchbench.base.errors import UserError
from launchbench.cli import main
from launchbench.commands import asv
from launchbench.environments import ledger
from launchbench.output import asvtools

ROOT = Path(__file__).resolve().parent.parent


def test_repo_config_pins_and_paths():
    conf = asvtools.load_config(ROOT / "asv.conf.json")  # has // comments, like asv allows
    assert conf["project"] == "numba-cuda"
    assert conf["repo"] == "https://github.com/NVIDIA/numba-cuda.git"
    assert conf["branches"] == ["main"]
    assert conf["environment_type"] == "virtualenv"
    assert (conf["env_dir"], conf["results_dir"], conf["html_dir"]) == (".asv/env", ".asv/results", "html")
    req = conf["matrix"]["req"]
    pins = dict(line.split("==") for line in (ROOT / "constraints.txt").read_text().splitlines()
                if "==" in line and not line.startswith("#"))
    for name, version in pins.items():
        assert req[name] == version, name
    assert "--no-build-isolation" in conf["build_command"][0]
    assert "[cu13]" in conf["install_command"][0]


def test_load_config_without_json5(tmp_path, monkeypatch):
    path = tmp_path / "c.json"
    path.write_text('{\n  // a comment\n  "repo": "x"\n}\n')
    monkeypatch.setitem(sys.modules, "json5", None)
    assert asvtools.load_config(path) == {"repo": "x"}


@pytest.mark.parametrize("text, needle", [
    ('{"schema": "launchbench.compare", "schema_version": 1}', "a launchbench document"),
    ('{"version": 2, "commit_hash": "abc", "results": {}}', "not an asv config"),
    ('{"version": 1, "pad": "' + "x" * (1 << 20) + '"}', "KiB, not an asv config"),
])
def test_load_config_refuses_what_is_not_an_asv_config(tmp_path, text, needle):
    path = tmp_path / "c.json"
    path.write_text(text)
    with pytest.raises(UserError) as err:
        asvtools.load_config(path)
    assert needle in str(err.value) and "\n" not in str(err.value)


def test_asv_config_refuses_read_only_folders_and_its_base_as_output(tmp_path, capsys):
    if os.geteuid() == 0:
        ro = "/proc/launchbench-test"  # root writes anywhere but /proc
    else:
        (tmp_path / "ro").mkdir(mode=0o500)
        ro = str(tmp_path / "ro" / "x")
    base = tmp_path / "base.json"
    base.write_text('{"version": 1, "repo": "https://example.com/x.git", "results_dir": "r"}')
    for flag in ("--results-dir", "--html-dir", "--env-dir"):
        assert main(["asv-config", "--repo", "https://example.com/x.git", "--config", str(base), flag, ro,
                     "-o", str(tmp_path / "o.json")]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"launchbench: error: {flag} ") and len(err.strip().splitlines()) == 1
    assert main(["asv-config", "--repo", "https://example.com/x.git", "--config", str(base), "-o", str(base)]) == 2
    assert "the base config --config" in capsys.readouterr().err
    assert json.loads(base.read_text())["results_dir"] == "r"
    assert not (tmp_path / "o.json").exists()


def test_load_config_missing(tmp_path):
    with pytest.raises(UserError, match="not found"):
        asvtools.load_config(tmp_path / "nope.json")


def test_derive_config_absolute_paths_and_repo(tmp_path):
    repo = tmp_path / "clone"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    base = {"repo": "https://example.com/x.git", "benchmark_dir": "benchmarks", "env_dir": ".asv/env",
            "results_dir": ".asv/results", "html_dir": "html", "matrix": {"req": {"numpy": "1"}}}
    conf = asvtools.derive_config(base, tmp_path / "proj", repo=str(repo), results_dir=tmp_path / "res")
    assert conf["repo"] == str(repo.resolve())
    assert conf["benchmark_dir"] == str((tmp_path / "proj" / "benchmarks").resolve())
    assert conf["env_dir"] == str((tmp_path / "proj" / ".asv" / "env").resolve())
    assert conf["results_dir"] == str((tmp_path / "res").resolve())
    assert conf["matrix"] == base["matrix"] and base["repo"] == "https://example.com/x.git"  # base untouched


def test_resolve_repo_urls_pass_through_and_bad_paths_fail(tmp_path):
    assert asvtools.resolve_repo("https://github.com/NVIDIA/numba-cuda.git").startswith("https://")
    assert asvtools.resolve_repo("git@github.com:NVIDIA/numba-cuda.git").startswith("git@")
    with pytest.raises(UserError, match="not a git repository"):
        asvtools.resolve_repo(str(tmp_path))


def test_asv_config_cli_writes_usable_config(tmp_path, capsys):
    repo = tmp_path / "clone"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    out = tmp_path / "local.json"
    assert main(["asv-config", "--repo", str(repo), "-o", str(out)]) == 2  # asv would fail only when it builds
    assert "not a numba-cuda clone" in capsys.readouterr().err and not out.exists()
    (repo / "numba_cuda").mkdir()
    (repo / "numba_cuda" / "VERSION").write_text("0.30.4\n")
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x"],
                   check=True)
    # the base config's branches (main) must be branches of the clone: asv publish fails on them late
    assert main(["asv-config", "--repo", str(repo), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "branches ['main'] are not branches of" in err and len(err.strip().splitlines()) == 1
    assert not out.exists()
    subprocess.run(["git", "-C", str(repo), "branch", "main"], check=True)
    assert main(["asv-config", "--repo", str(repo), "-o", str(out)]) == 0
    conf = json.loads(out.read_text())
    assert conf["repo"] == str(repo.resolve())
    assert Path(conf["benchmark_dir"]) == ROOT / "benchmarks"
    assert "asv --config" in capsys.readouterr().out


def test_parse_env_specs(tmp_path):
    envs = asv.parse_env_specs([f"0.29.0={sys.executable}", f"0.30.4={sys.executable}"])
    assert list(envs) == ["0.29.0", "0.30.4"]
    for bad, msg in [("0.29.0", "VERSION=PYTHON"), (f"latest={sys.executable}", "not a numba-cuda version"),
                     (f"0.29.0={tmp_path}/python", "not an executable")]:
        with pytest.raises(UserError, match=msg):
            asv.parse_env_specs([bad])
    with pytest.raises(UserError, match="twice"):
        asv.parse_env_specs([f"1.0={sys.executable}", f"1.0={sys.executable}"])
    with pytest.raises(UserError, match="at least one"):
        asv.parse_env_specs([])


def test_branch_specs_and_defaults():
    envs = {"0.29.0": "p", "0.30.4": "q"}
    assert asv.default_branches(envs) == ["baseline=0.29.0", "v2=0.30.4"]
    assert asv.parse_branch_specs(["a=0.29.0"], envs) == {"a": "0.29.0"}
    with pytest.raises(UserError, match="no --env"):
        asv.parse_branch_specs(["a=1.0"], envs)
    with pytest.raises(UserError, match="NAME=VERSION"):
        asv.parse_branch_specs(["a"], envs)
    assert asv.compare_pair({"v2": 1, "x": 2, "baseline": 3}) == ("baseline", "v2")
    assert asv.compare_pair({"x": 1, "y": 2}) == ("x", "y")
    assert asv.compare_pair({"x": 1}) is None


def test_machine_labels():
    assert asvtools.default_machine(True) == asvtools.SMOKE_MACHINE
    asvtools.check_machine_label("SIMULATOR-SMOKE", True)
    with pytest.raises(UserError, match="must use a machine name"):
        asvtools.check_machine_label("h200", True)
    with pytest.raises(UserError, match="reserved"):
        asvtools.check_machine_label("SIMULATOR-SMOKE", False)
    assert asvtools.smoke_requested({"NUMBA_ENABLE_CUDASIM": "1", "LAUNCHBENCH_SMOKE": "1"})
    assert not asvtools.smoke_requested({"NUMBA_ENABLE_CUDASIM": "1"})
    assert not asvtools.smoke_requested({"LAUNCHBENCH_SMOKE": "1"})


def test_attribute_and_bench_args():
    assert asvtools.parse_attributes(["repeat=3", "number=10"]) == ["-a", "repeat=3", "-a", "number=10"]
    with pytest.raises(UserError, match="ATTRIBUTE=VALUE"):
        asvtools.parse_attributes(["repeat"])
    assert asvtools.bench_args(["x", "y"]) == ["-b", "x", "-b", "y"]


def test_drop_unmeasured_rows():
    table = (
        "| Change | Before | After | Ratio | Benchmark |\n"
        "|--------|--------|-------|-------|-----------|\n"
        "|        | n/a    | n/a   | n/a   | a.b(0)    |\n"
        "|        | 1.0us  | n/a   | n/a   | a.b(1)    |\n"
        "| +      | 1.0us  | 2.0us | 2.00  | a.b(2)    |\n"
    )
    out = asv.drop_unmeasured_rows(table)
    assert "a.b(0)" not in out and "a.b(1)" in out and "a.b(2)" in out and "Change" in out


def test_python_shim_runs_the_target_venv(tmp_path):
    shim = asv.write_python_shim(tmp_path / "shim" / "python", sys.executable)
    out = subprocess.run([str(shim), "-c", "import sys; print(sys.prefix)"], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == sys.prefix  # still inside this venv


def test_installed_version_and_mismatch():
    from importlib.metadata import version

    have = version("numba-cuda")
    assert asv.installed_numba_cuda(sys.executable) == have
    assert asv.check_env_versions({have: sys.executable}, False) == {have: have}
    with pytest.raises(UserError, match="not 0.0.1"):
        asv.check_env_versions({"0.0.1": sys.executable}, False)
    assert asv.check_env_versions({"0.0.1": sys.executable}, True) == {"0.0.1": have}


def test_ledger_commits_tags_branches_and_is_stable(tmp_path):
    commits = ledger.ensure_ledger(tmp_path / "l", ["0.30.4", "0.29.0"], {"baseline": "0.29.0", "v2": "0.30.4"})
    repo = tmp_path / "l"
    assert ledger.git(repo, "show", f"{commits['0.29.0']}:VERSION") == "0.29.0"
    assert ledger.git(repo, "rev-parse", "baseline") == commits["0.29.0"]
    assert ledger.git(repo, "rev-parse", "v2") == commits["0.30.4"]
    assert ledger.git(repo, "rev-parse", f"{commits['0.30.4']}^") == commits["0.29.0"]  # release order
    again = ledger.ensure_ledger(repo, ["0.29.0", "0.30.4", "0.30.0"], {"v2": "0.30.0"})
    assert again["0.29.0"] == commits["0.29.0"] and again["0.30.4"] == commits["0.30.4"]
    assert ledger.git(repo, "rev-parse", "v2") == again["0.30.0"]
    # fixed identities and dates: another machine gets the same commit ids
    other = ledger.ensure_ledger(tmp_path / "m", ["0.29.0"], {})
    assert other["0.29.0"] == commits["0.29.0"]


def test_ledger_refuses_a_non_ledger_dir(tmp_path):
    (tmp_path / "x").mkdir()
    with pytest.raises(UserError, match="not a release ledger"):
        ledger.ensure_ledger(tmp_path / "x", ["1.0"], {})
    with pytest.raises(UserError, match="not in the ledger"):
        ledger.ensure_ledger(tmp_path / "y", ["1.0"], {"v2": "2.0"})


def test_version_key_orders_releases():
    assert sorted(["0.30.4", "0.29.0", "0.30.0", "0.9.1"], key=ledger.version_key) == ["0.9.1", "0.29.0", "0.30.0", "0.30.4"]


def test_asv_releases_rejects_gpu_run_under_smoke_label(monkeypatch, capsys):
    monkeypatch.delenv("NUMBA_ENABLE_CUDASIM", raising=False)
    rc = main(["asv-releases", "--env", f"0.30.4={sys.executable}", "--machine", "SIMULATOR-SMOKE"])
    assert rc == 2 and "reserved" in capsys.readouterr().err


def test_against_builds_asv_continuous_on_a_derived_config(tmp_path, monkeypatch, capsys):
    repo = tmp_path / "clone"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    calls = []

    class Done:
        returncode = 2  # asv continuous: regression found; not an error

    monkeypatch.setattr(asv, "default_local_config", lambda: tmp_path / "local.json")
    monkeypatch.setattr(asv, "run_asv", lambda cmd, **kw: calls.append(cmd) or Done())
    monkeypatch.setattr(asv.device, "refuse_without_gpu", lambda **kw: None)  # as on a GPU machine
    assert main(["against", "baseline", "v2", "--repo", str(repo), "-b", "Preconfigured", "--factor", "1.1"]) == 2
    (cmd,) = calls
    assert cmd[cmd.index("--config") + 1] == str(tmp_path / "local.json")
    assert cmd[-2:] == ["baseline", "v2"] and cmd[cmd.index("--factor") + 1] == "1.1"
    assert "continuous" in cmd and ["-b", "Preconfigured"] == cmd[cmd.index("-b"):cmd.index("-b") + 2]
    assert json.loads((tmp_path / "local.json").read_text())["repo"] == str(repo.resolve())
    capsys.readouterr()
    Done.returncode = 1
    assert main(["against", "a", "b", "--repo", str(repo)]) == 2
    assert "asv continuous failed (exit 1)" in capsys.readouterr().err
