"""The measurement core: rounds of fresh worker processes (runner, worker), paired statistics
(stats) and stopping rules (sequential). Imports launchbench.base, .workloads and .environments;
docs/architecture.md has the layers.

``python -m launchbench.engine.worker`` runs inside variant environments where only numba-cuda and
the standard library exist: nothing heavy at import time here.
"""
