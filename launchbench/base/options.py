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

import re

from .errors import UserError

_NUMBER = re.compile(r"\d+")
_RANGE = re.compile(r"(\d+)\s*-\s*(\d+)")


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


def parse_ints(text, option: str, minimum: int = 0, count: int | None = None, example: str = "100000") -> list[int]:
    """*text* -> its comma-separated whole numbers (no ranges), each >= *minimum*; with *count*,
    one value per position (a single value is repeated *count* times)."""
    values = []
    for item in _items(text, option, example):
        if not _NUMBER.fullmatch(item):
            raise _bad_item(text, item, option, example, ranges=False)
        values.append(int(item))
    low = [v for v in values if v < minimum]
    if low:
        raise UserError(f"{option} {text!r}: {low[0]} is less than {minimum}; write it like {option} {example}")
    if count is not None:
        if len(values) == 1:
            values = values * count
        elif len(values) != count:
            raise UserError(f"{option} {text!r}: {len(values)} values for {count} positions; give one value "
                            f"or one per position, e.g. {option} {','.join([str(values[0])] * count)}")
    return values
