"""CI's entry to the LC-S conformance suite, whose body lives in launchbench/workloads/lcs_conformance.py
(shipped in the package so ``launchbench pr`` can run it inside any environment)."""
from launchbench.workloads.lcs_conformance import *  # noqa: F401,F403 - the tests, fixtures and pytestmark
