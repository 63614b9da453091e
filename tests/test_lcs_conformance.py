"""CI's entry to the LC-S conformance suite, whose body lives in launchbench/workloads/lcs/conformance.py
(shipped in the package so ``launchbench pr`` can run it inside any environment)."""
from launchbench.workloads.lcs.conformance import *  # noqa: F401,F403 - the tests, fixtures and pytestmark
