"""How much narrower is a bisect segment's pooled step with weights 1/level^2 than with the plain
mean over the arg counts (docs/history.md, ``bisection.pooled_rounds``)?

    python lab/recipes/pooling_weights.py BISECT.json[.gz] ...

For every timing stage of every bisect document given, and every segment between neighbouring
points, the spread (standard deviation over rounds) of the weighted per-round step is divided by
that of the plain mean; prints each document's segments and the median ratio over all of them.
"""
import statistics
import sys

from launchbench.base.atomic import read_json
from launchbench.engine import bisection
from launchbench.engine.analysis import group_rounds


def ratios(doc) -> list:
    out = []
    for stage in doc.get("stages", []):
        if stage.get("kind") != "timing" or not stage.get("samples"):
            continue
        samples = stage["samples"]
        counts = sorted({s["nargs"] for s in samples})
        by = group_rounds(samples, [{"nargs": n} for n in counts])
        names = {s["variant"] for s in samples}
        order = [n for n in ("g" + p[:9] for p in stage["points"]) if n in names]
        for a, b in zip(order, order[1:]):
            w = bisection.pooled_rounds(by, a, b, counts)
            plain = bisection.pooled_rounds(by, a, b, counts, weighted=False)
            if len(w) >= 3 and statistics.stdev(plain) > 0:
                out.append(statistics.stdev(w) / statistics.stdev(plain))
    return out


def main(paths):
    every = []
    for path in paths:
        got = ratios(read_json(path))
        every += got
        med = f"{statistics.median(got):.2f}" if got else "n/a"
        print(f"{path}: {len(got)} segments, median spread ratio weighted/plain {med}")
    if every:
        print(f"all: {len(every)} segments, median {statistics.median(every):.2f} "
              f"(quartiles {statistics.quantiles(every, n=4)[0]:.2f}, {statistics.quantiles(every, n=4)[2]:.2f})")


if __name__ == "__main__":
    main(sys.argv[1:])
