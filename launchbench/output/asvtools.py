"""asv's configs and command line, for the asv subcommands (launchbench.commands.asv) and the site.

asv has no ``--repo`` option, so pointing it at a local numba-cuda clone (or
at a release ledger, see :mod:`launchbench.environments.ledger`) means a second config
file. ``derive_config`` writes one with every path made absolute, so it works
from any directory through ``asv --config FILE``. ``run_asv`` runs asv with the
command echoed and a failure as one line; the machine labels keep simulator smoke
results apart from GPU results.
"""
from __future__ import annotations

import json
import os
import re
import shlex
import socket
import subprocess
import sys
from pathlib import Path

from ..base import atomic
from ..base.errors import UserError
from ..base.outpaths import check_regular
from ..environments.envs import HOST_SITE_PTH

#: Machine name forced for simulator smoke runs: asv shows it everywhere.
SMOKE_MACHINE = "SIMULATOR-SMOKE"
PATH_KEYS = ("benchmark_dir", "env_dir", "results_dir", "html_dir")


# ----------------------------------------------------------------- configs
MAX_CONFIG_BYTES = 1 << 20  # an asv config is a few KiB


def load_config(path) -> dict:
    """Read an asv config; asv allows // comments, so parse as asv does (json5)."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        check_regular(path, "asv config")  # a FIFO would block, /dev/zero never end
    if not path.is_file():
        raise UserError(f"asv config {path} not found; run from the launchbench checkout or pass --config")
    size = path.stat().st_size
    if size > MAX_CONFIG_BYTES:  # json5 takes minutes over a results file of a few MB
        raise UserError(f"asv config {path} is {size // 1024} KiB, not an asv config (those are a few KiB); "
                        "give an asv.conf.json such as the checkout's")
    try:
        text = path.read_text(encoding="utf-8")
        try:
            import json5
        except ImportError:  # asv depends on json5; fall back to stripping // comments
            conf = json.loads(_strip_line_comments(text))
        else:
            conf = json5.loads(text)
    except (OSError, ValueError) as exc:  # json5 and json both raise ValueError subclasses
        raise UserError(f"asv config {path} is not readable JSON ({str(exc).splitlines()[0] if str(exc) else exc!r}); "
                        "give an asv.conf.json such as the checkout's") from None
    if not isinstance(conf, dict):
        raise UserError(f"asv config {path} holds a JSON {type(conf).__name__}, not an object; "
                        "give an asv.conf.json such as the checkout's")
    if "schema" in conf or conf.get("version", 1) != 1:  # a launchbench document, an asv results file
        what = (f"a launchbench document (schema {str(conf['schema'])[:60]!r})" if "schema" in conf
                else f'not an asv config (its "version" is {str(conf.get("version"))[:20]}, a config\'s is 1)')
        raise UserError(f"asv config {path} is {what}; give an asv.conf.json such as the checkout's")
    return conf


def check_branches(conf: dict) -> None:
    """The config's ``branches`` are branches of its local repo: asv clones the repo and looks them up
    there, and a missing one ends ``asv publish`` in a traceback. URLs are asv's to check."""
    repo, branches = conf.get("repo"), conf.get("branches")
    if not repo or not branches or re.match(r"^[a-z][a-z0-9+.-]*://", repo) or re.match(r"^[\w.-]+@[\w.-]+:", repo):
        return
    found = subprocess.run(["git", "-C", repo, "for-each-ref", "--format=%(refname:short)", "refs/heads"],
                           capture_output=True, text=True, check=False)
    if found.returncode != 0:
        return  # require_numba_cuda_repo says what is wrong with the clone
    have = found.stdout.split()
    missing = [b for b in branches if b not in have]
    if missing:
        raise UserError(f"the asv config's branches {missing} are not branches of {repo} (it has: "
                        f"{', '.join(have[:8]) or 'none'}); create them (git -C {repo} branch NAME REF) or list "
                        "existing ones under \"branches\" in --config")


def _strip_line_comments(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("//"))


def derive_config(base: dict, base_dir, repo=None, results_dir=None, html_dir=None,
                  env_dir=None, matrix=None, branches=None, extra=None) -> dict:
    """A copy of *base* with overrides and every path absolute (relative to *base_dir*)."""
    conf = json.loads(json.dumps(base))
    base_dir = Path(base_dir).resolve()
    overrides = {"results_dir": results_dir, "html_dir": html_dir, "env_dir": env_dir}
    for key, value in overrides.items():
        if value is not None:
            conf[key] = str(Path(value).resolve())
    for key in PATH_KEYS:
        if key in conf:
            conf[key] = str((base_dir / conf[key]).resolve())
    if repo is not None:
        conf["repo"] = resolve_repo(repo)
    if matrix is not None:
        conf["matrix"] = matrix
    if branches is not None:
        conf["branches"] = list(branches)
    if extra:
        conf.update(extra)
    return conf


#: Python that names the env's host-site ``.pth`` as ``p`` (asv runs it with the env's python).
HOST_PTH_CODE = ("import os, sysconfig; "
                 f"p = os.path.join(sysconfig.get_paths()['purelib'], {HOST_SITE_PTH!r})")
#: Takes the host-site ``.pth`` out of the env, if it is there.
REMOVE_HOST_PTH = f"python -c \"{HOST_PTH_CODE}; os.path.exists(p) and os.remove(p)\""
#: Fails the install when numba-cuda does not import from the env's own site.
OWN_COPY_CHECK = ("import importlib.metadata as m, sys, sysconfig; "
                  "own = sysconfig.get_paths()['purelib']; "
                  "at = str(m.distribution('numba-cuda').locate_file('')); "
                  "sys.exit(0 if at.startswith(own) else 'numba-cuda resolves to ' + at + ', not ' + own)")


def offline_config(conf: dict, wheels, host_site=None, launch_method=None) -> dict:
    """*conf* made to build and install every commit from a local wheel folder, no index.

    Why: the GPU machine has no network, and asv's own per-commit builds
    (``asv run A..B``, ``asv continuous``) are the native path users run.
    asv sets ``matrix.env`` variables for every install, build and benchmark
    command, so ``PIP_NO_INDEX``/``PIP_FIND_LINKS`` make each pip call
    offline (``launchbench wheelhouse --asv-builds DIR`` fills the folder).
    The ``cu13`` extra's CUDA wheels are big; with *host_site* the commit's
    wheel installs without them (``--no-deps``) and a ``.pth`` appends the
    machine's site-packages *after* the env's own, so the env's pins win and
    cuda-bindings/NVVM come from the host.

    pip must not see that ``.pth`` while it uninstalls or installs the
    commit: a host that has numba-cuda of the commit's version makes
    ``pip install {wheel_file}`` say "already installed" and install nothing
    (the commit then measures the machine's own numba-cuda: docs/asv.md),
    and ``pip uninstall`` would remove the host's copy. So the ``.pth`` is
    taken away first and written back last, and the install fails unless
    numba-cuda then resolves to the env's own site.
    """
    out = json.loads(json.dumps(conf))
    wheels = str(Path(wheels).resolve())
    matrix = out.setdefault("matrix", {})
    env = matrix.setdefault("env", {})
    env.update({"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": wheels, "PIP_DISABLE_PIP_VERSION_CHECK": "1"})
    if host_site:
        site = str(Path(host_site).resolve())
        out["install_command"] = [
            f"in-dir={{env_dir}} {REMOVE_HOST_PTH}",
            "in-dir={env_dir} python -m pip install --no-deps {wheel_file}",
            f"in-dir={{env_dir}} python -c \"{HOST_PTH_CODE}; open(p, 'w').write({site!r} + chr(10))\"",
            f"in-dir={{env_dir}} python -c \"{OWN_COPY_CHECK}\"",
        ]
        out["uninstall_command"] = [
            f"return-code=any in-dir={{env_dir}} {REMOVE_HOST_PTH}",
            "return-code=any in-dir={env_dir} python -m pip uninstall -y numba-cuda",
        ]
    if launch_method:
        out["launch_method"] = launch_method
    return out


#: asv's build step with a plan (``plan_config``): the plan's wheel of ``{commit}`` when it has one for
#: this Python, else the commit built as launchbench builds it (no isolation, no index, a version of its
#: own, ``0.30.0+g<sha8>``, so that ``pip install`` replaces the last commit's and never finds it
#: "already satisfied"). No braces but asv's own: asv formats every word of the command.
PLAN_BUILD_CODE = (
    "import json, os, shutil, subprocess, sys; "
    "commit, out, src, plan = sys.argv[1:5]; "
    "wheels = dict((c['sha'], c.get('wheel')) for c in json.load(open(plan))['commits']); "
    "wheel = wheels.get(commit) or ''; "
    "tag = os.path.basename(wheel).split('-')[-3:][0]; "
    "ok = os.path.isfile(wheel) and (tag.startswith('py') or tag == 'cp%d%d' % sys.version_info[:2]); "
    "ok and shutil.copy(wheel, out); "
    "version = os.path.join(src, 'numba_cuda', 'VERSION'); "
    "text = '' if ok else open(version).read().strip(); "
    "ok or open(version, 'w').write(text + ('.' if '+' in text else '+') + 'g' + commit[:8] + chr(10)); "
    "ok or subprocess.check_call([sys.executable, '-m', 'pip', 'wheel', '--no-deps', '--no-build-isolation', "
    "'--no-index', '-w', out, src]); "
    "print('launchbench: ' + ('wheel from the plan: ' + wheel if ok else 'built ' + commit[:8]))"
)


def range_tip(text: str) -> str | None:
    """The B of a plan's ``A..B`` when it names a ref (a branch or tag), not a bare SHA: what asv's
    ``branches`` must hold for ``asv publish`` to graph the range (it graphs only commits on them)."""
    tip = (text or "").split("..", 1)[-1].strip()
    if not tip or re.fullmatch(r"[0-9a-fA-F]{7,40}", tip) or any(c in tip for c in "~^@:"):
        return None
    return tip


def plan_config(conf: dict, plan_json, branch: str | None = None) -> dict:
    """*conf* made to install ``asv-plan``'s wheels (built once by launchbench, by SHA) instead of
    building each commit, with one pip process per commit.

    Why: asv's minute per commit is mostly build and install (docs/asv.md, "A range"). The
    plan's wheels carry a version per commit (``+g<sha8>``; commits of identical code share
    their first commit's), so ``pip install`` replaces the previous commit's without a separate
    ``pip uninstall`` or ``--force-reinstall``; ``--no-compile`` leaves byte-compiling to the
    first import, which compiles only the modules a launch imports. A commit the plan did not
    build (or built for another Python) is built as launchbench builds: no isolation, no index.
    """
    out = json.loads(json.dumps(conf))
    if branch:  # asv publish graphs (and finds regressions) only along the config's branches
        out["branches"] = [branch]
    plan = str(Path(plan_json).resolve())
    out["build_command"] = [f"python -c \"{PLAN_BUILD_CODE}\" {{commit}} {{build_cache_dir}} {{build_dir}} {shlex.quote(plan)}"]
    install = list(out.get("install_command") or ["in-dir={env_dir} python -m pip install {wheel_file}[cu13]"])
    out["install_command"] = [c.replace(" pip install ", " pip install --no-compile ", 1) if " pip install " in c else c
                              for c in install]
    # the host-site .pth still goes before pip runs (offline_config); nothing else: install replaces
    out["uninstall_command"] = [c for c in out.get("uninstall_command") or [] if REMOVE_HOST_PTH in c]
    return out


def resolve_repo(repo: str) -> str:
    """A URL unchanged; a local path made absolute after checking it is a git repository."""
    if re.match(r"^[a-z][a-z0-9+.-]*://", repo) or re.match(r"^[\w.-]+@[\w.-]+:", repo):
        return repo
    path = Path(repo).expanduser().resolve()
    if not (path / ".git").exists() and not (path / "objects").is_dir():
        raise UserError(f"{repo} is not a git repository; pass the path of a numba-cuda clone (git clone https://github.com/NVIDIA/numba-cuda)")
    return str(path)


def require_numba_cuda_repo(repo: str) -> None:
    """A local *repo* must have numba-cuda's history (some commit touches ``numba_cuda/``):
    asv would otherwise accept any repository and fail only when it builds, minutes later.
    URLs are asv's to clone and are not checked here."""
    if re.match(r"^[a-z][a-z0-9+.-]*://", repo) or re.match(r"^[\w.-]+@[\w.-]+:", repo):
        return
    found = subprocess.run(["git", "-C", repo, "log", "--all", "-1", "--format=%H", "--", "numba_cuda"],
                           capture_output=True, text=True)
    if found.returncode != 0 or not found.stdout.strip():
        raise UserError(f"{repo} is not a numba-cuda clone (no commit has a numba_cuda/ folder); pass the path of "
                        "one (git clone https://github.com/NVIDIA/numba-cuda)")


def write_asv_config(data: dict, path) -> Path:
    """An asv config file (data first: the config is the subject here)."""
    return Path(atomic.write_json_atomic(path, data, indent=4))


# ----------------------------------------------------------------- asv calls
def asv_command(config, *args, verbose=False) -> list[str]:
    """``asv [--verbose] --config CONFIG ARGS...`` run by this interpreter's asv."""
    return [sys.executable, "-m", "asv", *(["--verbose"] if verbose else []), "--config", str(config), *map(str, args)]


def run_asv(cmd, env=None, check=True, capture=False, log=None, stamp=False):
    """Run an asv command, echoing it; a failure becomes a one-line UserError.

    *stamp* streams asv's output with the elapsed time at each line start,
    partial lines included (asv prints a benchmark's name, then its result
    when done), so a benchmark that hangs shows when it started.
    """
    text = " ".join(shlex.quote(c) for c in cmd)
    print(f"$ {text}", flush=True)
    if log is not None:
        log.append(text)
    if stamp and not capture:
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        stamp_stream(proc.stdout, sys.stdout)
        proc.wait()
    else:
        proc = subprocess.run(cmd, env=env, text=True,
                              stdout=subprocess.PIPE if capture else None,
                              stderr=subprocess.STDOUT if capture else None)
    if check and proc.returncode != 0:
        raise UserError(f"asv failed (exit {proc.returncode}): {text}; see its output above")
    return proc


def stamp_stream(src, dst, clock=None) -> None:
    """Copy bytes from *src* to text stream *dst* as they come, prefixing each
    line with ``[+SECONDS]`` since the start; flushes after every chunk."""
    import time

    clock = clock or time.monotonic
    start = clock()
    at_line_start = True
    fd = src.fileno()
    while True:
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        out = []
        for piece in chunk.decode("utf-8", "replace").splitlines(keepends=True):
            if at_line_start:
                out.append(f"[+{clock() - start:6.1f}s] ")
            out.append(piece)
            at_line_start = piece.endswith(("\n", "\r"))
        dst.write("".join(out))
        dst.flush()
    if not at_line_start:
        dst.write("\n")
        dst.flush()


def ensure_machine(config, machine, env=None, log=None):
    """Record *machine* in asv's machine file (asv refuses unknown names)."""
    run_asv(asv_command(config, "machine", "--yes", "--machine", machine), env=env, log=log)


def default_machine(smoke: bool) -> str:
    return SMOKE_MACHINE if smoke else socket.gethostname().split(".")[0]


def smoke_requested(environ=None) -> bool:
    environ = os.environ if environ is None else environ
    sim = environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0")
    return sim and environ.get("LAUNCHBENCH_SMOKE", "0") not in ("", "0")


def check_machine_label(machine: str, smoke: bool) -> None:
    """Smoke results must carry the simulator label and GPU results must not."""
    if smoke and SMOKE_MACHINE not in machine:
        raise UserError(f"smoke runs (simulator) must use a machine name containing {SMOKE_MACHINE}, not {machine!r}")
    if not smoke and SMOKE_MACHINE in machine:
        raise UserError(f"machine name {machine!r} is reserved for simulator smoke runs; pick another")


def parse_attributes(items) -> list[str]:
    """Validate ``-a NAME=VALUE`` pass-through options for asv run."""
    out = []
    for item in items or ():
        if "=" not in item or not item.split("=", 1)[0].strip():
            raise UserError(f"-a {item!r}: expected ATTRIBUTE=VALUE, e.g. -a repeat=10")
        out += ["-a", item]
    return out


def bench_args(benches) -> list[str]:
    out = []
    for bench in benches or ():
        out += ["-b", bench]
    return out

