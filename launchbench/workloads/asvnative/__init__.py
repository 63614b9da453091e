"""The asv-native normalization room: how one asv benchmark process times numba-cuda's launch so
that its value compares across processes.

What for: asv compares commits measured in different processes, and on a GPU VM each fresh
process lands in a speed state of its own (docs/asv.md, "Native asv"). So a sample is not a raw
time but numba-cuda's launches timed slot by slot next to a commit-independent reference that
shares the process's state, the ratio scaled back to µs:

- ``slots``: the timed body (batches in slots, next to a reference; ``timed_calls``, the one
  plain timing loop, also the peers'; the held machine state);
- ``references``: the same-process reference launches (cuda.bindings, cuda.core);
- ``normalize``: the arithmetic, and the ``LAUNCHBENCH_ASV_*`` settings read one way.

Three modules of the feature sit beside the room, in ``workloads/``, each for a reason outside
the code: ``sampling`` (one benchmark process's settings, reference and sample: what every
``benchmarks/`` module calls) and ``launchers`` (the launch rows' launches), because the asv
count rows' version digests the text of ``workloads/countgrid.py``, which imports both as
``workloads`` modules (``benchmarks/bench_counts.py``); and ``anchor`` (the anchor server,
``python -m launchbench.workloads.anchor``), which a committed run's README under lab/results/
cites by that path.
Standard library and launchbench at import: asv runs this inside numba-cuda's environments.
"""
