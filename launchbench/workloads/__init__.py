"""What is timed inside one process: the kernels and their arguments, the capture mechanisms and
their C interception, the launch path's stages and a stand-in for it, the peer launchers, the LC-S
fixture. Imports only launchbench.base (docs/architecture.md has the layers).

Workers import these inside variant environments where only numba-cuda and the standard library
exist: nothing heavy at import time, here or in any module of this package.
"""
