"""The LC-S room: a launch-config-sensitive kernel and the contract it must keep.

What for: numba-cuda 0.30 lets an extension make a kernel launch-config sensitive (LC-S): a
compile triggered by a launch sees that launch's configuration and bakes it in. What that costs
per launch is timed here, and whether a build keeps the contract is checked here, both through
one fixture made the way extensions make such kernels:

- ``fixture``: the LC-S kernels and their non-LC-S twins, the disk-cache children, and
  ``python -m launchbench.workloads.lcs --bench`` (this package's ``__main__``). Self-contained
  (standard library at import, no relative imports): its cache children load it by path.
- ``conformance``: the conformance suite, a pytest module shipped in the package so that
  ``launchbench pr`` runs it in any environment (``engine/conformance.py``);
  ``tests/test_lcs_conformance.py`` re-exports it for CI.

Its numba-cuda-mlir port, ``workloads/lcs_mlir.py`` (the fixture through mlir's planner, and which
conformance checks port), sits beside the room: a committed run's README under lab/results/
cites it by that path.

The asv rows over the fixture are ``benchmarks/bench_lcs.py``; docs/lcs.md explains the contract.
Nothing is imported here: ``conformance`` imports pytest at module level.
"""
