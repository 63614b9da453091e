"""launchbench.base.atomic: whole files or nothing, shareable modes."""
import os
import stat

import pytest

from launchbench.base.atomic import write_json_atomic, write_text_atomic


def test_replaces_whole_file_and_respects_umask(tmp_path):
    path = tmp_path / "sub" / "r.json"
    old = os.umask(0o022)
    try:
        write_json_atomic(path, {"a": 1})
    finally:
        os.umask(old)
    assert path.read_text() == '{\n "a": 1\n}\n'
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    assert os.listdir(path.parent) == ["r.json"]  # no temp file left behind


def test_unserialisable_document_leaves_the_old_file(tmp_path):
    path = tmp_path / "r.json"
    write_text_atomic(path, "kept\n")
    with pytest.raises(ValueError):
        write_json_atomic(path, {"a": float("nan")})
    assert path.read_text() == "kept\n"
    assert os.listdir(tmp_path) == ["r.json"]


# ------------------------------------------------ writes the file system refuses: one line, old file kept

import errno  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import textwrap  # noqa: E402

from launchbench.base import atomic  # noqa: E402
from launchbench.base.errors import UserError  # noqa: E402


def _refuse(code):
    def fsync(fd):
        raise OSError(code, os.strerror(code))
    return fsync


@pytest.mark.parametrize("code, needle", [(errno.ENOSPC, "No space left on device; free space"),
                                          (errno.EDQUOT, "free space (disk quota)"),
                                          (errno.EFBIG, "ulimit -f"),
                                          (errno.EACCES, "choose a writable folder")])
def test_a_refused_write_is_one_line_keeps_the_old_file_and_no_temp(tmp_path, monkeypatch, code, needle):
    path = tmp_path / "results.json"
    write_json_atomic(path, {"round": 1})
    monkeypatch.setattr(atomic.os, "fsync", _refuse(code))
    with pytest.raises(UserError) as info:
        write_json_atomic(path, {"round": 2})
    line = str(info.value)
    assert "\n" not in line and line.startswith(f"cannot write {path}: {os.strerror(code)}")
    assert needle in line and f"the last complete version is still in {path}" in line
    assert isinstance(info.value, OSError) and info.value.errno == code  # still an OSError for callers
    assert path.read_text() == '{\n "round": 1\n}\n'
    assert os.listdir(tmp_path) == ["results.json"]


def test_a_refused_first_write_says_nothing_was_kept(tmp_path, monkeypatch):
    class Full:
        def __init__(self, fd, mode):
            self.fh = open(fd, mode)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.fh.close()

        def write(self, data):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(atomic.os, "fdopen", Full)
    with pytest.raises(UserError, match="No space left on device") as info:
        write_text_atomic(tmp_path / "report.md", "x")
    assert "last complete" not in str(info.value)
    assert os.listdir(tmp_path) == []


def test_a_file_in_the_way_of_the_folder_is_one_line(tmp_path):
    (tmp_path / "afile").write_text("x")
    for target in (tmp_path / "afile" / "r.json", tmp_path / "afile" / "sub" / "r.json"):
        with pytest.raises(UserError, match="a part of the path is a file"):
            write_json_atomic(target, {})
    assert os.listdir(tmp_path) == ["afile"]


def test_other_errors_stay_what_they_are(tmp_path, monkeypatch):
    monkeypatch.setattr(atomic.os, "fsync", _refuse(errno.EIO))
    with pytest.raises(OSError) as info:
        write_json_atomic(tmp_path / "r.json", {})
    assert not isinstance(info.value, UserError) and info.value.errno == errno.EIO
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("ours", [True, False])
def test_a_file_size_limit_mid_write_keeps_the_last_complete_file(tmp_path, ours):
    """A real EFBIG: a child process with RLIMIT_FSIZE below the new file's size (SIGXFSZ ignored,
    as a shell's ulimit -f does not), writing through the atomic helper. The file left is called
    "the last complete version" only when this run wrote it; an earlier run's file is named as such."""
    pytest.importorskip("resource")
    path = tmp_path / "results.json"
    path.write_text("kept\n")
    code = textwrap.dedent(f"""
        import resource, signal, sys
        from launchbench.base.atomic import write_text_atomic
        from launchbench.base.errors import UserError
        if {ours!r}:
            write_text_atomic({str(path)!r}, "kept\\n")
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
        try:
            write_text_atomic({str(path)!r}, "y" * 100000)
        except UserError as exc:
            print(exc)
            sys.exit(2)
        """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout.startswith(f"cannot write {path}: File too large; the file-size limit")
    if ours:
        assert proc.stdout.rstrip().endswith(f"; the last complete version is still in {path}")
    else:
        assert proc.stdout.rstrip().endswith(f"; {path} is left as it was, from before this run")
        assert "last complete version" not in proc.stdout
    assert path.read_text() == "kept\n"
    assert os.listdir(tmp_path) == ["results.json"]


def test_an_interrupt_during_the_write_keeps_the_old_file_and_no_temp(tmp_path, monkeypatch):
    """Ctrl-C or SIGTERM (raised as a KeyboardInterrupt) mid-write: the old file whole, no temp."""
    path = tmp_path / "results.json"
    write_json_atomic(path, {"round": 1})

    def interrupted(fd):
        raise KeyboardInterrupt

    monkeypatch.setattr(atomic.os, "fsync", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_json_atomic(path, {"round": 2})
    assert path.read_text() == '{\n "round": 1\n}\n'
    assert os.listdir(tmp_path) == ["results.json"]
