"""Read ``asv compare`` tables back: which rows asv flagged, their values and ratios.

Why: the native-asv acceptance is about what ``asv compare`` itself says
(flagged slower or not, at which ratio), next to launchbench compare's
paired intervals measured the same hour. Parsing asv's own text (not
recomputing from its result files) checks exactly what a user reads.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

_UNITS = {"ns": 1e-3, "μs": 1.0, "µs": 1.0, "us": 1.0, "ms": 1e3, "s": 1e6}
_VALUE = re.compile(r"^\s*([0-9.]+(?:e[-+]?\d+)?)(?:±[0-9.]+(?:e[-+]?\d+)?)?\s*(ns|μs|µs|us|ms|s)\s*$")
#: asv's change marks: + slower, - faster, x/! failed or became failing; blank: same. A ratio written
#: ``~1.04`` is one asv found not significant (its test over the samples), whatever the factor.
_MARKS = {"+": "slower", "-": "faster", "!": "failed", "x": "failed", "": "same"}


@dataclass(frozen=True)
class Row:
    mark: str          # asv's change column, stripped
    verdict: str       # slower / faster / insignificant / failed / same
    before_us: float | None
    after_us: float | None
    ratio: float | None
    benchmark: str     # e.g. bench_launch.TimeLaunchPreconfigured.time_launch(0, '[1, 1]')
    significant: bool  # False when asv wrote the ratio as ~R


def parse_value_us(text: str) -> float | None:
    """``11.7±0.1μs`` -> 11.7 (µs); ``n/a``/``failed`` -> None."""
    m = _VALUE.match(text)
    if not m:
        return None
    return float(m.group(1)) * _UNITS[m.group(2)]


def parse_table(text: str) -> list[Row]:
    """Every data row of an ``asv compare`` table (with or without ``--split``)."""
    rows = []
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("|") or set(line) <= set("|-: "):
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) < 5 or cells[0].lower() == "change":
            continue
        mark, before, after, ratio, name = cells[0], cells[1], cells[2], cells[3], "|".join(cells[4:])
        try:
            ratio_value = float(ratio.lstrip("~"))
        except ValueError:
            ratio_value = None
        rows.append(Row(mark, _MARKS.get(mark, mark), parse_value_us(before), parse_value_us(after),
                        ratio_value, name, not ratio.startswith("~")))
    return rows


def args_of(benchmark: str) -> int | None:
    """The argument count of a launch row: ``...time_launch(3, '[1, 1]')`` -> 3."""
    m = re.search(r"\((\d+)(?:,|\))", benchmark)
    return int(m.group(1)) if m else None
