"""Native asv: the normalization arithmetic, the timed slot loop with injected clocks, the value
clock through asv_runner itself, and asv-releases' labels. CPU only; no wall-clock bounds."""
import os
import sys
import timeit
from pathlib import Path

import pytest

from launchbench.base.errors import UserError
from launchbench.commands import asv as asvcmd
from launchbench.workloads import peers
from launchbench.workloads.asvnative import normalize, references
from launchbench.workloads.asvnative import slots as native


def test_normalized_value_is_median_of_slot_ratios_times_r0():
    numba = [12e-6, 13e-6, 24e-6]
    ref = [4e-6, 4e-6, 4e-6]
    assert normalize.normalized_us(numba, ref, 3.7) == pytest.approx(3.25 * 3.7)
    with pytest.raises(ValueError):
        normalize.normalized_us([1.0], [1.0, 2.0], 3.7)
    with pytest.raises(ValueError):
        normalize.normalized_us([], [], 3.7)
    assert normalize.raw_us([1e-6, 3e-6, 2e-6]) == pytest.approx(2.0)


class FakeProcess:
    """A process in a speed state: every launch, numba-cuda's and the reference's, takes *factor* times
    as long; slot *s* adds a drift; a fake clock advances by what each launch costs."""

    def __init__(self, factor, numba_us, ref_us, drift=0.0):
        self.t = 0.0
        self.factor, self.numba_us, self.ref_us, self.drift = factor, numba_us, ref_us, drift
        self.calls = []

    def clock(self):
        return self.t

    def numba_launch(self):
        self.t += self.numba_us * 1e-6 * self.factor * (1 + self.drift * len(self.calls))
        self.calls.append("n")

    def ref_launch(self):
        self.t += self.ref_us * 1e-6 * self.factor * (1 + self.drift * len(self.calls))
        self.calls.append("r")


def _sample(proc, slots=20, delay_s=0.0):
    numba_run = native.launch_batch(proc.numba_launch, (), lambda: None, delay_s, clock=proc.clock)
    ref_run = native.launch_batch(proc.ref_launch, (), lambda: None, clock=proc.clock)
    numba_s, ref_s = native.slot_loop(numba_run, ref_run, slots, numba_batch=5, ref_batch=7)
    return normalize.normalized_us(numba_s, ref_s, 3.7), normalize.raw_us(numba_s)


class SlotStates(FakeProcess):
    """A process whose speed state may change every slot (12 launches: a batch of 5 and one of 7): slot
    *s* has ``states[s]`` (the last one from then on), moving numba-cuda's launch by ``n`` and the
    reference's by ``r`` in state ``(n, r)``."""

    def __init__(self, states, numba_us=11.0, ref_us=3.7):
        super().__init__(1.0, numba_us, ref_us)
        self.states = states

    def _state(self):
        return self.states[min(len(self.calls) // 12, len(self.states) - 1)]

    def numba_launch(self):
        self.t += self.numba_us * 1e-6 * self._state()[0]
        self.calls.append("n")

    def ref_launch(self):
        self.t += self.ref_us * 1e-6 * self._state()[1]
        self.calls.append("r")


def test_a_state_that_moves_both_alike_cancels_slot_by_slot():
    """A process slow (1.8x) for its first 15 slots and fast after cancels only because each slot divides
    its own numba batch by its own reference batch: the same launches timed unpaired (every numba batch,
    then every reference batch) leave the state in the value."""
    states = [(1.8, 1.8)] * 15 + [(1.0, 1.0)]
    norm, raw = _sample(SlotStates(states), slots=30)
    assert norm == pytest.approx(11.0)
    assert raw == pytest.approx((19.8 + 11.0) / 2)  # the median sits between the two states
    unpaired = normalize.normalized_us(*_unpaired(SlotStates(states)), 3.7)
    assert unpaired == pytest.approx(19.8, rel=0.01)  # numba timed slow, the reference fast


def test_a_state_that_moves_the_two_unlike_is_left_in_the_value():
    """What the bindings reference cannot cancel (docs/asv.md, why the anchor): a state moving numba-cuda's
    launch 1.3x and the reference 1.1x reads 11 x 1.3 / 1.1 µs, not 11."""
    norm, _ = _sample(SlotStates([(1.3, 1.1)]))
    assert norm == pytest.approx(11.0 * 1.3 / 1.1)


def _unpaired(proc, slots=30):
    """numba's batches all first, then the reference's: the same launches, no slot pairing."""
    numba_run = native.launch_batch(proc.numba_launch, (), lambda: None, clock=proc.clock)
    ref_run = native.launch_batch(proc.ref_launch, (), lambda: None, clock=proc.clock)
    numba_s = [numba_run(5) for _ in range(slots)]
    return numba_s, [ref_run(7) for _ in range(slots)]


def test_slots_alternate_their_order_so_a_drift_favours_neither_side():
    proc = FakeProcess(1.0, 10.0, 10.0, drift=1e-3)
    numba_run = native.launch_batch(proc.numba_launch, (), lambda: None, clock=proc.clock)
    ref_run = native.launch_batch(proc.ref_launch, (), lambda: None, clock=proc.clock)
    native.slot_loop(numba_run, ref_run, 4, numba_batch=1, ref_batch=1)
    assert "".join(proc.calls) == "nrrnnrrn"
    numba_s, ref_s = native.slot_loop(lambda n: 1.0, None, 3)
    assert numba_s == [1.0, 1.0, 1.0] and ref_s == []


def test_launch_batch_returns_seconds_per_launch_and_syncs_once():
    syncs = []
    proc = FakeProcess(1.0, 8.0, 1.0)
    run = native.launch_batch(proc.numba_launch, (), lambda: syncs.append(1), clock=proc.clock)
    assert run(50) == pytest.approx(8e-6)
    assert syncs == [1] and len(proc.calls) == 50


def test_the_calibration_delay_is_added_per_launch():
    """A busy-wait of d per launch adds at least d, and overshoots by no more than the clock's own
    reads (a fake clock that moves 0.1 µs per read: the spin's first read and its last one)."""
    proc = FakeProcess(1.0, 11.0, 3.7)

    def step():  # each clock read inside spin() moves the fake time on
        proc.t += 0.1e-6
        return proc.t

    base = native.launch_batch(proc.numba_launch, (), lambda: None, clock=proc.clock)(10)
    delayed = native.launch_batch(proc.numba_launch, (), lambda: None, 0.5e-6, clock=step)(10)
    added = (delayed - base) * 1e6
    assert 0.5 <= added <= 0.5 + 2 * 0.1 + 1e-9
    assert normalize.expected_delay_us(0.5, 3.7, 3.7) == pytest.approx(0.5)
    assert normalize.expected_delay_us(0.5, 3.7, 7.4) == pytest.approx(0.25)


def test_value_clock_is_what_timeit_and_asv_runner_record():
    clock = normalize.ValueClock()
    timer = timeit.Timer(stmt=lambda: clock.advance(12.5e-6), timer=clock.now)
    assert timer.timeit(1) == pytest.approx(12.5e-6)
    with pytest.raises(ValueError):
        clock.advance(-1.0)

    from asv_runner.benchmarks.time import TimeBenchmark

    class Bench:
        timer = staticmethod(clock.now)
        number = 1
        repeat = 3
        warmup_time = 0
        min_run_count = 1
        values = iter([10e-6, 11e-6, 12e-6])

        def time_it(self):
            clock.advance(next(Bench.values))

    instance = Bench()
    bench = TimeBenchmark("m.Bench.time_it", instance.time_it, [instance.time_it, instance])
    result = bench.run()
    assert result["number"] == 1
    assert result["samples"] == pytest.approx([10e-6, 11e-6, 12e-6])


@pytest.mark.parametrize("environ, message", [
    ({normalize.REF_ENV: "cupy"}, "use bindings, bindings-args, core, anchor or none"),
    ({normalize.REF_US_ENV: "fast"}, "is not a number"),
    ({normalize.REF_US_ENV: "-1"}, "finite number > 0"),
    ({normalize.DELAY_ENV: "nan"}, ">= 0"),
    ({normalize.SLOTS_ENV: "2.5"}, "whole number"),
])
def test_bad_settings_name_the_variable_and_the_fix(environ, message):
    with pytest.raises(normalize.ConfigError, match=message):
        kind = normalize.reference_kind(environ)
        normalize.reference_us(kind, environ)
        normalize.delay_us(environ)
        normalize.slots(100, environ)


def test_settings_defaults_and_overrides():
    assert normalize.reference_kind({}) == "bindings"
    assert normalize.reference_us("bindings", {}) == normalize.REFERENCE_US["bindings"]
    assert normalize.reference_us("bindings", {normalize.REF_US_ENV: "4.1"}) == 4.1
    assert normalize.reference_us("none", {}) == 1.0
    assert normalize.reference_kind({normalize.REF_ENV: "core"}) == "core"
    assert normalize.reference_us("core", {}) == normalize.REFERENCE_US["core"] == 3.61
    assert normalize.delay_us({}) == 0.0 and normalize.delay_us({normalize.DELAY_ENV: "0.5"}) == 0.5
    assert normalize.slots(100, {}) == 100 and normalize.slots(100, {normalize.SLOTS_ENV: "40"}) == 40


def test_delay_only_for_the_named_commit():
    """asv's per-commit builds: the busy-wait goes only into the processes of the named commit."""
    env = {normalize.DELAY_ENV: "0.5", normalize.DELAY_COMMIT_ENV: "15286822"}
    assert normalize.delay_us({**env, "ASV_COMMIT": "152868224df441cf7250c63b6e0545bb99f16c5d"}) == 0.5
    assert normalize.delay_us({**env, "ASV_COMMIT": "10eac70a0000000000000000000000000000000"}) == 0.0
    with pytest.raises(normalize.ConfigError, match="ASV_COMMIT is not"):
        normalize.delay_us(env)
    with pytest.raises(normalize.ConfigError, match="7 or more hex digits"):
        normalize.delay_us({**env, normalize.DELAY_COMMIT_ENV: "v0.30.4", "ASV_COMMIT": "15286822"})


def test_pin_and_spin_choose_cpus_the_process_may_use():
    allowed = {0, 1, 2, 3}
    assert normalize.pin_cpu(allowed, {}) is None                       # default: no pinning
    assert normalize.pin_cpu(allowed, {normalize.PIN_ENV: "auto"}) == 3  # the highest, as compare pins
    assert normalize.pin_cpu(allowed, {normalize.PIN_ENV: "1"}) == 1
    assert normalize.pin_cpu({5}, {normalize.PIN_ENV: "auto"}) is None   # one CPU: nothing to choose
    assert normalize.spin_cpus(allowed, 3, {normalize.SPIN_ENV: "auto"}) == [0]
    assert normalize.spin_cpus(allowed, None, {normalize.SPIN_ENV: "auto"}) == []  # unpinned: no auto spinner
    assert normalize.spin_cpus(allowed, 3, {normalize.SPIN_ENV: "0-1"}) == [0, 1]
    assert normalize.spin_cpus(allowed, 3, {}) == []
    assert normalize.pin_cpu(allowed, {}, default="auto") == 3


@pytest.mark.parametrize("name, value, message", [
    (normalize.PIN_ENV, "7", r"CPU\(s\) \[7\] are not available to this process \(it may run on 0-3\)"),
    (normalize.PIN_ENV, "0,1", "give one CPU"),
    (normalize.PIN_ENV, "fast", "give auto, none or CPUs like 0, 0,1 or 0-1"),
    (normalize.SPIN_ENV, "3", "CPU 3 is the one that measures"),
    (normalize.SPIN_ENV, "2-1", "give auto, none or CPUs"),
])
def test_bad_pin_or_spin_names_the_variable_and_the_fix(name, value, message):
    with pytest.raises(normalize.ConfigError, match=message) as info:
        pin = normalize.pin_cpu({0, 1, 2, 3}, {normalize.PIN_ENV: "auto", name: value})
        normalize.spin_cpus({0, 1, 2, 3}, pin, {name: value})
    assert name in str(info.value)


def test_hold_pins_then_waits_until_each_spinner_runs():
    calls = []

    class FakeProc:
        def __init__(self, cmd, **kw):
            calls.append(("popen", cmd[-2]))
            self.stdout = self

        def read(self, n):
            calls.append(("started", n))
            return b"1"

        def poll(self):
            return 0

        def wait(self):
            return 0

    procs = native.hold_machine_state(3, [0, 1], popen=FakeProc, setaffinity=lambda pid, cpus: calls.append(("pin", cpus)))
    assert calls == [("pin", {3}), ("popen", "0"), ("started", 1), ("popen", "1"), ("started", 1)]
    assert len(procs) == 2
    assert native.hold_machine_state(None, [], popen=None, setaffinity=None) == []


@pytest.mark.skipif(not hasattr(os, "sched_getaffinity"), reason="needs Linux CPU affinity")
def test_a_spinner_ends_when_the_benchmark_process_is_gone(tmp_path):
    """asv's forkserver children leave with os._exit: the spinner must notice on its own."""
    import subprocess
    import time

    cpu = min(os.sched_getaffinity(0))
    code = ("import os, sys; sys.path.insert(0, sys.argv[1]); from launchbench.workloads.asvnative import slots as native; "
            f"procs = native.hold_machine_state(None, [{cpu}]); print(procs[0].pid, flush=True); os._exit(0)")
    out = subprocess.run([sys.executable, "-c", code, str(Path(__file__).resolve().parents[1])],
                         capture_output=True, text=True, check=True)
    spinner = int(out.stdout.split()[0])
    deadline = time.monotonic() + 60  # a liveness bound for a loaded machine, not a speed check
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{spinner}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            break
        if state == "Z":  # exited, waiting for a reaper
            break
        time.sleep(0.05)
    else:
        os.kill(spinner, 9)
        pytest.fail("the spinner outlived the process that started it")


def test_release_labels_twin_and_delay():
    assert asvcmd.release_of("0.30.4+twin") == "0.30.4" and asvcmd.release_of("0.29.0") == "0.29.0"
    assert asvcmd.label_delay_us("0.30.4+delay0.5us") == 0.5
    assert asvcmd.label_delay_us("0.30.4+twin") is None
    with pytest.raises(UserError, match=r"\+delay<µs>us"):
        asvcmd.label_delay_us("0.30.4+delayhalf")
    env = asvcmd.label_env("0.30.4+delay0.5us", {"LAUNCHBENCH_ASV_DELAY_US": "9", "X": "1"})
    assert env["LAUNCHBENCH_ASV_DELAY_US"] == "0.5" and env["X"] == "1"
    assert "LAUNCHBENCH_ASV_DELAY_US" not in asvcmd.label_env("0.30.4", {"LAUNCHBENCH_ASV_DELAY_US": "9"})


def test_env_specs_accept_labels_and_compare_pairs_are_checked(tmp_path):
    import sys

    envs = asvcmd.parse_env_specs([f"0.30.4={sys.executable}", f"0.30.4+twin={sys.executable}"])
    assert list(envs) == ["0.30.4", "0.30.4+twin"]
    with pytest.raises(UserError, match="label like"):
        asvcmd.parse_env_specs([f"0.30.4+tw-in={sys.executable}"])
    with pytest.raises(UserError, match=r"\+delay<µs>us"):
        asvcmd.parse_env_specs([f"0.30.4+delayx={sys.executable}"])
    names = {"0.30.4": "0.30.4", "0.30.4+twin": "0.30.4+twin", "v2": "0.30.4"}
    assert asvcmd.parse_compare_specs(["0.30.4:0.30.4+twin"], names) == [("0.30.4", "0.30.4+twin")]
    with pytest.raises(UserError, match="neither a --branch"):
        asvcmd.parse_compare_specs(["v2:v3"], names)
    with pytest.raises(UserError, match="expected A:B"):
        asvcmd.parse_compare_specs(["v2"], names)


_COMPARE = """
Benchmarks that have got worse:

| Change   | Before [14349d29] <v0.29.0>   | After [0a5a21b4] <v0.30.4>   | Ratio   | Benchmark (Parameter)                                          |
|----------|-------------------------------|------------------------------|---------|----------------------------------------------------------------|
| +        | 10.6±0.1μs                    | 11.7±0.08μs                  | 1.10    | bench_launch.TimeLaunchPreconfigured.time_launch(0, '[1, 1]')  |

Benchmarks that have stayed the same:

| Change   | Before [14349d29] <v0.29.0>   | After [0a5a21b4] <v0.30.4>   | Ratio   | Benchmark (Parameter)                                          |
|----------|-------------------------------|------------------------------|---------|----------------------------------------------------------------|
|          | 28.1±0.5μs                    | 29.0±1μs                     | ~1.03   | bench_launch.TimeLaunchPreconfigured.time_launch(4, '[1, 1]')  |
|          | 3.70±0.02μs                   | 3.69±0.03μs                  | 1.00    | bench_launch.TimeReferenceLaunch.time_launch                   |
|          | failed                        | 1.2±0.1ms                    | n/a     | bench_launch.TimeLaunchRaw.time_launch(1, '[1, 1]')            |
"""


def test_asv_compare_tables_read_back_with_flags_ratios_and_units():
    from launchbench.output import asvcompare

    rows = asvcompare.parse_table(_COMPARE)
    assert [r.verdict for r in rows] == ["slower", "same", "same", "same"]
    first, second, ref, failed = rows
    assert first.before_us == 10.6 and first.after_us == 11.7 and first.ratio == 1.10 and first.significant
    assert asvcompare.args_of(first.benchmark) == 0 and asvcompare.args_of(second.benchmark) == 4
    assert second.ratio == 1.03 and not second.significant
    assert asvcompare.args_of(ref.benchmark) is None
    assert failed.before_us is None and failed.after_us == pytest.approx(1200.0) and failed.ratio is None
    assert asvcompare.parse_value_us("950±3ns") == pytest.approx(0.95)


def _fake_wheel(folder, version):
    """A minimal installable numba-cuda wheel (one module) of *version*."""
    import base64
    import hashlib
    import zipfile

    files = {"numba_cuda/__init__.py": f"VERSION = {version!r}\n",
             f"numba_cuda-{version}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: numba-cuda\nVersion: {version}\n",
             f"numba_cuda-{version}.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    record = [f"{name},sha256={base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b'=').decode()},"
              f"{len(text.encode())}" for name, text in files.items()]
    files[f"numba_cuda-{version}.dist-info/RECORD"] = "\n".join(record + [f"numba_cuda-{version}.dist-info/RECORD,,"]) + "\n"
    path = folder / f"numba_cuda-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as z:
        for name, text in files.items():
            z.writestr(name, text)
    return path


def _run_asv_commands(commands, variables):
    """Each command as asv runs it (asv's own parser: in-dir=, return-code=, shlex)."""
    import subprocess

    from asv.util import interpolate_command

    for command in commands:
        args, env, codes, cwd = interpolate_command(command, variables)
        args = [variables["python"] if a == "python" else a for a in args]
        proc = subprocess.run(args, cwd=cwd, env={**os.environ, **env, "PIP_NO_INDEX": "1",
                                                  "PIP_DISABLE_PIP_VERSION_CHECK": "1"},
                              capture_output=True, text=True)
        assert codes is None or proc.returncode in codes, f"{command}: exit {proc.returncode}\n{proc.stdout}{proc.stderr}"


@pytest.mark.slow
def test_offline_install_puts_the_commit_into_the_env_even_when_the_host_has_its_version(tmp_path):
    """The bug this guards: the host site (appended by a .pth) had numba-cuda 0.30.4, so pip called asv's
    v0.30.4 wheel "already installed" and installed nothing; asv then measured the host's copy.
    The install must land in the env, the host's copy must survive the uninstall."""
    import subprocess

    from launchbench.output.asvtools import offline_config

    host = tmp_path / "host-site"
    host.mkdir()
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    host_copy = _fake_wheel(tmp_path, "0.30.4")
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--target", str(host),
                    str(host_copy)], check=True, capture_output=True)
    (host / "numba_cuda" / "__init__.py").write_text("VERSION = 'the host copy'\n")
    commit_dir = tmp_path / "commit"
    commit_dir.mkdir()
    commit_wheel = _fake_wheel(commit_dir, "0.30.4")
    env_dir = tmp_path / "env"
    subprocess.run([sys.executable, "-m", "venv", str(env_dir)], check=True, capture_output=True)
    python = str(env_dir / "bin" / "python")
    conf = offline_config({}, wheels, host_site=host)
    variables = {"env_dir": str(env_dir), "wheel_file": str(commit_wheel), "python": python}
    for _ in range(2):  # asv uninstalls, then installs, every time it switches commits
        _run_asv_commands(conf["uninstall_command"], variables)
        _run_asv_commands(conf["install_command"], variables)
        got = subprocess.run([python, "-c", "import numba_cuda; print(numba_cuda.VERSION, numba_cuda.__file__)"],
                             capture_output=True, text=True, check=True).stdout
        assert got.startswith("0.30.4 ") and str(env_dir) in got, got
    assert (host / "numba_cuda" / "__init__.py").read_text() == "VERSION = 'the host copy'\n"
    own = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                         capture_output=True, text=True, check=True).stdout.strip()
    assert (Path(own) / "zz_launchbench_host_site.pth").read_text().strip() == str(host.resolve())


def test_offline_config_makes_every_pip_call_local_and_appends_the_host_site(tmp_path):
    from launchbench.output.asvtools import offline_config

    base = {"matrix": {"req": {"numpy": "2.3.5"}}, "install_command": ["python -m pip install {wheel_file}[cu13]"]}
    conf = offline_config(base, tmp_path, host_site=tmp_path / "site", launch_method="forkserver")
    env = conf["matrix"]["env"]
    assert env["PIP_NO_INDEX"] == "1" and env["PIP_FIND_LINKS"] == str(tmp_path.resolve())
    assert conf["matrix"]["req"] == {"numpy": "2.3.5"} and conf["launch_method"] == "forkserver"
    install = conf["install_command"]
    assert [c.endswith("pip install --no-deps {wheel_file}") for c in install] == [False, True, False, False]
    assert "os.remove(p)" in install[0] and str(tmp_path / "site") in install[2]  # .pth away, then back
    assert "numba-cuda resolves to" in install[3]
    assert conf["uninstall_command"][0] == "return-code=any " + install[0]
    assert base["install_command"] == ["python -m pip install {wheel_file}[cu13]"]  # the input is not changed
    plain = offline_config(base, tmp_path)
    assert plain["install_command"] == base["install_command"] and "launch_method" not in plain


def test_core_reference_is_peers_cuda_core_launcher_per_launch(monkeypatch):
    """The core reference reuses ``launchbench peers``' launcher (total seconds) and reports per launch;
    a launcher that cannot be made becomes ReferenceUnavailable (the benchmark then skips with the message)."""
    made = []
    monkeypatch.setattr(peers, "make_cuda_core", lambda nargs: made.append(nargs) or (lambda n: n * 3.6e-6))
    assert references.REFERENCES["core"] is references.core_reference
    assert references.core_reference()(300) == pytest.approx(3.6e-6) and made == [0]

    def unavailable(nargs):
        raise peers.PeerUnavailable("cuda.core not importable")

    monkeypatch.setattr(peers, "make_cuda_core", unavailable)
    with pytest.raises(references.ReferenceUnavailable, match="cuda.core not importable"):
        references.core_reference()


def test_kernel_cache_is_per_build_not_per_environment(tmp_path, monkeypatch):
    """asv reinstalls each commit into one environment: two builds must never share a disk cache
    (on the GPU, 0.30.4 failed to load an index 0.29.0 had pickled)."""
    import importlib.metadata as md

    from launchbench.base import cudamod
    from launchbench.workloads import kernels as common

    records = {"numba-cuda": "numba/cuda/__init__.py,sha256=AAA,10\n"}

    class FakeDist:
        version = "0.30.4"

        def __init__(self, name):
            self.name = name

        def read_text(self, what):
            assert what == "RECORD"
            return records[self.name]

    def fake_distribution(name):
        if name not in records:
            raise md.PackageNotFoundError(name)
        return FakeDist(name)

    monkeypatch.setattr(md, "distribution", fake_distribution)
    monkeypatch.setenv("LAUNCHBENCH_KERNEL_DIR", str(tmp_path))
    monkeypatch.delenv(cudamod.ENV, raising=False)
    first = common.kernel_cache_dir()
    assert first == common.kernel_cache_dir()  # stable within a build
    assert first.startswith(str(tmp_path)) and (tmp_path / first.rsplit("/", 1)[1]).is_dir()
    records["numba-cuda"] = "numba/cuda/__init__.py,sha256=BBB,10\n"  # another commit reinstalled
    second = common.kernel_cache_dir()
    assert second != first
    assert common.build_fingerprint("not-installed") == "none"


@pytest.mark.parametrize("name, value, message", [
    ("LAUNCHBENCH_ASV_REFERENCE", "anchor", "needs LAUNCHBENCH_ASV_ANCHOR=PYTHON"),
    ("LAUNCHBENCH_ASV_ANCHOR", "/no/such/python", "is not an executable file"),
    ("LAUNCHBENCH_ASV_SLOTS", "many", "is not a number"),
    ("LAUNCHBENCH_ASV_DELAY_US", "-1", "give a finite number >= 0"),
])
def test_asv_commands_check_the_suite_settings_before_any_work(name, value, message):
    """asv would hand a bad value to every benchmark process (each then skips); the command stops first."""
    with pytest.raises(UserError, match=message):
        asvcmd.check_suite_settings({name: value})
    asvcmd.check_suite_settings({name: "" if name != "LAUNCHBENCH_ASV_DELAY_US" else "0.5"})


def test_the_anchor_folder_is_checked_before_any_work(tmp_path):
    python = os.path.realpath(sys.executable)
    afile = tmp_path / "a-file"
    afile.write_text("")
    with pytest.raises(UserError, match="LAUNCHBENCH_ASV_ANCHOR_DIR=.*is a file, not a folder"):
        asvcmd.check_suite_settings({"LAUNCHBENCH_ASV_ANCHOR": python, "LAUNCHBENCH_ASV_ANCHOR_DIR": str(afile)})
    asvcmd.check_suite_settings({"LAUNCHBENCH_ASV_ANCHOR": python, "LAUNCHBENCH_ASV_ANCHOR_DIR": str(tmp_path / "new")})


def test_the_suite_settings_check_runs_first_in_asv_releases(monkeypatch, tmp_path):
    monkeypatch.setenv("LAUNCHBENCH_ASV_REFERENCE", "cupy")
    from launchbench.cli import build_parser

    args = build_parser().parse_args(["asv-releases", "--env", f"0.30.4={tmp_path}/missing/python"])
    with pytest.raises(UserError, match="LAUNCHBENCH_ASV_REFERENCE='cupy'"):
        asvcmd.cmd_asv_releases(args)  # before the --env check, which would name the missing python
