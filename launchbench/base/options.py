"""The one grammar of integer-list options (``--args``, ``--nargs``, ``--loops``, ...).

Standard library only: workers import it inside variant environments.

Counts (:func:`parse_counts`: ``--args``, ``--nargs``) are comma-separated items, each a
number ``N`` or an inclusive range ``LO-HI``; spaces around an item are ignored. So ``0-4``,
``0,1,2,3,4`` and ``0, 1, 2-4`` are the same list. The counts must ascend and each appears
once (so the list you write is the list measured, in that order, and ``--loops`` values pair
with it position by position); every count lies in 0..the command's maximum.

Sets (:func:`parse_set`: ``--affinity``, ``--spin`` and the kernel's CPU lists) are written as
counts are, but order and repeats do not matter: they come back sorted and distinct.

Values (:func:`parse_ints`: ``--loops``, ``--gpus``) are comma-separated numbers without ranges, in any
order, repeats allowed; one value may stand for all of *count* positions.

Anything else (an empty list or item, a word, a negative number, a range written downwards, a
count above the maximum, a count given twice or out of order) is a :class:`UserError` of one
line that names the option, the text given and a corrected example.
"""
from __future__ import annotations

import argparse
import math
import re

from .errors import UserError

_NUMBER = re.compile(r"[0-9]+")  # ASCII: "\\d" takes Unicode digits too
_RANGE = re.compile(r"([0-9]+)\s*-\s*([0-9]+)")


def counts_help(maximum: int, default: str = "0,1,2,3,4", what: str = "kernel argument counts") -> str:
    """The ``--help`` text of a counts option (the grammar said the same way everywhere)."""
    example = "0-4 or 0,2,8-10" if maximum >= 10 else "0-2 or 0,2-4"
    return f"{what}: N or LO-HI, comma-separated, ascending, each 0..{maximum}, e.g. {example} (default {default})"


def format_counts(counts) -> str:
    """``[0, 1, 2, 3, 4, 8]`` -> ``"0-4,8"`` (the shortest text :func:`parse_counts` reads back)."""
    out, run = [], []
    for n in sorted(set(counts)):
        if run and n == run[-1] + 1:
            run.append(n)
            continue
        if run:
            out.append(_run_text(run))
        run = [n]
    if run:
        out.append(_run_text(run))
    return ",".join(out)


def _run_text(run: list) -> str:
    if len(run) == 1:
        return str(run[0])
    return f"{run[0]},{run[1]}" if len(run) == 2 else f"{run[0]}-{run[-1]}"


def _items(text, option: str, example: str) -> list[str]:
    text = "" if text is None else str(text)
    if not text.strip():
        raise UserError(f"{option} is empty; give a list like {option} {example}")
    items = [part.strip() for part in text.split(",")]
    if "" in items:
        raise UserError(f"{option} {text!r} has an empty item (a stray comma); write it like {option} {example}")
    return items


def _bad_item(text: str, item: str, option: str, example: str, ranges: bool) -> UserError:
    if re.fullmatch(r"-\s*\d+", item) or (ranges and re.fullmatch(r"\d+\s*-\s*-\s*\d+", item)):
        what = "is negative; the values start at 0"
    else:
        what = "is not a whole number" + (" or a LO-HI range" if ranges else "")
    return UserError(f"{option} {text!r}: {item!r} {what}; write it like {option} {example}")


def _expand(text, option: str, maximum: int, example: str) -> list[int]:
    """Items ``N`` and ``LO-HI`` -> their numbers in the order written, each in 0..*maximum*."""
    counts: list[int] = []
    top = 0
    for item in _items(text, option, example):
        m = _RANGE.fullmatch(item)
        if m:
            lo, hi = int(m.group(1)), int(m.group(2))
            if hi < lo:
                raise UserError(f"{option} {text!r}: the range {item!r} runs downwards; write LO-HI, "
                                f"e.g. {option} {hi}-{lo}")
            top = max(top, hi)
            # capped before expanding: 0-999999999 is no list to build
            values = list(range(lo, min(hi, maximum + 1) + 1))
        elif _NUMBER.fullmatch(item):
            values = [int(item)]
            top = max(top, values[0])
        else:
            raise _bad_item(text, item, option, example, ranges=True)
        counts.extend(values)
    if top > maximum:
        raise UserError(f"{option} {text!r}: {top} is more than {maximum}, the most this command takes; "
                        f"e.g. {option} {format_counts(n for n in counts if n <= maximum) or '0'}")
    return counts


def parse_counts(text, option: str, maximum: int, example: str = "0,1,2,3,4") -> list[int]:
    """*text* -> the ascending, distinct counts it names (ranges ``LO-HI`` allowed), each in
    0..*maximum* (the caller's: what its kernels or launchers take)."""
    counts = _expand(text, option, maximum, example)
    fixed = format_counts(counts)
    for i, n in enumerate(counts):
        if n in counts[:i]:
            raise UserError(f"{option} {text!r}: {n} is given twice; name each count once, e.g. {option} {fixed}")
        if i and n < counts[i - 1]:
            raise UserError(f"{option} {text!r}: {n} comes after {counts[i - 1]}; give the counts in ascending "
                            f"order, e.g. {option} {fixed}")
    return counts


def parse_set(text, option: str, maximum: int, example: str) -> list[int]:
    """*text* -> the sorted distinct numbers it names (ranges ``LO-HI`` allowed; order and
    repeats do not matter), each in 0..*maximum*."""
    return sorted(set(_expand(text, option, maximum, example)))


def parse_ints(text, option: str, minimum: int = 0, count: int | None = None, example: str = "100000",
               maximum: int | None = None) -> list[int]:
    """*text* -> its comma-separated whole numbers (no ranges), each in *minimum*..*maximum*; with
    *count*, one value per position (a single value is repeated *count* times)."""
    values = []
    for item in _items(text, option, example):
        if not _NUMBER.fullmatch(item):
            raise _bad_item(text, item, option, example, ranges=False)
        values.append(int(item))
    low = [v for v in values if v < minimum]
    if low:
        raise UserError(f"{option} {text!r}: {low[0]} is less than {minimum}; write it like {option} {example}")
    high = [v for v in values if maximum is not None and v > maximum]
    if high:
        raise UserError(f"{option} {text!r}: {high[0]} is more than {maximum}, the most it takes; write it like "
                        f"{option} {example}")
    if count is not None:
        if len(values) == 1:
            values = values * count
        elif len(values) != count:
            raise UserError(f"{option} {text!r}: {len(values)} values for {count} positions; give one value "
                            f"or one per position, e.g. {option} {','.join([str(values[0])] * count)}")
    return values


# ---------------------------------------------------------------- numeric options, declared once
#
# Every numeric option of every command takes its ``type=`` from here (argparse calls it while
# parsing, so a bad number is refused before any environment, build, download or worker). Each
# type is finite (NaN and inf refused), ASCII (no Unicode digits), within its range, and its
# upper bound says why it is there.


def _num(value) -> str:
    """1048576.0 -> "1048576", 0.002 -> "0.002" (%g would write 1.04858e+06)."""
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


class Number:
    """An argparse ``type=``: *kind* (int or float) within [*low*, *high*] (*low* excluded when
    *above*); *why* says what the upper bound protects; *words* are also accepted as themselves
    (``auto``)."""

    def __init__(self, kind, low, high, why: str, *, above: bool = False, words: tuple = (),
                 example=None, unit: str = ""):
        self.kind, self.low, self.high, self.why = kind, low, high, why
        self.above, self.words, self.unit = above, tuple(words), unit
        self.example = example if example is not None else (high if low is None else low)
        self.__name__ = "a whole number" if kind is int else "a number"  # argparse's name for the type

    def at_least(self, low, why: str = "") -> "Number":
        """The same type with a higher minimum (e.g. rounds >= 2 where intervals are over rounds)."""
        other = Number(self.kind, low, self.high, self.why, words=self.words, unit=self.unit,
                       example=max(low, self.example) if isinstance(self.example, (int, float)) else low)
        other.low_why = why
        return other

    def describe(self) -> str:
        """The range in words, e.g. ``a whole number 1..1000``."""
        low = "" if self.low is None else (f"> {_num(self.low)}" if self.above else _num(self.low))
        words = " or " + " or ".join(repr(w) for w in self.words) if self.words else ""
        span = f"{low}..{_num(self.high)}" if not self.above else f"{low} and <= {_num(self.high)}"
        return f"{self.__name__} {span}{self.unit}{words}"

    def _refuse(self, text: str, what: str) -> argparse.ArgumentTypeError:
        return argparse.ArgumentTypeError(f"{text!r} {what}; give {self.describe()}, e.g. {_num(self.example)}")

    def __call__(self, text):
        raw = str(text).strip()
        if raw.lower() in self.words:
            return raw.lower()
        if not raw:
            raise self._refuse(str(text), "is empty")
        if not raw.isascii():
            raise self._refuse(str(text), "is not a number (write it with the digits 0-9)")
        try:
            value = float(raw)
        except ValueError:
            raise self._refuse(str(text), "is not a number") from None
        if not math.isfinite(value):
            raise self._refuse(str(text), "is not a finite number")
        if self.kind is int:
            try:
                value = int(raw)
            except ValueError:
                raise self._refuse(str(text), "is not a whole number") from None
        if self.low is not None and (value <= self.low if self.above else value < self.low):
            why = getattr(self, "low_why", "")
            what = f"is {'not above' if self.above else 'less than'} {_num(self.low)}" + (f" ({why})" if why else "")
            raise self._refuse(str(text), what)
        if value > self.high:
            raise self._refuse(str(text), f"is more than {_num(self.high)}, the most it takes: {self.why}")
        return value


# the bounds, each with its reason (shared by compare, history, bisect, pr, mechanisms, peers, breakdown)
REPEATS = Number(int, 1, 10_000, "a round holds repeats x arg counts x variants samples; more makes "
                 "one round last hours")
ROUNDS = Number(int, 1, 100_000, "every round's samples stay in memory and in the JSON")
ROUNDS_FOR_CI = ROUNDS.at_least(2, "intervals are over rounds")
MIN_ROUNDS = ROUNDS.at_least(2, "intervals are over rounds")
WARMUP = Number(int, 0, 10_000_000, "warm-up launches run before every round; beyond ten million a "
                "launch is warm and the round only waits", example=1000)
PINNED_WARMUP = WARMUP.at_least(1, "it warms the measuring CPU's caches for the round")
LOOPS = Number(int, 1, 10_000_000, "launches per sample; ten million launches of about 2 us make "
               "a 20 s sample, and a round is many samples", example=10000)
MAX_LOOPS = int(LOOPS.high)
SAMPLE_TIME = Number(float, 0, 10.0, "seconds per sample; a round is repeats x arg counts x variants "
                     "samples, so longer samples make rounds of hours", above=True, example=0.002, unit=" s")
MAX_TIME = Number(float, 0, 7 * 24 * 3600.0, "seconds; a cap beyond a week is no cap (give 0 for none)",
                  example=120, unit=" s")
PREFETCH = Number(int, 0, 16, "each prefetched round holds a worker, so a CUDA context, per variant "
                  "in GPU memory", words=("auto",), example=2)
TARGET_CI = Number(float, 0, 100.0, "percent of the reference; a half-width wider than the reference "
                   "itself says nothing (0: no target)", example=0.5, unit=" %")
FAIL_IF_SLOWER = Number(float, 0, 1000.0, "percent slower than the reference; a variant ten times "
                        "slower needs no gate", example=2, unit=" %")
THRESHOLD_US = Number(float, 0, 1000.0, "microseconds; a launch costs a few us, so a step beyond "
                      "1 ms is no launch cost", example=0.2, unit=" us")
TIMEOUT_S = Number(float, 0, 7 * 24 * 3600.0, "seconds; beyond a week is no timeout", above=True,
                   example=600, unit=" s")
AA_COMMITS = Number(int, 0, 1000, "commits measured again as an A/A check, each its own env and "
                    "worker per round", example=1)
POINTS = Number(int, 3, 64, "commits measured together per stage, each its own env and a worker "
                "per round", example=5)
PROCESSES = Number(int, 1, 100_000, "each process is a fresh interpreter with its own CUDA context, "
                   "started one after another", example=20)
SAMPLES = Number(int, 1, 10_000, "timed samples per block; a process holds them all", example=1)
LAUNCHES = LOOPS
SEED = Number(int, 0, 2**32 - 1, "a 32-bit shuffle seed, recorded in the JSON", example=1)
PR_NUMBER = Number(int, 1, 10**7, "a pull request number of the GitHub repository", example=288)
PASSES = Number(int, 1, 100, "each pass runs the whole asv suite again", example=1)
FACTOR = Number(float, 1, 100.0, "asv's ratio reported as a change; 100x is no benchmark's noise",
                example=1.05)
SPLIT_MB = Number(int, 1, 1 << 20, "MiB per part; a part larger than 1 TiB is no split", example=40,
                  unit=" MiB")
COUNT_ROUNDS = Number(int, 0, 10, "counts are exact: a few processes per variant show whether they agree, "
                      "more add nothing", example=2)
COUNT_PROCESSES = Number(int, 1, 10, "fresh processes per variant that count; counts are exact, so a few show "
                         "whether they agree", example=2)
COUNT_LAUNCHES = Number(int, 1, 10_000, "launches counted one by one; counting slows a launch many times, "
                        "and every launch gives the same counts", example=20)
TOP_FUNCTIONS = Number(int, 1, 10_000, "functions listed per table; a launch runs a few hundred", example=12)
COUNT_JOBS = Number(int, 1, 64, "counting processes at once; each holds a CUDA context and a CPU", example=8)
DEFAULT_MIN_ROUNDS = 10
FORK_ROUNDS = Number(int, 1, 1000, "the rounds one set of zygotes serves form one unit of the intervals; "
                     "a thousand leaves too few units", example=4)
CUDA_CONNECTIONS = Number(int, 1, 32, "CUDA takes 1 to 32 connections (hardware work queues) per context",
                          words=("auto",), example=1)
TRIES = Number(int, 1, 20, "each stack tried is an environment built and checked; past twenty the release "
               "is not going to work here", example=4)
#: --spawn: how a round's workers start (fresh interpreters, or forked from per-variant zygotes)
SPAWNS = ("fresh", "fork")
DEFAULT_FORK_ROUNDS = 4


def add_spawn_options(group) -> None:
    """``--spawn``, ``--fork-rounds`` and ``--cuda-connections``: how a round's workers start, the same
    for every command whose rounds are launches."""
    group.add_argument("--spawn", choices=SPAWNS, default="fresh",
                       help="fresh (default): every worker a fresh interpreter; fork: forked from a zygote per "
                            "variant that imported numba-cuda once (engine/zygote.py): set-up about halves, "
                            "and the intervals are over clusters of --fork-rounds rounds (docs/scaling.md)")
    group.add_argument("--fork-rounds", type=FORK_ROUNDS, default=DEFAULT_FORK_ROUNDS, metavar="N",
                       help=f"with --spawn fork: rounds one set of zygotes serves, one cluster of the "
                            f"intervals (default {DEFAULT_FORK_ROUNDS})")
    group.add_argument("--cuda-connections", type=CUDA_CONNECTIONS, default="auto", metavar="N",
                       help="CUDA_DEVICE_MAX_CONNECTIONS of every worker (1-32); auto (default): 1 with several "
                            "--gpus lanes (the driver makes contexts one at a time host-wide, and a context of "
                            "one connection is made ~3x faster: more rounds), else the environment's value or "
                            "the driver's default (docs/scaling.md)")


def min_rounds(given: int | None, rounds: int) -> int:
    """``--min-rounds`` against ``--rounds``: the default is 10, or *rounds* when fewer (never
    below 2); one given above *rounds* is refused (the run would end at its cap before it may stop)."""
    if given is None:
        return max(2, min(DEFAULT_MIN_ROUNDS, rounds))
    if given > rounds:
        raise UserError(f"--min-rounds {given} is more than --rounds {rounds}: the run ends at --rounds before "
                        f"it may stop; lower --min-rounds to {rounds} or raise --rounds to {given}")
    return given
