"""``launchbench refs PATH``: branches baseline, v2 and contextvar in a numba-cuda clone, for asv
(launchbench.environments.refs makes them)."""
from __future__ import annotations

from ..base import options as opt
from ..environments.refs import CONTEXTVAR_PR, V2_COMMIT, make_refs


def register(sub) -> None:
    p = sub.add_parser("refs", help="create branches baseline, v2 and contextvar in a numba-cuda clone (for asv)",
                       description="Create the branches asv runs on in a numba-cuda clone: baseline (the v2 "
                       "commit's first parent), v2 (the merge commit) and contextvar (the pull request fetched "
                       "from --remote). Then `asv run baseline..v2` with the config `launchbench asv-config` writes.")
    p.add_argument("path", help="a numba-cuda git clone")
    p.add_argument("--v2", default=V2_COMMIT, help=f"the v2 merge commit (default {V2_COMMIT})")
    p.add_argument("--baseline", help="baseline commit (default: the v2 commit's first parent)")
    p.add_argument("--remote", default="origin", help="remote that has GitHub's pull/N/head refs (default origin)")
    p.add_argument("--pr", type=opt.PR_NUMBER, default=CONTEXTVAR_PR, help=f"contextvar pull request (default {CONTEXTVAR_PR})")
    p.add_argument("--no-fetch", action="store_true", help="do not fetch the contextvar pull request")
    p.add_argument("--force", action="store_true", help="move branches that already exist elsewhere")
    p.set_defaults(func=_run)


def _run(args) -> int:
    result = make_refs(args.path, v2=args.v2, baseline=args.baseline, remote=args.remote,
                       pr=args.pr, fetch=not args.no_fetch, force=args.force)
    for name, (sha, note) in result.items():
        print(f"{name:<11} {sha[:10] if sha else '-':<10}  {note}")
    print("now e.g.: asv run baseline..v2 / asv continuous baseline v2 "
          "(with asv --config from `launchbench asv-config --repo PATH`)")
    return 0
