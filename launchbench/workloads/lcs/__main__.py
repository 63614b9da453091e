"""``python -m launchbench.workloads.lcs --bench``: the fixture's direct timing (fixture.main)."""
import sys

from .fixture import main

sys.exit(main())
