"""Are one variant's counts identical across runs? Reads compare documents (launchbench.compare with a
``counts`` section) and groups every variant's counts by the numba-cuda version and mechanism it ran,
printing per arg count whether every run and process gave the same fingerprint."""
import sys

from launchbench.engine import countdiff
from launchbench.output import documents

groups: dict = {}
for path in sys.argv[1:]:
    try:
        doc = documents.read(path, "compare")
    except Exception as exc:  # noqa: BLE001 - a file that is not a compare document
        print(f"skip {path}: {exc}")
        continue
    if not doc.get("counts"):
        continue
    variants = {v["name"]: v for v in doc["variants"]}
    for name, per in doc["counts"]["variants"].items():
        v = variants[name]
        label = f"{v['numba_cuda_version']}{'+' + v['mechanism'] if v['mechanism'] else ''}"
        for nargs, rec in per.items():
            fp = countdiff.fingerprint(rec | {"launch_totals": [{"launches": 0, **rec["per_launch"]}]})
            groups.setdefault((label, nargs), []).append((path.rsplit("/", 1)[-1], name, rec["processes"],
                                                          rec["reproducible"], fp, rec["per_launch"]))
for (label, nargs), items in sorted(groups.items()):
    same = len({fp for *_, fp, _pl in items}) == 1 and all(r for *_, r, _fp, _pl in items)
    where = ", ".join(f"{f}:{n} x{p}" for f, n, p, *_ in items)
    print(f"{label:>22} {nargs} args: {'identical' if same else 'DIFFER'} across {where}; per launch {items[0][5]}")
