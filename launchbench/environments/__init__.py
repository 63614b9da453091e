"""Where the numba-cuda under test comes from: variant specs, one virtualenv per variant,
per-commit wheels cached by SHA (builds, commits), the options that name variants
(variant_options), the wheelhouse for air-gapped machines, the release ledger and
the named refs asv runs on. Imports launchbench.base and launchbench.workloads (a variant names its
capture mechanism); docs/architecture.md has the layers.
"""
