"""Build the wheels of a range for launchbench history/bisect ahead of time (WheelCache, keyed by SHA), one per
code-distinct commit (the first of each run of identical code, as history measures them), for an offline GPU machine.

    python lab/recipes/build_range_wheels.py CLONE GOOD BAD [CACHE_DIR [PYTHON]]

Defaults: ~/.cache/launchbench/wheels and the Python 3.12 of pyenv (the GPU machine runs 3.12). Carry the cache as
.whl3/wcache.tar.xz; `bash lab/recipes/setup_env.sh stage` unpacks it into $LB_WCACHE (lab/recipes/settings.sh).
"""
import os
import sys

from launchbench.environments import builds


def main(argv) -> int:
    clone, good, bad = argv[:3]
    cache_dir = argv[3] if len(argv) > 3 else None
    python = argv[4] if len(argv) > 4 else os.path.expanduser("~/.pyenv/versions/3.12.1/bin/python")
    cache = builds.WheelCache(cache_dir=cache_dir, python=python)
    commits = [builds.resolve(clone, good)] + list(builds.first_parent_commits(clone, good, bad))[1:]
    previous = None
    distinct = 0
    for commit in commits:
        ident = builds.code_identity(clone, commit.sha)
        if ident == previous:
            continue
        previous = ident
        distinct += 1
        try:
            print(commit.sha[:10], cache.build(clone, commit), flush=True)
        except Exception as exc:  # noqa: BLE001 - a commit that does not build is reported, the rest go on
            print(commit.sha[:10], "FAILED", exc, flush=True)
    print(f"{distinct} code-distinct commits of {len(commits)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
