"""What the asv suite's classes share: their parameters and the native sample's asv attributes.

The measurement itself is launchbench.workloads' (this package's ``__init__`` makes the
checkout's launchbench importable inside asv's per-commit envs): ``sampling`` (one
process's settings, reference and sample), ``launchers`` (the launches), ``countgrid``,
``lcs`` and ``peers``.

Row versions: asv files a row's results under its ``version``, by default a hash of the row's
own source (its ``time_``/``track_`` method, ``setup`` and ``setup_cache``), and compares only
results of one version. When the measurement moved into launchbench.workloads the rows' source changed
but not what they measure, so each row states the version asv had
computed for it before, and results from before and after still compare. Change a row's
version when a change alters what it measures. (The counts rows keep their own: a digest of
the counting code, bench_counts.counts_version.)
"""
from launchbench.workloads import kernels, sampling
from launchbench.workloads.asvnative import normalize, slots

ARG_COUNTS = [0, 1, 2, 3, 4]

#: asv processes per parameter set for every benchmark that does not sample like bench_launch's
#: launch rows (LC-S, peers, tracks; bench_mechanisms and bench_argkinds do, and take their 2).
#: One: their samples are timings inside the process, fresh processes of their own (timeraw) or
#: exact counts, and `launchbench peers` gives the peers' interleaved intervals. With
#: bench_launch's 2 it keeps the full default grid for one commit within
#: 15 minutes (docs/asv.md, "Which path gives which precision"); ``-a rounds=N`` overrides.
SURVEY_ROUNDS = 1

#: A smoke run (simulator, LAUNCHBENCH_SMOKE=1): one sample of one launch, proving the suite runs.
SMOKE = kernels.smoke_mode()

#: The clock asv reads around each timed call of the native rows (see normalize.ValueClock).
CLOCK = normalize.ValueClock()

#: numba.cuda imported before asv's forkserver forks (no CUDA context yet).
PREIMPORTED = sampling.preimport_cuda()

#: The reference of this process (asv's discovery reads its label off ``params``) or the error every
#: native row raises.
REFERENCE, REFERENCE_ERROR = sampling.reference_at_import()
#: The ``reference`` parameter's one value (normalize.reference_label).
REFERENCE_LABEL = REFERENCE["label"] if REFERENCE else "invalid LAUNCHBENCH_ASV settings: every row fails"
#: What the normalized rows' values are, for their pretty names (asv publish shows them).
NORMALIZED_NOTE = "wall µs, no reference" if REFERENCE and REFERENCE["kind"] == "none" else "normalized, not wall µs"


class NativeTiming:
    """Timing attributes shared by the native launch rows (docs/asv.md, "Native asv").

    * ``timer = CLOCK.now``, ``number = 1``: the sample asv records is the
      normalized µs the body computed, not the loop's wall time.
    * ``repeat = 1``: one sample per process. On the VM the process is the
      independent unit, and asv treats samples as independent: its median,
      99 % interval and Mann-Whitney test are honest only over processes.
    * ``rounds = 2`` processes per parameter set for the full grid (asv's
      own default; 85 parameter sets of a second or two a process):
      a survey that fits 15 minutes with the rest of the suite. Verdict rows
      take more with ``-a rounds=N`` (12-16 on the ``[1, 1]`` rows, docs/asv.md).
    * ``warmup_time = 0``: setup already warmed up (100 launches).
    * ``timeout`` bounds a stuck parameter set.
    """

    timer = staticmethod(CLOCK.now)
    number = 1
    repeat = 1
    rounds = 1 if SMOKE else 2
    warmup_time = 0
    min_run_count = 1
    timeout = 120

    def prepare_process(self, reference=None):
        """Every setup's first step (sampling.prepare_process): skip without a GPU, then this process's
        settings; a *reference* label that is not this process's own fails the row."""
        self.settings = sampling.prepare_process(REFERENCE, REFERENCE_ERROR, reference)

    def sample(self, run, ref, numba_batch=slots.NUMBA_BATCH):
        """One sample of *run* next to *ref*, handed to asv through the value clock."""
        CLOCK.advance(sampling.sample_us(self.settings, run, ref, numba_batch) * 1e-6)
