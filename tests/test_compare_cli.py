"""launchbench compare end to end in subprocesses: parsing, one-line errors, a simulator smoke run, Ctrl-C."""
import json
import os
import signal
import subprocess
import sys
import time
import venv

import pytest

from launchbench import cli
from launchbench.base.errors import UserError
from launchbench.commands import compare
from launchbench.engine import pinning

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HERE_ENV = f"env:{sys.prefix}"
FAST = ["--args", "0,1", "--loops", "3", "--repeats", "2", "--warmup", "1"]


def launchbench(*args, env_extra=None, timeout=180):
    env = dict(os.environ)
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-m", "launchbench", *args], capture_output=True, text=True,
                          cwd=ROOT, env=env, timeout=timeout)


def assert_one_line_error(proc, needle):
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    progress = ("launchbench: building", "launchbench: built", "launchbench: CUDA SIMULATOR", "launchbench: round")
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip() and not ln.startswith(progress)]
    assert len(lines) == 1, proc.stderr
    # "launchbench compare: error:": argparse, where the option's type (base/options.py) refused it
    assert lines[0].startswith(("launchbench: error: ", "launchbench compare: error: ")) and needle in lines[0], lines[0]


def parse(*argv):
    return cli.build_parser().parse_args(["compare", *argv])


def test_parsing_defaults_and_order():
    a = parse()
    assert a.items is None and a.repeats == 20 and a.rounds == 400 and a.prefetch == "auto" and a.loops is None
    assert not a.simulator
    assert a.sample_time == 0.002 and a.affinity == "auto" and a.spin == "none" and a.pinned_warmup == 100
    # the default run stops at +/-0.5 % or after 120 s of measurement; 0 turns either off
    assert (a.target_ci, a.max_time) == (0.5, 120.0)
    assert compare.stop_rule(a).target_pct == 0.5 and compare.stop_rule(parse("--target-ci", "0")) is None
    a = parse("--variant", "x=numba-cuda==0.29.0", "--repo", "y=/p", "--variant", "z=tls@x",
              "--loops", "100000,100000,100000,100000,10000", "--rounds", "3", "--simulator",
              "--wheels", "/w", "--system-site-packages", "--env-dir", "/e", "--no-install", "--affinity", "3")
    assert a.items == [("variant", "x=numba-cuda==0.29.0"), ("repo", "y=/p"), ("variant", "z=tls@x")]
    assert (a.rounds, a.wheels, a.env_dir, a.no_install, a.system_site_packages, a.affinity) == (3, "/w", "/e", True, True, "3")


def test_unknown_variant_syntax():
    assert_one_line_error(launchbench("compare", "--simulator", "--variant", "a=numba-cuda>=1",
                                      "--variant", "b=numba-cuda==0.30.4"),
                          "unknown variant spec")


def test_missing_path():
    assert_one_line_error(launchbench("compare", "--simulator", "--repo", "a=/no/such/clone",
                                      "--variant", HERE_ENV.replace("env:", "b=env:")),
                          "does not exist")


def test_not_numba_cuda(tmp_path):
    assert_one_line_error(launchbench("compare", "--simulator", "--repo", f"a={tmp_path}", "--variant", f"b={HERE_ENV}"),
                          "is not a numba-cuda checkout")


def test_no_install_missing_env(tmp_path):
    proc = launchbench("compare", "--simulator", "--no-install", "--env-dir", str(tmp_path),
                       "--variant", "a=numba-cuda==0.29.0", "--variant", f"b={HERE_ENV}")
    assert_one_line_error(proc, "no environment for variant a")


def test_variant_that_cannot_import(tmp_path):
    bare = tmp_path / "bare"
    venv.EnvBuilder(with_pip=False).create(bare)  # no numba at all
    proc = launchbench("compare", "--simulator", *FAST, "--rounds", "1", "--no-report", "-o", str(tmp_path / "r.json"),
                       "--variant", f"a={HERE_ENV}", "--variant", f"b=env:{bare}")
    assert_one_line_error(proc, "variant b cannot import numba-cuda")
    assert "numba-cuda is not installed" in proc.stderr


def test_simulator_refused_without_flag():
    proc = launchbench("compare", "--variant", f"a={HERE_ENV}", "--variant", "b=passthrough@a",
                       env_extra={"NUMBA_ENABLE_CUDASIM": "1"})
    assert_one_line_error(proc, "--simulator")


@pytest.mark.skipif(os.environ.get("LAUNCHBENCH_HAVE_GPU") == "1", reason="a GPU is present")
def test_no_gpu():
    proc = launchbench("compare", "--variant", f"a={HERE_ENV}", "--variant", "b=passthrough@a")
    assert_one_line_error(proc, "no CUDA GPU")


@pytest.mark.slow
def test_build_failure_names_the_log(tmp_path):
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    args = ("compare", "--simulator", "--wheels", str(wheels), "--env-dir", str(tmp_path / "envs"),
            "--variant", "a=numba-cuda==0.29.0", "--variant", f"b={HERE_ENV}")
    proc = launchbench(*args)  # no such wheel in the folder: refused before any build
    assert_one_line_error(proc, f"numba-cuda==0.29.0 is not in --wheels {wheels} (no numba-cuda there at all)")
    assert not (tmp_path / "envs").exists()
    (wheels / "numba_cuda-0.29.0-py3-none-any.whl").write_bytes(b"not a zip")  # there, but pip cannot install it
    proc = launchbench(*args)
    assert_one_line_error(proc, "building variant a (numba-cuda==0.29.0) failed (pip exit")
    log = proc.stderr.strip().splitlines()[-1].rsplit("see the log: ", 1)[1]
    assert os.path.isfile(log)


@pytest.mark.slow
def test_simulator_smoke_end_to_end(tmp_path):
    out = tmp_path / "r.json"
    proc = launchbench("compare", "--simulator", *FAST, "--rounds", "2", "--prefetch", "1", "-o", str(out),
                       "--variant", f"a={HERE_ENV}", "--variant", "b=passthrough@a", "--variant", f"c={HERE_ENV}")
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stdout.splitlines()[0].startswith("*** CUDA SIMULATOR SMOKE RUN: NOT A MEASUREMENT")
    assert "Launch overhead (us/launch; mean +/- stdev of all samples):" in proc.stdout and "Deltas vs a:" in proc.stdout
    doc = json.loads(out.read_text())
    assert doc["simulator"] is True and doc["measurement"] is False and "NOT A MEASUREMENT" in doc["label"]
    assert doc["rounds_completed"] == 2 and not doc["interrupted"]
    assert len(doc["samples"]) == 2 * 2 * 2 * 3  # rounds x repeats x arg counts x variants
    assert {s["variant"] for s in doc["samples"]} == {"a", "b", "c"}
    assert len({s["worker"] for s in doc["samples"]}) == 6  # fresh workers per variant and round
    assert {(d["variant"], d["nargs"]) for d in doc["deltas"]} == {("b", 0), ("b", 1), ("c", 0), ("c", 1)}
    assert [v["mechanism"] for v in doc["variants"]] == [None, "passthrough", None]
    assert all(v["numba_cuda_version"] for v in doc["variants"])
    assert doc["settings"]["loops"] == {"0": 3, "1": 3} and doc["settings"]["prefetch"] == 1
    assert doc["timing"]["wall_s"] >= doc["timing"]["measure_s"] > 0
    if hasattr(os, "sched_getaffinity"):  # pinned by default to the highest CPU we may use
        cpu = [max(os.sched_getaffinity(0))]
        assert doc["settings"]["affinity"] == cpu and all(v["affinity"] == cpu for v in doc["variants"])
    assert {(s["round"], s["nargs"], s["repeat"]) for s in doc["samples"]} == {
        (r, n, k) for r in range(2) for n in (0, 1) for k in range(2)}
    assert (tmp_path / "r.md").is_file() and (tmp_path / "r.png").is_file()


@pytest.mark.slow
def test_interrupt_keeps_completed_rounds(tmp_path):
    out = tmp_path / "r.json"
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="0")
    proc = subprocess.Popen([sys.executable, "-m", "launchbench", "compare", "--simulator", *FAST, "--rounds", "50",
                             "--no-report", "-o", str(out), "--variant", f"a={HERE_ENV}", "--variant", "b=passthrough@a"],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not out.exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.2)
    assert out.exists(), "no round finished"
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr and "interrupted after" in stderr
    doc = json.loads(out.read_text())
    assert doc["interrupted"] is True and doc["interrupt_reason"] == "KeyboardInterrupt"
    assert 1 <= doc["rounds_completed"] < 50
    assert len(doc["samples"]) == doc["rounds_completed"] * 2 * 2 * 2
    assert "INTERRUPTED" in stdout


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.slow
def test_sigterm_is_handled_like_ctrl_c(tmp_path):
    """What CI runners and ``timeout`` send: rounds kept, interrupted=true, Markdown and PNG
    written, workers ended, one line, exit 143 (launchbench/base/signals.py)."""
    out = tmp_path / "r.json"
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="0")
    proc = subprocess.Popen([sys.executable, "-m", "launchbench", "compare", "--simulator", *FAST, "--rounds", "50",
                             "-o", str(out), "--variant", f"a={HERE_ENV}", "--variant", "b=passthrough@a"],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not out.exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.2)
    assert out.exists(), "no round finished"
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 143, stderr
    assert "Traceback" not in stderr and "interrupted after" in stderr
    doc = json.loads(out.read_text())
    assert doc["interrupted"] is True
    assert 1 <= doc["rounds_completed"] < 50
    assert len(doc["samples"]) == doc["rounds_completed"] * 2 * 2 * 2
    assert (tmp_path / "r.md").is_file() and (tmp_path / "r.png").is_file()
    assert not [pid for pid in {s["worker"] for s in doc["samples"]} if _pid_alive(pid)]
    assert not list(tmp_path.glob("*.tmp*")) and not list(tmp_path.glob(".*tmp*"))


def test_sigterm_handler_is_scoped_and_maps_the_exit_status():
    from launchbench.base import signals

    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(signals.Terminated):
        with signals.sigterm_as_interrupt():
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)  # the handler raises before this ends; never reached
    assert signals.terminated() and signals.exit_status(130) == 143 and signals.exit_status(0) == 0
    assert signal.getsignal(signal.SIGTERM) is before
    with signals.sigterm_as_interrupt():
        assert not signals.terminated() and signals.exit_status(130) == 130


# ---------------------------------------------------------------- --affinity

def test_affinity_auto_is_the_highest_available_cpu():
    assert pinning.parse_affinity(None, {0, 3, 5}) == [5]
    assert pinning.parse_affinity("auto", {2}) == [2]
    assert pinning.parse_affinity(" AUTO ", {0, 1}) == [1]


def test_affinity_none_disables_and_lists_are_sorted_distinct():
    assert pinning.parse_affinity("none", {0, 1}) is None
    assert pinning.parse_affinity("3,1,3", {0, 1, 2, 3}) == [1, 3]
    assert pinning.parse_affinity("2", {0, 1, 2, 3}) == [2]
    assert pinning.parse_affinity("1-3", {0, 1, 2, 3}) == [1, 2, 3]  # the --args grammar's ranges


@pytest.mark.parametrize("text, message", [
    ("x", "--affinity 'x': 'x' is not a whole number or a LO-HI range; write it like --affinity 6,7"),
    ("1,,a", "--affinity '1,,a' has an empty item"), (",", "--affinity ',' has an empty item"),
    ("1-0", "the range '1-0' runs downwards"), ("0-2000000", "2000000 is more than 1048575"),
    ("0-9999", "CPU(s) 2-9999 not available to this process (allowed: 0,1)"),
    ("9", "CPU(s) 9 not available"),
])
def test_affinity_errors_name_the_fix(text, message):
    with pytest.raises(UserError) as err:
        pinning.parse_affinity(text, {0, 1})
    assert message in str(err.value) and "\n" not in str(err.value)


def test_bad_prefetch_is_a_one_line_cli_error():
    assert_one_line_error(launchbench("compare", "--simulator", "--prefetch", "-2",
                                      "--variant", f"a={HERE_ENV}", "--variant", "b=passthrough@a"),
                          "argument --prefetch: '-2' is less than 0")
    assert_one_line_error(launchbench("compare", "--simulator", "--prefetch", "1000"),  # once: 1,181 workers
                          "argument --prefetch: '1000' is more than 16, the most it takes: each prefetched round")


def test_affinity_unavailable_cpu_is_a_one_line_cli_error():
    assert_one_line_error(launchbench("compare", "--simulator", "--affinity", "100000",
                                      "--variant", f"a={HERE_ENV}", "--variant", "b=passthrough@a"),
                          "not available to this process")


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc/self/fd (Linux)")
def test_a_full_disk_mid_run_keeps_the_last_checkpoint(tmp_path, capsys, monkeypatch):
    """The second checkpoint refused with ENOSPC, and every JSON write after it: the run stops
    there; one line naming the JSON, which still holds round 1 whole, and saying the reason could
    not be added; no temp file, exit 2 (it used to be a traceback with no file name)."""
    pytest.importorskip("numba")
    import errno

    from launchbench.base import atomic

    out = tmp_path / "r.json"
    real, seen = atomic.os.fsync, []

    def fsync(fd):
        if os.path.basename(os.readlink(f"/proc/self/fd/{fd}")).startswith(".r.json."):
            seen.append(fd)
            if len(seen) >= 2:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(fd)

    monkeypatch.setattr(atomic.os, "fsync", fsync)
    monkeypatch.delenv("NUMBA_ENABLE_CUDASIM", raising=False)
    rc = cli.main(["compare", "--simulator", *FAST, "--rounds", "4", "--target-ci", "0", "--no-report",
                   "-o", str(out), "--variant", f"a={HERE_ENV}", "--variant", "b=passthrough@a"])
    stdout, stderr = capsys.readouterr()
    assert rc == 2 and "Traceback" not in stdout + stderr, stderr
    errors = [ln for ln in stderr.splitlines() if ln.startswith("launchbench: error:")]
    done = int(stderr.split(" of 4 rounds (No space")[0].rsplit(" ", 1)[1])
    assert 2 <= done <= 4 and rc == 2
    assert errors == [f"launchbench: error: the file system refused {out} after {done} of 4 rounds (No space left "
                      f"on device); the run stopped there; kept: {out} (its last checkpoint: 1 of {done} rounds; "
                      "the reason could not be added); free space or choose another folder"], stderr
    doc = json.loads(out.read_text())
    assert doc["rounds_completed"] == 1
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]
