"""Per-commit wheels and environments for history, bisect and pr: which commits of a range are
measured (``commit_records``: code identity, A/A checks) and their wheels (builds.WheelCache,
cached by SHA) installed into one environment each (envs.EnvManager)."""
from __future__ import annotations

import concurrent.futures
import os
import sys

from ..base import outpaths
from ..base.errors import UserError
from . import builds, envs, variant_options, variants
from .variant_options import EnvOptions
from .variants import Base


def env_jobs(n: int, cpus: int | None = None) -> int:
    """Environments built at once: half the CPUs, at most 8, at most *n*, at least 1."""
    cpus = cpus if cpus is not None else (os.cpu_count() or 2)
    return max(1, min(n, 8, cpus // 2))


def check_clone(path: str) -> str:
    """The clone's real path, or the one-line error when it is no folder."""
    real = os.path.realpath(os.path.expanduser(path))
    if not os.path.isdir(real):
        raise UserError(f"clone {path} does not exist; pass the path of a local numba-cuda git clone")
    return real


def variant_name(commit) -> str:
    return "g" + commit.sha[:9]


def commit_records(clone: str, commits: list, aa: int = 0, identity=None) -> list[dict]:
    """One record per commit: its code identity, the measured commit whose code it shares
    (``identical_to``), and whether it is measured (the first, every code change, and the
    first *aa* identical ones as A/A checks)."""
    if identity is None:
        def identity(sha):
            return builds.code_identity(clone, sha)
    records, group_head, prev_id, aa_left = [], None, None, aa
    for i, c in enumerate(commits):
        ident = identity(c.sha)
        same = i > 0 and ident == prev_id
        rec = {"sha": c.sha, "short": c.short, "subject": c.subject, "date": c.date, "code_identity": ident,
               "identical_to": group_head if same else None, "measured": not same, "aa": False,
               "variant": None, "wheel": None, "build": None}
        if same and aa_left > 0:
            rec["measured"], rec["aa"] = True, True
            aa_left -= 1
        if not same:
            group_head = c.sha
        prev_id = ident
        records.append(rec)
    return records


class CommitEnvs:
    """The wheel cache and the env manager of a history, bisect or pr run (*opts*: their
    environment options; *target*: the hidden ``--target``, which needs no pins nor extras)."""

    make_overlay = staticmethod(envs.make_overlay)

    def __init__(self, opts: EnvOptions, say, target: str | None = None):
        self.say = say
        python = variant_options.python_path(opts.python) if opts.python else sys.executable
        pins = {} if target else variants.parse_pins(opts.constraints)
        extras = opts.extras if opts.extras is not None else (
            "" if (opts.system_site_packages or target) else "cu13")
        self.cache = builds.WheelCache(cache_dir=opts.wheel_cache, python=python, wheels=opts.wheels,
                                       pins={} if target else pins, log=say)
        self.manager = envs.EnvManager(env_dir=opts.env_dir, python=python, pins=pins, wheels=opts.wheels,
                                       site_from=python if opts.system_site_packages else None, extras=extras,
                                       log=say)

    def build(self, clone: str, records: list) -> None:
        """Wheel and env of every measured commit; a failed build is reported and skipped."""
        if any(rec["measured"] and not self.cache.path_for(rec["sha"]) for rec in records):
            # a wheel to build, so an env too: both folders refused before the first build, not in it
            outpaths.check_folder(self.cache.cache_dir, "--wheel-cache")
            outpaths.check_folder(self.manager.env_dir, "--env-dir")
        jobs = []
        for rec in records:
            if not rec["measured"]:
                continue
            commit = builds.Commit(rec["sha"], rec["short"], rec["subject"], rec["date"])
            try:
                wheel = self.cache.build(clone, commit)
            except builds.BuildFailed as exc:
                rec.update(measured=False, build={"ok": False, "error": exc.message, "log": exc.log_path})
                self.say(f"launchbench: {rec['short']} does not build ({exc.message}); skipped. Log: {exc.log_path}")
                continue
            jobs.append((rec, commit, wheel))

        def make(job):
            _rec, commit, wheel = job
            env = self.manager.ensure(Base("wheelfile", wheel), variant_name(commit))
            envs.check_python_matches(env, variant_name(commit))
            return env

        # each env is its own folder, venv and pip: several at once (bisect's counts pass asks for
        # dozens, each some seconds of pip on its own)
        pool = concurrent.futures.ThreadPoolExecutor(max_workers=env_jobs(len(jobs)))
        try:
            for (rec, commit, wheel), env in zip(jobs, pool.map(make, jobs)):
                rec.update(wheel=wheel, variant=variant_name(commit), build={"ok": True}, python=env.python,
                           env=env.path)
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
