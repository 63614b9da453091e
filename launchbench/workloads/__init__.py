"""What is timed inside one process: the kernels and their arguments, the capture mechanisms and
their C interception, the launch path's stages and a stand-in for it, the peer launchers, the LC-S
fixture, the asv suite's samples. Imports only launchbench.base (docs/architecture.md has the layers).

Rooms of one idea are sub-packages, each saying in its ``__init__`` what it is for: ``asvnative``
(how an asv benchmark process's value compares across processes), ``capture`` (the capture
mechanisms) and ``lcs`` (the LC-S fixture and its conformance suite). The modules here are what
several rooms share (``kernels``, ``argkinds``, ``launchers``, ``sampling``, the C extension
``_tls``), the rooms still kept as files (counts, stages and the breakdown, peers), and files whose
path something outside the code holds (docs/architecture.md, "Rooms": the count rows' version
digests ``counts.py`` and ``countgrid.py``; committed lab runs cite ``anchor.py``, ``lcs_mlir.py``
and ``hoist.py``).

Workers import these inside variant environments where only numba-cuda and the standard library
exist: nothing heavy at import time, here or in any module of this package.
"""
