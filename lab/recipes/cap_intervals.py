"""Each compare run's worst 95 % half-width as reported, and as the engine reports it since a run
that ends at its cap keeps the plain t interval (``sequential.chosen_stop``, docs/methodology.md).

    python lab/recipes/cap_intervals.py RUN.json[.gz] ...

Recomputed from each run's samples: ``analysis.analyze`` (t over rounds), then ``apply_rule`` with
the run's stop rule and whether the rule (or an interruption) chose its last round, read from the
JSON's ``stopped`` and ``interrupted``.
"""
import sys

from launchbench.base.atomic import read_json
from launchbench.engine import analysis, sequential


def worst(deltas) -> float:
    return max((d["ci_pct"][1] - d["ci_pct"][0]) / 2 for d in deltas)


def main(paths):
    print(f"{'run':<64} {'rounds':>6} {'stopped by':>10} {'reported':>8} {'now':>6}")
    for path in paths:
        doc = read_json(path)
        rule_doc = (doc.get("settings") or {}).get("stop_rule")
        if not rule_doc or rule_doc.get("mode") != "precision":
            continue
        names = [v["name"] for v in doc["variants"]]
        counts = doc["settings"]["arg_counts"]
        _stats, deltas = analysis.analyze(doc["samples"], names, doc["reference"], counts)
        rule = sequential.Rule(target_pct=rule_doc["target_pct"], min_rounds=rule_doc["min_rounds"])
        by_rule = str(doc.get("stopped") or "").startswith("precise")
        chosen = sequential.chosen_stop(by_rule, bool(doc.get("interrupted")))
        analysis.apply_rule(deltas, analysis.round_series(doc["samples"], names, doc["reference"], counts),
                            rule, doc["reference"], chosen)
        print(f"{path[-64:]:<64} {doc['rounds_completed']:>6} {'rule' if chosen else 'cap':>10} "
              f"{worst(doc['deltas']):>7.2f}% {worst(deltas):>5.2f}%")


if __name__ == "__main__":
    main(sys.argv[1:])
