"""The mechanisms room: how a launch's configuration reaches what runs at the launch, in
interchangeable ways, each installed by name.

What for: numba-cuda 0.30 captures every launch's configuration (for launch-config-sensitive
kernels); what that capture costs, and what another way of capturing would cost, is measured on
one build. A *capture mechanism* is a replacement of ``CUDADispatcher.call`` installed by name,
so the same launch runs under ``stock``, ``passthrough``, ``contextvar``, ``tls``, ``delay:...``
and the rest, and their differences are the capture's cost alone (docs/workflows.md,
"Mechanisms: the capture cost alone"):

- ``mechanisms``: the names (``MECHANISMS``), their wrappers, ``install``/``switch``/``validate``.
  Adding a mechanism is this file, its test (tests/test_mechanisms.py) and its README row.
- ``intercept``: the C interception's signatures and the C extension, shared with ``lctls``.
- ``lctls``: v2's launch-config path with launchbench's C thread-local capture.
- ``mechanism_rounds``: one process's interleaved pair rounds (``session``), what
  ``launchbench mechanisms --processes 1`` runs in its own process and every worker of
  ``engine/mechanism_procs.py`` runs once.

Beside the room, in ``workloads/``: the C extension ``_tls.c`` (``launchbench.workloads._tls``,
also the stand-in launch path's spin, and named as a C callee in stored counts) and ``hoist``
(the ``hoist-imports`` what-if, which a committed run's README under lab/results/ cites by its
path). Standard library and launchbench at import: workers import these inside variant
environments.
"""
