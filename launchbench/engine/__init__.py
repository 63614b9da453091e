"""The measurement core: rounds of fresh worker processes (runner, worker), paired statistics
(stats), stopping rules (sequential), the launch breakdown's rounds and stage-delta analysis
(breakdown), and what history, bisect and pr share (history). Imports launchbench.base and
.workloads, never .environments: a command resolves the environments and hands the engine their
interpreters and the worker overlay maker (tests/test_layout.py checks); docs/architecture.md has
the layers.

``python -m launchbench.engine.worker`` runs inside variant environments where only numba-cuda and
the standard library exist: nothing heavy at import time here.
"""
