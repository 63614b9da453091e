"""Output paths are checked before any work (launchbench.base.outpaths), and the commands that write
-o/--output use it: a bad path is one line, exit 2, before anything is built or measured."""
import os
import subprocess
import sys

import pytest

from launchbench import cli
from launchbench.base import outpaths
from launchbench.base.errors import UserError
from launchbench.engine import runner
from launchbench.environments import envs

UNWRITABLE = "/proc/launchbench-test/x.json"  # /proc takes no new files, even from root


def listing(root):
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def test_check_writable_returns_the_absolute_path_and_leaves_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert outpaths.check_writable("r.json", "--output") == str(tmp_path / "r.json")
    assert outpaths.check_writable(str(tmp_path / "new" / "deeper" / "r.json"), "-o") == str(tmp_path / "new/deeper/r.json")
    assert outpaths.check_folder(str(tmp_path / "envs"), "--env-dir") == str(tmp_path / "envs")
    assert listing(tmp_path) == []  # probes removed, missing folders not created


@pytest.mark.parametrize("path, needle", [
    (UNWRITABLE, "cannot write to /proc"),
    ("/proc/launchbench-test/a/b/x.json", "cannot create it in /proc"),
    ("{tmp}", "is a directory"),
    ("{file}/x.json", "is a file, not a folder"),
    ("", "is empty"),
])
def test_check_writable_refuses_in_one_line(tmp_path, path, needle):
    (tmp_path / "f").write_text("x")
    path = path.replace("{tmp}", str(tmp_path)).replace("{file}", str(tmp_path / "f"))
    with pytest.raises(UserError) as err:
        outpaths.check_writable(path, "--output")
    text = str(err.value)
    assert needle in text and text.startswith("--output") and "\n" not in text
    assert listing(tmp_path) == ["f"]


def test_check_folder_and_check_outputs(tmp_path):
    (tmp_path / "f").write_text("x")
    with pytest.raises(UserError, match="is a file, not a folder"):
        outpaths.check_folder(str(tmp_path / "f"), "--env-dir")
    with pytest.raises(UserError, match="--ledger /proc"):
        outpaths.check_folder("/proc/launchbench-test/ledger", "--ledger")
    assert outpaths.check_outputs([(str(tmp_path / "a.json"), "-o"), (None, "--plot")]) == [str(tmp_path / "a.json"), None]
    with pytest.raises(UserError, match="^--plot"):
        outpaths.check_outputs([(str(tmp_path / "a.json"), "-o"), (str(tmp_path), "--plot")])


def _no_work(monkeypatch):
    def fail(*a, **k):
        raise AssertionError("work started before the output path was checked")
    monkeypatch.setattr(envs.EnvManager, "ensure", fail)
    monkeypatch.setattr(runner, "run", fail)


@pytest.mark.parametrize("extra", [[], ["--variant", f"a=env:{sys.prefix}", "--variant", "b=passthrough@a"]])
@pytest.mark.parametrize("option", ["-o", "--markdown", "--plot"])
def test_compare_refuses_an_unwritable_output_before_building(option, extra, capsys, monkeypatch):
    """The reported case: compare --simulator -o /proc/x.json ended in FileNotFoundError '/proc/x.logs'."""
    _no_work(monkeypatch)
    assert cli.main(["compare", "--simulator", option, UNWRITABLE, *extra]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.count("\n") == 1
    assert err.startswith("launchbench: error: ") and "/proc" in err


@pytest.mark.parametrize("argv", [
    ["mechanisms", "--simulator", "-o", UNWRITABLE],
    ["mechanisms", "--pool", "a.json", "b.json", "-o", UNWRITABLE],
    ["peers", "-o", UNWRITABLE],
    ["peers", "--output", UNWRITABLE],
    ["breakdown", "-o", UNWRITABLE],
    ["asv-config", "--repo", ".", "-o", UNWRITABLE],
])
def test_other_writers_refuse_an_unwritable_output(argv, capsys, monkeypatch):
    monkeypatch.setenv("NUMBA_ENABLE_CUDASIM", "1")  # the GPU guards refuse, should the check not come first
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("launchbench: error: --output /proc/") and err.count("\n") == 1, err


def test_report_refuses_an_unwritable_output(tmp_path, capsys):
    results = os.path.join(os.path.dirname(__file__), "fixtures", "compare-1.json.gz")
    assert cli.main(["report", results, "--markdown", UNWRITABLE]) == 2
    assert capsys.readouterr().err.startswith("launchbench: error: --markdown /proc/")
    assert cli.main(["report", str(tmp_path)]) == 2  # a folder, not a results file: no IsADirectoryError
    assert "is a directory; pass the JSON file" in capsys.readouterr().err


# ------------------------------------------------ a full disk after the checks: one line, old file kept

def _fsync_refusing(monkeypatch, code, name):
    """os.fsync raising *code* for files whose temp name starts with ``.<name>.`` (the atomic
    helper's temp files); every other fsync is the real one."""
    import errno as _errno  # noqa: F401

    from launchbench.base import atomic

    real = atomic.os.fsync

    def fsync(fd):
        if os.path.basename(os.readlink(f"/proc/self/fd/{fd}")).startswith(f".{name}."):
            raise OSError(code, os.strerror(code))
        return real(fd)

    monkeypatch.setattr(atomic.os, "fsync", fsync)


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc/self/fd (Linux)")
def test_report_on_a_full_disk_is_one_line_and_keeps_the_last_report(tmp_path, capsys, monkeypatch):
    import errno

    results = os.path.join(os.path.dirname(__file__), "fixtures", "compare-1.json.gz")
    md = tmp_path / "report.md"
    md.write_text("the last good report\n")
    _fsync_refusing(monkeypatch, errno.ENOSPC, "report.md")
    assert cli.main(["report", results, "--markdown", str(md)]) == 2
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err and err.count("\n") == 1, err
    # the report left there is an earlier run's: not called this run's "last complete version"
    assert err == (f"launchbench: error: cannot write {md}: No space left on device; free space or choose "
                   f"another folder; {md} is left as it was, from before this run\n")
    assert md.read_text() == "the last good report\n"
    assert listing(tmp_path) == ["report.md"]  # no temp file left


def test_report_past_a_file_size_limit_is_one_line_and_keeps_the_last_report(tmp_path):
    """A real EFBIG: `launchbench report` in a process whose RLIMIT_FSIZE (ulimit -f) is below the
    report's size, SIGXFSZ ignored as a shell's ulimit leaves it."""
    pytest.importorskip("resource")
    import subprocess
    import textwrap

    results = os.path.join(os.path.dirname(__file__), "fixtures", "compare-1.json.gz")
    md = tmp_path / "report.md"
    md.write_text("kept\n")
    code = textwrap.dedent(f"""
        import resource, signal, sys
        from launchbench import cli
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (512, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
        sys.exit(cli.main(["report", {results!r}, "--markdown", {str(md)!r}]))
        """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr == (f"launchbench: error: cannot write {md}: File too large; the file-size limit (ulimit -f) "
                           f"is below its size; raise it or choose another file system; {md} is left as it was, "
                           f"from before this run\n"), proc.stderr
    assert md.read_text() == "kept\n"
    assert listing(tmp_path) == ["report.md"]


class _Statvfs:
    def __init__(self, bavail, blocks=1000, frsize=4096):
        self.f_bavail, self.f_blocks, self.f_frsize = bavail, blocks, frsize


def test_a_full_file_system_is_refused_before_any_work(tmp_path, monkeypatch):
    """The probe (an empty file) succeeds on a full disk; the free space check does not."""
    monkeypatch.setattr(outpaths.os, "statvfs", lambda path: _Statvfs(0))
    for check, path, option in ((outpaths.check_writable, tmp_path / "r.json", "--output"),
                                (outpaths.check_folder, tmp_path / "asv", "--asv-results")):
        with pytest.raises(UserError) as info:
            check(str(path), option)
        assert str(info.value) == (f"{option} {path}: only 0 KiB free on the file system of {tmp_path} "
                                   "(at least 1024 KiB needed); free space or choose another folder")
    monkeypatch.setattr(outpaths.os, "statvfs", lambda path: _Statvfs(outpaths.MIN_FREE // 4096))
    assert outpaths.check_writable(str(tmp_path / "r.json"), "--output") == str(tmp_path / "r.json")
    monkeypatch.setattr(outpaths.os, "statvfs", lambda path: _Statvfs(0, blocks=0))  # sizes not reported
    assert outpaths.check_folder(str(tmp_path / "asv"), "--asv-results") == str(tmp_path / "asv")
    assert listing(tmp_path) == []


# ---------------------------------------------------------------- the run's plan: aliases, links, odd files, locks

@pytest.fixture
def plan():
    outpaths.release()
    yield outpaths
    outpaths.release()


def _one_line(err) -> str:
    text = str(err.value)
    assert "\n" not in text
    return text


def test_two_outputs_that_are_one_file_are_refused_by_path_symlink_and_hard_link(tmp_path, plan):
    target = tmp_path / "r.json"
    target.write_text("{}")
    (tmp_path / "link.json").symlink_to(target)
    os.link(target, tmp_path / "hard.json")
    for other in ("r.json", "link.json", "hard.json", "sub/../r.json"):
        plan.release()
        with pytest.raises(UserError) as err:
            plan.check_outputs([(str(target), "--output"), (str(tmp_path / other), "--markdown")])
        assert "are the same file" in _one_line(err)
    assert target.read_text() == "{}"


def test_an_output_that_is_an_input_is_refused_either_way_round(tmp_path, plan):
    src = tmp_path / "in.json"
    src.write_text("{}")
    with pytest.raises(UserError) as err:
        plan.check_outputs([(str(src), "--markdown")], inputs=[(str(src), "the results file")])
    assert "is the results file" in _one_line(err)
    plan.release()
    plan.check_outputs([(str(src), "--markdown")])
    with pytest.raises(UserError, match="itself"):
        plan.add_inputs([(str(tmp_path / "." / "in.json"), "the --constraints file")])


@pytest.mark.parametrize("make, needle", [
    (lambda p: os.symlink(p, p), "is a symlink loop"),
    (lambda p: os.symlink(str(p) + ".nowhere", p), "is a dangling symlink"),
    (lambda p: os.mkfifo(p), "is a FIFO, not a file"),
])
def test_odd_paths_are_refused_as_outputs_and_folders(tmp_path, plan, make, needle):
    path = tmp_path / "x.json"
    make(path)
    for check in (lambda: plan.check_outputs([(str(path), "--output")]),
                  lambda: plan.check_folder(str(path / "sub") if "symlink" in needle else str(path), "--env-dir")):
        with pytest.raises(UserError) as err:
            check()
        text = _one_line(err)
        assert needle in text or ("symlink" in needle and "symlink" in text) or "not a folder" in text, text
    assert sorted(os.listdir(tmp_path)) == ["x.json"]


def test_a_read_only_output_and_a_name_not_in_utf8_are_refused(tmp_path, plan):
    ro = tmp_path / "ro.json"
    ro.write_text("{}")
    ro.chmod(0o444)
    if not os.access(ro, os.W_OK):  # root writes read-only files
        with pytest.raises(UserError, match="is read-only"):
            plan.check_outputs([(str(ro), "--output")])
    bad = os.fsdecode(bytes(tmp_path) + b"/r\xff.json")
    with pytest.raises(UserError) as err:
        plan.check_outputs([(bad, "--output")])
    assert "is not valid UTF-8" in _one_line(err) and "\\xff" in str(err.value)


HOLD = """
import sys
from launchbench.base import outpaths
outpaths.check_outputs([(sys.argv[1], "--output")])
print("held", flush=True)
sys.stdin.read()
"""


def _holder(path):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(path)], cwd=root, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_an_output_another_run_writes_is_refused_naming_its_pid(tmp_path, plan, capsys):
    out = tmp_path / "r.json"
    proc = _holder(out)
    try:
        with pytest.raises(UserError) as err:
            plan.check_outputs([(str(out), "--output")])
        assert f"is being written by another launchbench run (pid {proc.pid})" in _one_line(err)
        # the same through the command line, before any work: report's Markdown on a held output
        src = tmp_path / "in.json"
        src.write_text("{}")
        assert cli.main(["report", str(src), "--markdown", str(out)]) == 2
        assert "being written by another launchbench run" in capsys.readouterr().err
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)
    assert not os.path.exists(outpaths.lock_path(str(out)))  # released and removed at its exit
    plan.check_outputs([(str(out), "--output")])  # free again


def test_a_lock_left_by_a_killed_run_is_taken_over(tmp_path, plan):
    out = tmp_path / "r.json"
    proc = _holder(out)
    proc.kill()
    proc.wait(timeout=60)
    assert os.path.exists(outpaths.lock_path(str(out)))  # its file stays, its lock died with it
    plan.check_outputs([(str(out), "--output")])
    assert plan.holds(str(out))
    with open(outpaths.lock_path(str(out))) as fh:
        assert fh.read().strip() == str(os.getpid())
    plan.release()
    assert os.listdir(tmp_path) == []


def test_a_command_leaves_no_lock_and_no_folder_behind(tmp_path, capsys):
    src = tmp_path / "in.json"
    src.write_text("{}")
    assert cli.main(["report", str(src), "--markdown", str(tmp_path / "new" / "r.md")]) == 2  # not a document
    assert sorted(os.listdir(tmp_path)) == ["in.json"]
