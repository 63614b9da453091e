"""The options more than one command takes, each declared once: its flag, type, default and
help (as asv's ``commands/common_args.py``). A command adds a group with ``add_X(parser_or_group)``;
where commands keep a different default or wording for the same option, both sit here, next to
each other, with the reason. The modules below ``commands/`` never see the parsed Namespace:
``env_options``, ``commit_settings`` and ``arg_setup`` turn it into keywords or a frozen settings
object. A shared helper of the commands, not a command (``cli.SUBCOMMAND_MODULES`` lists those).
"""
from __future__ import annotations

import argparse
import os

from ..base import childenv, outpaths
from ..base import options as opt
from ..base.errors import UserError
from ..base.options import counts_help
from ..engine.commitcounts import MAX_JOBS as MAX_COUNT_JOBS
from ..engine.history import CommitRun
from ..environments.variant_options import EnvOptions
from ..workloads import argkinds

# ---------------------------------------------------------------- defaults (one source each)

#: --args: the kernel argument counts every timing command starts from.
ARGS = "0,1,2,3,4"

#: --sample-time. compare and breakdown take short samples, so a variant's and the reference's
#: sample of one repeat slot share the machine's state; history, bisect and pr (one variant per
#: commit, many commits per round) keep the 0.004 s their committed results were measured with.
SAMPLE_TIME_COMPARE = 0.002
SAMPLE_TIME_COMMITS = 0.004

#: --repeats. compare: 20 samples per variant, arg count and round; history, bisect and pr: 10,
#: as their committed results (every commit of a range is a variant, so a round is long already);
#: peers: 5 per launcher (one fresh process a round, every launcher interleaved).
REPEATS_COMPARE = 20
REPEATS_COMMITS = 10
REPEATS_PEERS = 5

#: --warmup: launches per arg count before timing (breakdown's paired mode: its own, below).
WARMUP = 1000

#: --threshold of history, bisect and pr (us).
THRESHOLD_US = 0.2


# ---------------------------------------------------------------- variants and environments

class Ordered(argparse.Action):
    """--repo and --variant append (option, value) to one list, keeping command-line order."""

    def __call__(self, parser, namespace, values, option_string=None):
        items = list(getattr(namespace, self.dest, None) or [])
        items.append((option_string.lstrip("-"), values))
        setattr(namespace, self.dest, items)


def add_repo(group, help="a numba-cuda checkout, built into its own virtualenv (repeatable)") -> None:
    group.add_argument("--repo", dest="items", action=Ordered, metavar="NAME=PATH", help=help)


def add_variant(group, help: str) -> None:
    group.add_argument("--variant", dest="items", action=Ordered, metavar="NAME=SPEC", help=help)


def add_reference(group, help="variant the deltas are taken against (default: the first)") -> None:
    group.add_argument("--reference", help=help)


def add_env_options(e, commits: bool = False, releases: bool = False) -> None:
    """How environments are found or built: the variant commands' (compare, counts, breakdown)
    or, with *commits*, the per-commit ones of history, bisect and pr (wheels built by SHA);
    *releases*: those of ``releases`` (no wheel is built, so no --wheel-cache)."""
    if commits:
        if not releases:
            e.add_argument("--wheel-cache", metavar="DIR",
                           help="where per-commit wheels are cached by SHA (default ~/.cache/launchbench/wheels)")
        e.add_argument("--env-dir", help="where per-commit envs are cached (default ~/.cache/launchbench/envs)")
        e.add_argument("--python", help="interpreter that builds the wheels and the envs (default: this one)")
        e.add_argument("--wheels", metavar="DIR",
                       help="offline: build and install from DIR (pip --no-index --find-links DIR)")
        e.add_argument("--system-site-packages", action="store_true",
                       help="envs also see the site-packages of --python (after their own)")
        e.add_argument("--constraints", metavar="FILE", help="pins for the envs (default: constraints.txt's)")
        e.add_argument("--extras", default=None,
                       help="numba-cuda extras (default cu13, none with --system-site-packages)")
        add_pass_env(e)
        return
    e.add_argument("--env-dir", help="where variant envs are cached (default ~/.cache/launchbench/envs)")
    e.add_argument("--no-install", action="store_true", help="reuse existing envs only; error if one is missing")
    e.add_argument("--python", help="interpreter for new envs (default: this one)")
    e.add_argument("--wheels", metavar="DIR", help="install offline from DIR (pip --no-index --find-links DIR)")
    e.add_argument("--system-site-packages", action="store_true",
                   help="envs also see the site-packages of --python (after their own): for hosts "
                        "whose CUDA packages are installed there")
    e.add_argument("--constraints", metavar="FILE", help="pins for built envs (default: constraints.txt's)")
    e.add_argument("--extras", default=None,
                   help="numba-cuda extras to install (default cu13, or none with --system-site-packages)")
    add_pass_env(e)


def env_name(text: str) -> str:
    """``--pass-env``'s type: one environment variable's name."""
    if not childenv.is_name(text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a variable name (letters, digits and _; give NAME, "
                                         "not NAME=VALUE), e.g. --pass-env HF_TOKEN")
    return text


def add_pass_env(e) -> None:
    e.add_argument("--pass-env", action="append", metavar="NAME", type=env_name,
                   help="builds and workers run the code under test without the caller's tokens and "
                        "credentials (names like *TOKEN*, *SECRET*, *_KEY, *PASSWORD*, AWS_*); pass NAME "
                        "to them anyway (repeatable; the documents record names only)")


def env_options(ns) -> EnvOptions:
    """The environment options of a parsed command line (those its command lacks: their defaults)."""
    return EnvOptions(env_dir=ns.env_dir, python=ns.python, wheels=ns.wheels,
                      system_site_packages=ns.system_site_packages, constraints=ns.constraints, extras=ns.extras,
                      no_install=getattr(ns, "no_install", False), wheel_cache=getattr(ns, "wheel_cache", None))


# ---------------------------------------------------------------- what is launched

def add_args(group, maximum: int, default: str = ARGS, what: str | None = None) -> None:
    """--args: the kernel argument counts, 0..*maximum* (what the command's kernels or launchers take)."""
    group.add_argument("--args", default=default,
                       help=counts_help(maximum, default, **({"what": what} if what else {})))


def add_arg_kind(group) -> None:
    """``--arg-kind`` and ``--dispatch``, the same for every command that launches kernels."""
    group.add_argument("--arg-kind", default="array", choices=argkinds.KINDS,
                       help="kernel arguments: float32[1] device arrays (default), Python floats, both "
                            "alternating (arrays first), CuPy arrays or torch CUDA tensors")
    group.add_argument("--dispatch", default="lazy", choices=argkinds.DISPATCHES,
                       help="lazy: cuda.jit(k), typed at each launch (default); eager: "
                            "cuda.jit('void(float32[::1], ...)')(k), one signature compiled up front")


def arg_setup(ns) -> dict:
    """The worker set-up fields of ``--arg-kind``/``--dispatch`` (``argkinds.argument_setup``)."""
    return argkinds.argument_setup(getattr(ns, "arg_kind", None), getattr(ns, "dispatch", None))


# ---------------------------------------------------------------- measurement

def add_repeats(group, default: int | None, help: str, shown: str | None = None) -> None:
    """--repeats: *help* names what one sample is of; the default (or *shown*, for a mode's own) is appended."""
    group.add_argument("--repeats", type=opt.REPEATS, default=default,
                       help=f"{help} (default {default if shown is None else shown})")


def add_rounds(group, default: int | None, help: str, for_ci: bool = False) -> None:
    """--rounds; *for_ci*: at least 2 (history, bisect, pr: their intervals are over rounds)."""
    group.add_argument("--rounds", type=opt.ROUNDS_FOR_CI if for_ci else opt.ROUNDS, default=default, help=help)


def add_sample_time(group, default: float, help: str = "seconds per sample", why: str = "") -> None:
    group.add_argument("--sample-time", type=opt.SAMPLE_TIME, default=default, help=f"{help} (default {default}{why})")


def add_warmup(group, default: int = WARMUP, tail: str = "") -> None:
    group.add_argument("--warmup", type=opt.WARMUP, default=default,
                       help=f"launches per arg count before timing (default {default}{tail})")


#: --affinity's help, per command (what is pinned differs: every worker, the measuring process, ...)
AFFINITY_HELP = {
    "compare": "pin every worker to these CPUs while timing, e.g. 7 or 6,7; 'auto' (default): the "
               "highest-numbered CPU this process may use; 'none': no pinning",
    "commits": "measuring CPU(s) (default: the highest)",
    "breakdown": "measuring CPU(s), as compare (default auto)",
    "peers": "CPU(s) the workers are pinned to while timing ('auto': the highest; 'none')",
    "mechanisms": "pin the measuring process to these CPUs, e.g. 7 or 6,7; 'auto' (default): "
                  "the highest-numbered CPU it may use; 'none': no pinning",
}


def add_affinity(group, command: str, metavar: str | None = "CPUS") -> None:
    extra = {"metavar": metavar} if metavar else {}
    group.add_argument("--affinity", default="auto", help=AFFINITY_HELP[command], **extra)


#: --prefetch's help, per command
PREFETCH_HELP = {
    "compare": "rounds whose workers are set up ahead, on the CPUs that do not measure, while a "
               "round measures; 'auto' (default): up to 4, as many as those CPUs can host; 0: none "
               "(each worker needs a CUDA context, so lower it on a GPU with little memory)",
    "commits": "rounds set up ahead (default auto)",
    "breakdown": "rounds set up ahead (default auto, as compare)",
    "mechanisms": "processes set up ahead on the CPUs that do not measure (default: auto, up to 4)",
}


def add_prefetch(group, command: str) -> None:
    group.add_argument("--prefetch", type=opt.PREFETCH, default="auto", help=PREFETCH_HELP[command])


#: --gpus's help, per command
GPUS_HELP = {
    "compare": "spread the rounds over these GPUs, one lane each with its own share of the CPUs, "
               "e.g. 0,1, or 'all'; the rounds pool into one interval, with a per-lane check "
               "(engine/lanes.py). Default: one GPU, as before",
    "commits": "spread the rounds over these GPUs (e.g. 0,1 or 'all'), one lane each with its own "
               "CPUs; rounds pool, lanes are checked against each other (default: one GPU)",
}


def add_gpus(group, command: str) -> None:
    group.add_argument("--gpus", metavar="IDS", default=None, help=GPUS_HELP[command])


def add_simulator(group, help: str) -> None:
    group.add_argument("--simulator", action="store_true", help=help)


def add_max_time(group, default: float | None, help: str, metavar: str | None = None) -> None:
    extra = {"metavar": metavar} if metavar else {}
    group.add_argument("--max-time", type=opt.MAX_TIME, default=default, help=help, **extra)


def add_fail_if_slower(group, help: str) -> None:
    group.add_argument("--fail-if-slower", type=opt.FAIL_IF_SLOWER, default=None, metavar="PCT", help=help)


def add_min_rounds(group, what: str = "never stop") -> None:
    group.add_argument("--min-rounds", type=opt.MIN_ROUNDS, default=None,
                       help=f"{what} before this many rounds (default {opt.DEFAULT_MIN_ROUNDS}, or --rounds "
                            "when fewer)")


def add_target(group) -> None:
    """A hidden option: time a Python callable (``MODULE:FUNC``) per variant or commit (tests on CPU)."""
    group.add_argument("--target", metavar="MODULE:FUNC", help=argparse.SUPPRESS)


# ---------------------------------------------------------------- output

def add_output(group, default: str | None, help: str) -> None:
    group.add_argument("--output", "-o", default=default, help=help)


def add_quiet(group, short: bool = False, help: str = "no progress output") -> None:
    group.add_argument(*(("--quiet", "-q") if short else ("--quiet",)), action="store_true", help=help)


def add_markdown(group, help: str = "Markdown report (default: next to --output, .md)", metavar: str | None = None) -> None:
    extra = {"metavar": metavar} if metavar else {}
    group.add_argument("--markdown", help=help, **extra)


def add_no_report(group, help: str = "write only the JSON and the table") -> None:
    group.add_argument("--no-report", action="store_true", help=help)


def report_paths(ns, output: str, kinds=("markdown", "plot")) -> dict:
    """The reports a run writes beside its JSON *output* (``{"markdown": PATH, "plot": PATH}``, by
    the options in *kinds*), none with ``--no-report``: an explicit ``--markdown``/``--plot`` beside
    it is refused, not silently dropped."""
    given = {k: getattr(ns, k, None) for k in kinds}
    if getattr(ns, "no_report", False):
        named = [f"--{k}" for k, v in given.items() if v is not None]
        if named:
            raise UserError(f"--no-report writes no report, yet {' and '.join(named)} names one; drop "
                            f"{' and '.join(named)} or --no-report")
        return {k: None for k in kinds}
    stem = os.path.splitext(output)[0]
    suffix = {"markdown": ".md", "plot": ".png", "html": ".html"}
    return {k: v if v is not None else stem + suffix[k] for k, v in given.items()}


_REPORT_NAMES = {"markdown": "Markdown report", "plot": "PNG plot", "html": "HTML report"}


def plan_outputs(ns, output: str, reports: dict, inputs=()) -> str:
    """Check and claim a run's outputs before any work (``base/outpaths.py``): the JSON *output*, its
    *reports* (``report_paths``) and its ``NAME.logs`` folder, none the same as another or as an
    input (``--constraints`` and *inputs*); the JSON's absolute path."""
    pairs = [(output, "--output")]
    for kind, path in reports.items():
        if path is not None:
            pairs.append((path, f"--{kind}" if getattr(ns, kind, None) is not None else
                          f"the {_REPORT_NAMES[kind]} (beside --output)"))
    ins = [(getattr(ns, "constraints", None), "the --constraints file"), *inputs]
    full = outpaths.check_outputs(pairs, inputs=ins)[0]
    outpaths.check_derived(os.path.splitext(full)[0] + ".logs", "the logs folder (beside --output)", folder=True)
    return full


# ---------------------------------------------------------------- history, bisect and pr

def add_clone(p) -> None:
    p.add_argument("clone", help="a local numba-cuda clone (git)")


def add_commit_options(p, default_output: str | None, releases: bool = False) -> None:
    """The build, env and measurement options history, bisect, pr and releases share (no --output when
    *default_output* is None: pr writes a folder)."""
    add_env_options(p.add_argument_group("builds and environments"), commits=True, releases=releases)
    m = p.add_argument_group("measurement (compare's method)")
    add_args(m, argkinds.MAX_ARGS)
    add_repeats(m, REPEATS_COMMITS, "samples per commit, arg count and round")
    add_sample_time(m, SAMPLE_TIME_COMMITS)
    add_warmup(m)
    add_affinity(m, "commits")
    add_prefetch(m, "commits")
    opt.add_spawn_options(m)
    add_gpus(m, "commits")
    m.add_argument("--threshold", type=opt.THRESHOLD_US, default=THRESHOLD_US,
                   help=f"history, pr, releases: a step counts when its 95%% interval lies wholly beyond +/- this many us; "
                        f"bisect: a segment whose step is surely smaller is ruled out (default {THRESHOLD_US})")
    add_max_time(m, None, "cap on seconds of measurement (no new round after it)")
    add_simulator(m, "smoke mode under the CUDA simulator; NOT a measurement")
    add_target(m)  # time a Python callable per commit (tests on CPU)
    o = p.add_argument_group("output")
    if default_output:
        add_output(o, default_output, f"JSON results (default {default_output})")
    add_quiet(o)


def add_commit_counts(p) -> None:
    """The counts pass of history, bisect and releases (one short process per commit or point, before any timing)."""
    c = p.add_argument_group("counts (exact Python-level counts per commit, before any timing)")
    c.add_argument("--no-counts", dest="counts", action="store_false",
                   help="skip the counts pass: timing only")
    c.add_argument("--count-jobs", type=opt.COUNT_JOBS, default=None, metavar="N",
                   help=f"counting processes at once (default: half the CPUs, 1 to {MAX_COUNT_JOBS})")


def commit_settings(ns) -> CommitRun:
    """``add_commit_options``' measurement options as the engine's settings (``engine.history.Session``)."""
    return CommitRun(repeats=ns.repeats, sample_time=ns.sample_time, warmup=ns.warmup, affinity=ns.affinity,
                     prefetch=ns.prefetch, gpus=ns.gpus, threshold=ns.threshold, max_time=ns.max_time,
                     simulator=ns.simulator, target=ns.target, quiet=ns.quiet,
                     count_jobs=getattr(ns, "count_jobs", None), spawn=ns.spawn, fork_rounds=ns.fork_rounds,
                     cuda_connections=ns.cuda_connections)
