"""launchbench wheelhouse with pip mocked: the commands it builds, the split layout and JOIN.sh."""
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from launchbench.cli import main
from launchbench.environments import wheelhouse
from launchbench.environments.variants import DEFAULT_PINS
from launchbench.output.asvtools import load_config

MIB = wheelhouse.MIB


@pytest.fixture
def fake_pip(monkeypatch):
    """Records pip download commands and writes a small file named after each requirement."""
    calls = []

    def run(cmd):
        calls.append(cmd)
        req, dest = cmd[-1], cmd[cmd.index("-d") + 1]
        name = req.replace("==", "-").replace("[", "").replace("]", "")
        with open(os.path.join(dest, f"{name}-py3-none-any.whl"), "wb") as fh:
            fh.write(req.encode())
        return subprocess.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setattr(wheelhouse, "_run_pip", run)
    return calls


def reqs_of(calls):
    return [c[-1] for c in calls]


def test_default_command_lines(fake_pip, tmp_path):
    dest = tmp_path / "wh"
    assert main(["wheelhouse", str(dest), "--quiet"]) == 0
    reqs = reqs_of(fake_pip)
    assert reqs == [f"{k}=={v}" for k, v in DEFAULT_PINS.items()] + [
        "numba-cuda==0.29.0", "numba-cuda==0.30.4",
        "asv", "asv-runner", "json5", "pympler", "importlib-metadata==8.5.0"]
    cmd = fake_pip[0]
    assert cmd[1:4] == ["-m", "pip", "download"]
    for flag in ("--no-deps", "--only-binary=:all:"):
        assert flag in cmd
    assert cmd[cmd.index("--python-version") + 1] == "3.12"
    assert cmd[cmd.index("--implementation") + 1] == "cp"
    assert cmd[cmd.index("-d") + 1] == str(dest)
    platforms = [cmd[i + 1] for i, a in enumerate(cmd) if a == "--platform"]
    assert platforms[0] == "manylinux_2_17_x86_64" and "manylinux_2_28_x86_64" in platforms
    assert "manylinux2014_x86_64" in platforms
    assert not any(p.startswith("part-") for p in os.listdir(dest))


def test_options_change_the_commands(fake_pip, tmp_path):
    assert main(["wheelhouse", str(tmp_path), "--quiet", "--python-version", "3.11",
                 "--platform", "manylinux_2_28_x86_64", "--build-deps", "--package", "packaging",
                 "--variant", "baseline=numba-cuda==0.29.0", "--variant", "cv=contextvar@baseline",
                 "--variant", "numba-cuda==0.30.0", "--variant", "tls@numba-cuda==0.30.1",
                 "--variant", f"mine=repo:{tmp_path}"]) == 0
    reqs = reqs_of(fake_pip)
    assert [r for r in reqs if r.startswith("numba-cuda")] == [
        "numba-cuda==0.29.0", "numba-cuda==0.30.0", "numba-cuda==0.30.1"]
    assert reqs[-3:] == ["setuptools", "wheel", "packaging"]
    cmd = fake_pip[0]
    assert cmd[cmd.index("--python-version") + 1] == "3.11"
    assert [cmd[i + 1] for i, a in enumerate(cmd) if a == "--platform"] == ["manylinux_2_28_x86_64"]


@pytest.mark.parametrize("argv,words", [
    (["--split-mb", "0"], "--split-mb"),
    (["--split-mb", "-3"], "--split-mb"),
    (["--split-mb", "abc"], "--split-mb"),
    (["--variant", "foo"], "unknown variant spec"),
    (["--variant", "x=numba-cuda"], "unknown variant spec"),
    (["--variant", "nosuch@numba-cuda==0.29.0"], "--variant"),
    (["--python-version", "twelve"], "--python-version"),
    (["--platform", "Many Linux"], "--platform"),
    (["--package", "not a req!!"], "--package 'not a req!!' is not a requirement"),  # once: after 107 MiB
])
def test_bad_values_one_line(fake_pip, tmp_path, capsys, argv, words):
    try:
        rc = main(["wheelhouse", str(tmp_path / "wh"), *argv])
    except SystemExit as exc:  # argparse: the option's type (base/options.py) refused it
        rc = exc.code
    assert rc == 2
    err = capsys.readouterr().err
    assert err.startswith(("launchbench: error: ", "launchbench wheelhouse: error: ")) and words in err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert fake_pip == []  # checked before any download


def test_pip_failure_is_one_line(monkeypatch, tmp_path, capsys):
    def run(cmd):
        return subprocess.CompletedProcess(
            cmd, 1, "", "Looking in indexes\nERROR: No matching distribution found for numba==0.65.1\n")

    monkeypatch.setattr(wheelhouse, "_run_pip", run)
    assert main(["wheelhouse", str(tmp_path), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "No matching distribution" in err and err.count("\n") == 1


# ---------------------------------------------------------------- split layout

def make_files(dest, sizes):
    os.makedirs(dest, exist_ok=True)
    data = {}
    for name, size in sizes.items():
        blob = os.urandom(size)
        (dest / name).write_bytes(blob)
        data[name] = blob
    return data


def test_split_layout_and_join(tmp_path):
    dest = tmp_path / "wh"
    data = make_files(dest, {
        "big-1.0-py3-none-any.whl": int(2.5 * MIB),  # 3 pieces
        "mid-1.0-py3-none-any.whl": int(0.6 * MIB),
        "small-1.0-py3-none-any.whl": 300_000,
        "tiny-1.0-py3-none-any.whl": 1000,
    })
    parts = wheelhouse.split(str(dest), 1, log=lambda m: None)
    assert [os.path.basename(p) for p in parts] == [f"part-{k}" for k in range(1, len(parts) + 1)]
    everything = {}
    for part in parts:
        names = os.listdir(part)
        assert sum(os.path.getsize(os.path.join(part, n)) for n in names) <= MIB
        for n in names:
            everything[n] = part
    assert "JOIN.sh" in os.listdir(parts[0])
    pieces = sorted(n for n in everything if ".whl.part" in n)
    assert pieces == [f"big-1.0-py3-none-any.whl.part0{k}" for k in (1, 2, 3)]
    assert "big-1.0-py3-none-any.whl" not in everything
    assert {"mid-1.0-py3-none-any.whl", "small-1.0-py3-none-any.whl", "tiny-1.0-py3-none-any.whl"} <= set(everything)
    assert sorted(n for n in os.listdir(dest) if not n.startswith("part-")) == sorted(data)  # DIR stays flat

    # carry the parts elsewhere (without DIR's flat files) and rejoin there
    there = tmp_path / "there"
    there.mkdir()
    for part in parts:
        shutil.copytree(part, there / os.path.basename(part))
    out = subprocess.run(["bash", str(there / "part-1" / "JOIN.sh")], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    for name, blob in data.items():
        assert (there / name).read_bytes() == blob

    # into an explicit DEST, from a single flat folder holding every file
    flat = tmp_path / "flat"
    flat.mkdir()
    for part in parts:
        for n in os.listdir(part):
            shutil.copy(os.path.join(part, n), flat / n)
    out = subprocess.run(["bash", str(flat / "JOIN.sh"), str(tmp_path / "dest")], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    for name, blob in data.items():
        assert (tmp_path / "dest" / name).read_bytes() == blob


def test_join_detects_missing_and_corrupt_pieces(tmp_path):
    dest = tmp_path / "wh"
    make_files(dest, {"big.whl": int(1.5 * MIB)})
    parts = wheelhouse.split(str(dest), 1, log=lambda m: None)
    piece = next(os.path.join(p, n) for p in parts for n in os.listdir(p) if n.endswith(".part02"))
    with open(piece, "r+b") as fh:  # flip the first byte (writing a fixed byte could leave it unchanged)
        first = fh.read(1)
        fh.seek(0)
        fh.write(bytes([first[0] ^ 0xFF]))
    out = subprocess.run(["bash", os.path.join(parts[0], "JOIN.sh"), str(tmp_path / "a")], capture_output=True, text=True)
    assert out.returncode != 0 and "sha256 mismatch" in out.stderr
    assert not (tmp_path / "a" / "big.whl").exists()
    os.unlink(piece)
    out = subprocess.run(["bash", os.path.join(parts[0], "JOIN.sh"), str(tmp_path / "b")], capture_output=True, text=True)
    assert out.returncode != 0 and "missing" in out.stderr


def test_resplit_replaces_old_parts(tmp_path):
    dest = tmp_path / "wh"
    make_files(dest, {f"f{k}.whl": 400_000 for k in range(6)})
    assert len(wheelhouse.split(str(dest), 1, log=lambda m: None)) == 3
    parts = wheelhouse.split(str(dest), 2, log=lambda m: None)
    assert len(parts) == 2 and sorted(n for n in os.listdir(dest) if n.startswith("part-")) == ["part-1", "part-2"]


def test_split_through_cli(fake_pip, tmp_path, capsys):
    dest = tmp_path / "wh"
    make_files(dest, {"llvmlite-0.47.0-cp312-cp312-manylinux_2_27_x86_64.whl": int(1.2 * MIB)})
    assert main(["wheelhouse", str(dest), "--quiet", "--split-mb", "1"]) == 0
    out = capsys.readouterr().out
    assert "part-1" in out and "JOIN.sh" in out
    assert (dest / "part-1" / "JOIN.sh").exists()


def test_asv_builds_fetches_what_the_offline_asv_envs_install(fake_pip, tmp_path):
    """Every package the config's matrix installs, the build backend, cuda-core's hard dependency
    and the host's virtualenv: with any one missing, asv's offline per-commit build fails on the GPU machine."""
    assert main(["wheelhouse", str(tmp_path / "wh"), "--quiet", "--asv-builds"]) == 0
    names = {r.split("==")[0] for r in reqs_of(fake_pip)}
    matrix = load_config(Path(__file__).resolve().parent.parent / "asv.conf.json")["matrix"]["req"]
    assert set(matrix) <= names
    for name in ("setuptools", "wheel", "packaging", "pip", "asv-runner", "cuda-pathfinder", "virtualenv"):
        assert name in names
    fake_pip.clear()
    assert main(["wheelhouse", str(tmp_path / "wh2"), "--quiet"]) == 0
    assert "virtualenv" not in {r.split("==")[0] for r in reqs_of(fake_pip)}
