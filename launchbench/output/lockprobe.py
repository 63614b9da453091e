"""The ``launchbench lock-probe`` document (kind ``lock-probe``) and its text: per numba-cuda-mlir
release, whether a hot launch of each kernel completes while the global compiler lock is held, and
its cost (``workloads/lockprobe.py`` measures, ``engine/lockprobe.py`` runs it per point)."""
from __future__ import annotations

from ..engine.lockprobe import reading
from . import documents


def document(series: str, points: list, refused: list, settings: dict, measurement: bool, command: list,
             created: str, host: dict | None = None) -> dict:
    """*points*: per measured point ``{"point", "version", "stack", **the probe's JSON}``."""
    return {**documents.stamp("lock-probe"), "kind": "lock-probe", "command": command, "created": created,
            "measurement": measurement,
            "label": ("launch while the global compiler lock is held, per numba-cuda-mlir release, on a GPU"
                      if measurement else "stand-in launch path (--target): NOT A MEASUREMENT"),
            "host": host or {}, "series": series, "settings": settings, "points": points, "refused": refused}


def render(doc: dict) -> str:
    head = (f"Hot launches while another thread holds the global compiler lock ({doc['settings']['timeout_s']} s "
            f"each), {doc['series']}:")
    if not doc["measurement"]:
        head = "STAND-IN LAUNCH PATH -- NOT A MEASUREMENT\n" + head
    lines = [head]
    for p in doc["points"]:
        lines.append(f"  {p['point']}: {reading(p)}")
    lines += [f"  refused: {r['point']}: {r['reason']}" for r in doc["refused"]]
    return "\n".join(lines) + "\n"
