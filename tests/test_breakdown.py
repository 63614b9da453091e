"""launchbench.workloads.breakdown and launchbench breakdown's table: launch-path detection and summaries on CPU;
stages on a GPU."""
import pytest

from launchbench.commands import breakdown as breakdown_cmd
from launchbench.workloads import breakdown, kernels, stages


class _Call029:
    def call(self, args, griddim, blockdim, stream, sharedmem):
        pass


class _Call030:
    def call(self, args, launch_config):
        pass


def test_launch_path_style_is_read_from_the_signature():
    assert stages.launch_path_style(_Call029.call) == "griddim"
    assert stages.launch_path_style(_Call030.call) == "launch_config"

    def other(self, args, config, extra):
        pass

    with pytest.raises(ValueError, match="unrecognised"):
        stages.launch_path_style(other)


def test_launch_path_style_of_the_installed_numba_cuda():
    from importlib.metadata import version

    dispatcher = pytest.importorskip("numba.cuda.dispatcher")
    major, minor = (int(p) for p in version("numba-cuda").split(".")[:2])
    expected = "launch_config" if (major, minor) >= (0, 30) else "griddim"
    assert stages.launch_path_style(dispatcher.CUDADispatcher.call) == expected


def test_kernel_source_has_one_parameter_per_arg():
    assert kernels.kernel_source(0) == "def k():\n    pass\n"
    assert kernels.kernel_source(3) == "def k(a0, a1, a2):\n    pass\n"


def test_summarize_stages_sums_only_stages_inside_a_preconfigured_launch():
    med = {"configure": 0.5, "type_dispatch": 1.0, "lc_bookkeeping": None, "cufunc_lookup": 0.5,
           "marshal_args": 2.0, "launch_config": 0.5, "driver_launch": 4.0,
           "full": 10.0, "full_with_configure": 10.75}
    s = breakdown.summarize_stages(med)
    assert s["sum_of_stages"] == 8.0
    assert s["remainder"] == 2.0
    assert s["explained_fraction"] == 0.8
    assert s["configure_in_full_launch"] == 0.75


def test_format_breakdown_marks_absent_stages():
    med = {stage: 1.0 for stage in breakdown.STAGES}
    med.update(lc_bookkeeping=None, full=7.0, full_with_configure=7.5)
    doc = {"numba_cuda": "0.29.0", "launch_path": "griddim", "arg_counts": [0, 1],
           "loop_overhead_us": 0.01,
           "stages": {"0": med, "1": med}, "summary": {"0": breakdown.summarize_stages(med),
                                                      "1": breakdown.summarize_stages(med)}}
    text = breakdown_cmd.format_breakdown(doc)
    assert "numba-cuda 0.29.0" in text and "griddim" in text
    lc_row = next(line for line in text.splitlines() if line.startswith("lc_bookkeeping"))
    assert lc_row.split()[1:] == ["-", "-"]
    rem_row = next(line for line in text.splitlines() if line.startswith("remainder"))
    assert rem_row.split()[1:] == ["2.000", "2.000"]


@pytest.mark.gpu
def test_breakdown_on_a_gpu():
    doc = breakdown_cmd.run_breakdown([0, 2], loops=300, repeats=1, rounds=2)
    assert doc["settings"]["rounds"] == 2 and len(doc["samples_us"]["0"]["full"]) == 2
    for n in ("0", "2"):
        stages = doc["stages"][n]
        for stage in breakdown.STAGES:
            if stage == "lc_bookkeeping" and doc["launch_path"] == "griddim":
                assert stages[stage] is None
            else:
                assert stages[stage] is not None
        assert stages["full"] > stages["driver_launch"] > 0
    assert doc["stages"]["2"]["marshal_args"] > doc["stages"]["0"]["marshal_args"]


def test_stage_samples_rotate_per_round_and_merge_in_round_order():
    calls = []

    def loop(name):
        def run(n):
            calls.append(name)
            return n * {"loop": 1e-8, "a": 2e-6, "b": 3e-6}[name]
        return run

    stage_loops = {0: {"loop": loop("loop"), "a": loop("a"), "b": loop("b")}}
    r0 = breakdown.collect_stage_samples(stage_loops, loops=10, repeats=2, rotation=0)
    assert calls[:3] == ["loop", "a", "b"]
    calls.clear()
    r1 = breakdown.collect_stage_samples(stage_loops, loops=10, repeats=1, rotation=1)
    assert calls == ["a", "b", "loop"]  # the next round starts one stage later
    from launchbench.engine.analysis import concat_rounds

    merged = concat_rounds([{"samples": r0}, {"samples": r1}])
    assert merged["0"]["a"] == pytest.approx([2.0, 2.0, 2.0]) and len(merged["0"]["loop"]) == 3
    doc = breakdown.breakdown_document(merged, "griddim", [0], {"rounds": 2}, "0.29.0")
    assert doc["stages"]["0"]["a"] == pytest.approx(2.0 - 0.01) and doc["loop_overhead_us"] == pytest.approx(0.01)
