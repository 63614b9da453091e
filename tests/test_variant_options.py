"""The environment options checked before any work (environments/variant_options.py): --python found on
PATH like a shell finds it and probed with a bound (a program that never answers is killed with what it
started), --extras only numba-cuda's."""
import os
import shutil
import signal
import sys
import time

import pytest

from launchbench.base.errors import UserError
from launchbench.environments import variant_options as vo


def test_a_python_named_on_path_resolves(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    name = os.path.basename(sys.executable)
    assert vo.python_path(name) == shutil.which(name)
    vo.check_env_options(vo.EnvOptions(python=name))
    with pytest.raises(UserError, match="nor a program on PATH"):
        vo.python_path("no-such-python-anywhere")


@pytest.mark.skipif(not hasattr(os, "killpg"), reason="sessions are POSIX")
def test_a_program_that_never_answers_is_refused_and_killed_with_its_children(tmp_path):
    pidfile = tmp_path / "child.pid"
    script = tmp_path / "python"
    script.write_text(f"#!/bin/sh\nsleep 600 &\necho $! > {pidfile}\nwait\n")
    script.chmod(0o755)
    with pytest.raises(UserError) as err:
        vo.probe_python(str(script), "python", timeout=2)
    assert "did not answer within 2 s" in str(err.value) and "\n" not in str(err.value)
    child = int(pidfile.read_text())
    for _ in range(100):  # a liveness poll: SIGKILL has been sent, the kernel reaps it
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        with open(f"/proc/{child}/stat") as fh:
            if fh.read().rsplit(")", 1)[1].split()[0] == "Z":
                break
        time.sleep(0.1)
    else:
        os.kill(child, signal.SIGKILL)
        pytest.fail("the probe's child outlived it")


def test_a_program_that_is_no_python_is_refused():
    with pytest.raises(UserError, match="is not a Python 3 interpreter"):
        vo.probe_python("/bin/true", "/bin/true")


@pytest.mark.parametrize("extras, ok", [("cu13", True), ("cu12, test", True), ("", True), ("bogus", False),
                                        ("cu13,cuda", False)])
def test_extras_are_numba_cudas(extras, ok):
    opts = vo.EnvOptions(extras=extras)
    if ok:
        vo.check_env_options(opts)
    else:
        with pytest.raises(UserError, match="numba-cuda has no extra"):
            vo.check_env_options(opts)
