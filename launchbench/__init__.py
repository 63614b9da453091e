"""launchbench: what a numba-cuda kernel launch costs, and why.

Kept import-light on purpose: worker processes import launchbench inside
variant environments where only numba-cuda and the standard library exist.
"""

__version__ = "0.1.0"
