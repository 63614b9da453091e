"""The text table of a ``launchbench.compare`` document, in the old script's shape.

``Launch overhead`` (mean +/- stdev of all samples per arg count and variant: the spread, not an
interval; the Markdown report gives each level's 95% interval over rounds),
``Deltas vs <reference>:`` (absolute and percent), then one line per delta
with its 95% confidence interval and a plain verdict. Renders from the JSON
document alone, so a saved results file prints the same table.
"""
from __future__ import annotations

from ..engine.stats import summary_line

SIMULATOR_BANNER = ("*** CUDA SIMULATOR SMOKE RUN: NOT A MEASUREMENT "
                    "(simulator timings, not GPU launch costs) ***")


def _col(width: int, text: str) -> str:
    return f"{text:<{width}}"


def _grid(head: list[str], rows: list[tuple[int, list[str]]]) -> list[str]:
    """``args`` column plus left-aligned columns at least 20 wide, 2 spaces apart."""
    cells = head + [c for _n, row in rows for c in row]
    width = max([20] + [len(c) + 2 for c in cells])
    lines = [("args  " + "".join(_col(width, h) for h in head)).rstrip()]
    lines += [(f"{n:<6}" + "".join(_col(width, c) for c in row)).rstrip() for n, row in rows]
    return lines


def _table(args: list[int], columns: list[str], cell) -> list[str]:
    """One row per arg count, one column per name; *cell(name, nargs)* gives the text."""
    return _grid(columns, [(n, [cell(c, n) for c in columns]) for n in args])


def _mean_sd(st) -> str:
    return f"{st['mean']:.2f} +/- {st['stdev']:.2f}" if st else "n/a"


def _index(records, key="variant"):
    return {(r[key], r["nargs"]): r for r in records}


def header(doc: dict) -> list[str]:
    dev = doc.get("device") or {}
    s = doc["settings"]
    parts = [str(dev.get("name"))]
    if dev.get("compute_capability"):
        parts.append(f"cc {dev['compute_capability']}")
    if dev.get("driver_version"):
        parts.append(f"driver {dev['driver_version']}")
    if dev.get("runtime_version"):
        parts.append(f"runtime {dev['runtime_version']}")
    loops = ",".join(str(s["loops"].get(str(n), "?")) for n in s["arg_counts"])
    lines = [SIMULATOR_BANNER] if doc["simulator"] else []
    lines.append(f"Device: {', '.join(parts)}")
    lines.append(f"Rounds: {doc['rounds_completed']}/{doc['rounds_planned']} x {s['repeats']} repeats, "
                 f"loops per sample {loops}{' (calibrated)' if s['calibrated'] else ''}"
                 + (f", {doc['timing']['wall_s']:.0f} s" if doc.get("timing") else ""))
    if doc["interrupted"]:
        lines.append(f"INTERRUPTED ({doc['interrupt_reason']}): results cover the completed rounds only")
    return lines


def render(doc: dict) -> str:
    names = [v["name"] for v in doc["variants"]]
    ref = doc["reference"]
    others = [n for n in names if n != ref]
    stats = _index(doc["stats"])
    deltas = _index(doc["deltas"])
    args = doc["settings"]["arg_counts"]
    out = header(doc)
    out.append("")
    out.append("Launch overhead (us/launch; mean +/- stdev of all samples):" + ("  [SIMULATOR, not a measurement]" if doc["simulator"] else ""))  # noqa: E501
    out += _table(args, names, lambda name, n: _mean_sd(stats.get((name, n))))
    peers = doc.get("peers")
    if peers and peers.get("stats"):
        pnames = sorted({p["peer"] for p in peers["stats"]})
        pst = _index(peers["stats"], "peer")
        out.append("")
        out.append(f"Peers (us/launch, measured in {ref}'s workers):")
        def peer_cell(p, n):
            st = pst.get((p, n))
            return _mean_sd(st if st and st["n"] > 0 and st["mean"] is not None else None)

        out += _table(args, pnames, peer_cell)
    if not others:
        return "\n".join(out) + "\n"
    out.append("")
    out.append(f"Deltas vs {ref}:")
    def delta_cell(name, n):
        d = deltas.get((name, n))
        return f"{d['delta_us']:.2f} ({d['delta_pct']:+.1f}%)" if d else "n/a"

    out += _table(args, others, delta_cell)
    rounds = doc["rounds_completed"]
    # a run stopped at the --max-time cap gets more rounds from a higher cap, not from --rounds
    more = "raise --max-time" if str(doc.get("stopped") or "").startswith("time cap") else "add --rounds"
    unit = f"{rounds} rounds, paired within rounds" if rounds > 1 else f"1 round: paired samples, {more}"
    clusters = {d["n"] for d in doc.get("deltas", []) if d.get("units") == "clusters"}
    if clusters:  # --spawn fork: the units are the zygotes' clusters of rounds (engine/zygote.py)
        unit = (f"{rounds} rounds forked in {max(clusters)} clusters of "
                f"{(doc.get('settings') or {}).get('fork_rounds', '?')}; intervals over clusters")
    out.append("")
    out.append(f"{round(doc['confidence'] * 100)}% confidence intervals of the deltas (percent of {ref}; {unit}):")
    for n in args:
        lead = f"{n} args"
        for name in others:
            d = deltas.get((name, n))
            if d:
                out.append(f"{lead:<8}{summary_line(name, d, ref).replace('add --rounds', more)}   "
                           f"({d['delta_us']:+.2f} us [{d['ci_us'][0]:+.2f}, {d['ci_us'][1]:+.2f}])")
                lead = ""
    line = noise_line(doc.get("deltas") or [])
    if line:
        out += ["", line]
    return "\n".join(out) + "\n"


def noise_line(deltas: list) -> str | None:
    """Where the widest interval's spread comes from: what would narrow it."""
    noisy = [d for d in deltas if isinstance(d.get("noise"), dict) and d["noise"].get("between_share") is not None]
    if not noisy:
        return None
    d = max(noisy, key=lambda r: r["ci_pct"][1] - r["ci_pct"][0])
    share = d["noise"]["between_share"]
    advice = ("more rounds (--max-time), not more --repeats, narrow it" if share >= 0.5
              else "more --repeats per round would narrow it too")
    return (f"Widest interval ({d['variant']}, {d['nargs']} args): {100 * share:.0f}% of its round-to-round "
            f"variance is between rounds; {advice}.")
