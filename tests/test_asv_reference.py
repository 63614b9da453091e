"""Plain asv (not launchbench's wrappers) on the CUDA simulator: what every value was measured against is
in asv's own records, and the faults that used to pass quietly end the run non-zero.

``asv run`` on an existing environment (this venv) filed under a release ledger's commits, as
``launchbench asv-releases`` runs it but without its settings check: ``asv continuous`` needs asv to
build two environments (network, minutes), and returns ``asv run``'s non-zero status before it compares
(asv/commands/continuous.py), so the same failures end it. No wall-clock bounds: the one wait below
pauses asv instead of racing it.
"""
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from launchbench.commands import asv as asvcmd
from launchbench.environments import ledger
from launchbench.output import asvtools

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
MACHINE = "SIMULATOR-SMOKE"
LAUNCH = "bench_launch.TimeLaunchPreconfigured.time_launch"

pytestmark = pytest.mark.slow


@pytest.fixture
def asv_setup(tmp_path):
    """A two-commit release ledger (both this venv), its asv configs, a machine, and a short anchor folder."""
    commits = ledger.ensure_ledger(tmp_path / "ledger", ["0.29.0", "0.30.4"], {"baseline": "0.29.0", "v2": "0.30.4"})
    conf = asvtools.derive_config(asvtools.load_config(ROOT / "asv.conf.json"), ROOT, repo=str(tmp_path / "ledger"),
                                  results_dir=tmp_path / "results", html_dir=tmp_path / "html",
                                  branches=["baseline", "v2"])
    config = asvtools.write_asv_config(conf, tmp_path / "ledger.asv.json")
    runs = {v: asvtools.write_asv_config(asvcmd.single_commit_config(conf, sha), tmp_path / f"run-{v}.asv.json")
            for v, sha in commits.items()}
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAUNCHBENCH_")}
    env.update(HOME=str(tmp_path), NUMBA_ENABLE_CUDASIM="1", LAUNCHBENCH_SMOKE="1", PYTHONUNBUFFERED="1",
               PATH=f"{Path(PY).parent}{os.pathsep}{env.get('PATH', '')}")
    subprocess.run([PY, "-m", "asv", "--config", str(config), "machine", "--yes", "--machine", MACHINE],
                   env=env, check=True, capture_output=True)
    anchor_dir = tempfile.mkdtemp(prefix="lbr")  # AF_UNIX paths are short
    setup = {"tmp": tmp_path, "commits": commits, "config": config, "runs": runs, "env": env,
             "anchor_env": {**env, "LAUNCHBENCH_ASV_ANCHOR": PY, "LAUNCHBENCH_ASV_ANCHOR_DIR": anchor_dir,
                            "LAUNCHBENCH_ASV_A0_DIR": str(tmp_path / "results" / "anchor-a0")},
             "anchor_dir": anchor_dir}
    yield setup
    for pid in _servers(anchor_dir):  # no anchor server outlives the test
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def _servers(folder):
    log = Path(folder, "anchor.log")
    text = log.read_text(errors="replace") if log.exists() else ""
    return [int(pid) for pid in re.findall(r"^anchor (\d+) numba-cuda", text, re.M)]


def _asv_run(setup, version, env, *bench, popen=False):
    cmd = [PY, "-m", "asv", "--config", str(setup["runs"][version]), "run", "--environment", f"existing:{PY}",
           "--set-commit-hash", setup["commits"][version], "--machine", MACHINE, "--show-stderr",
           "--record-samples", *[x for b in bench for x in ("-b", b)]]
    if popen:
        return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                start_new_session=True)
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)


def _result(setup, version):
    (path,) = (setup["tmp"] / "results" / MACHINE).glob(f"{setup['commits'][version][:8]}-*.json")
    return json.loads(path.read_text())


def test_a_wrong_anchor_fails_every_row_and_the_run(asv_setup):
    """A typo in LAUNCHBENCH_ASV_ANCHOR used to skip every row and exit 0; now each row fails with the
    variable's name in one line and asv exits non-zero."""
    env = {**asv_setup["env"], "LAUNCHBENCH_ASV_ANCHOR": "/no/such/python"}
    proc = _asv_run(asv_setup, "0.30.4", env, r"TimeLaunchPreconfigured.time_launch\((0|1), '\[1, 1\]'",
                    r"TimeReferenceLaunch.time_launch\(0,")
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out[-3000:]
    line = "LAUNCHBENCH_ASV_ANCHOR='/no/such/python' is not an executable file: give a Python, e.g. ENV/bin/python"
    assert out.count(f"SettingsError: {line}") == 3 * 2, out[-3000:]  # each row, each of its 2 rounds, in one line
    results = _result(asv_setup, "0.30.4")["results"]
    values = results[LAUNCH][0]  # args x 7 configurations x 1 reference: (0, [1, 1]) and (1, [1, 1]) ran
    assert values[0] is None and values[7] is None  # failed (asv's None), not skipped (NaN)


def test_an_anchor_killed_mid_run_fails_the_run_instead_of_mixing_anchors(asv_setup):
    """asv is paused once the first row has its A0 (the anchor has served it), the anchor is killed, asv
    resumes: the next row reaches a new anchor, which must fail the run in one line."""
    env = asv_setup["anchor_env"]
    proc = _asv_run(asv_setup, "0.30.4", env, r"TimeLaunchPreconfigured.time_launch\(\d, '\[1, 1\]'", popen=True)
    tables = Path(env["LAUNCHBENCH_ASV_A0_DIR"])
    try:
        while proc.poll() is None and not any(json.loads(p.read_text())["a0_us"] for p in tables.glob("*.table")):
            time.sleep(0.02)
        assert proc.poll() is None, "asv finished before the anchor served"
        os.killpg(proc.pid, signal.SIGSTOP)
        first = json.loads(Path(asv_setup["anchor_dir"], "run.json").read_text())
        os.kill(first["pid"], signal.SIGKILL)
        os.killpg(proc.pid, signal.SIGCONT)
        out, _ = proc.communicate(timeout=900)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode != 0, out[-3000:]
    assert "the anchor server changed during this run (pid %d" % first["pid"] in out, out[-3000:]
    assert len(_servers(asv_setup["anchor_dir"])) == 2  # a second anchor was started, and refused


def test_asv_compare_never_pairs_rows_measured_against_different_references(asv_setup):
    """One numba-cuda (both ledger commits are this venv) measured once without a reference and once against
    the anchor: asv keys each value by its ``reference`` parameter, so ``asv compare`` shows every row on
    one side only (n/a on the other) and no ratio between them."""
    bench = r"TimeLaunchPreconfigured.time_launch\((0|1), '\[1, 1\]'"
    for version, env in (("0.29.0", asv_setup["env"]), ("0.30.4", asv_setup["anchor_env"])):
        proc = _asv_run(asv_setup, version, env, bench)
        assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    params = {v: _result(asv_setup, v)["results"][LAUNCH][1][2] for v in ("0.29.0", "0.30.4")}
    assert params["0.29.0"] == ["'wall us, no reference'"]
    assert re.fullmatch(r"'normalized to anchor numba-cuda \S+ build \w+, A0 table [0-9a-f]{8}, R0 3\.70 us'",
                        params["0.30.4"][0])
    out = subprocess.run([PY, "-m", "asv", "--config", str(asv_setup["config"]), "compare", "--machine", MACHINE,
                          "baseline", "v2"], env=asv_setup["env"], capture_output=True, text=True, check=True).stdout
    out = asvcmd.drop_unmeasured_rows(out)  # the suite's other rows: n/a on both sides
    rows = [line for line in out.splitlines() if "TimeLaunchPreconfigured.time_launch(" in line]
    assert len(rows) == 4, out  # 2 argument counts x 2 references: never one row for both
    for row in rows:
        cells = [c.strip() for c in row.strip().strip("|").split("|")]
        assert (cells[1] == "n/a") != (cells[2] == "n/a") and cells[3] == "n/a", row
    assert "no reference" in out and "normalized to anchor numba-cuda" in out
