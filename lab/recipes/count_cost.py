"""Where a commit's count rows spend their time: the phases of bench_counts' setup_cache, measured in one process.

Run with the Python of an asv environment that has a numba-cuda build installed (the suite's own imports
come from this checkout), on the GPU machine:

    ENV_PY lab/recipes/count_cost.py OUT.json [--profile OUT.txt]

Phases (seconds, ``time.perf_counter``): importing numba.cuda and the suite's counting code; CUDA's start
in this process; compiling the kernels of every argument count one after another (a fresh cache folder);
warming up and counting every parameter set as the rows did before (100 warm-up launches, 20 counted) and
as they do now (countgrid.COUNT_WARMUP, COUNT_LAUNCHES); and count_all as the suite calls it, kernels in
the disk cache. ``--profile`` adds cProfile's top functions of that last call. (Run at d52b26e, it also
timed compiling them side by side in forked children: 4.8 s, against 1.3 s one after another here, since
every child starts CUDA and the compiler anew.)
"""
import argparse
import json
import os
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", help="the JSON written")
    ap.add_argument("--profile", help="cProfile's top functions of count_all, as text")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    sys.path.insert(0, ROOT)
    from launchbench.base import cudamod
    from launchbench.workloads import countgrid, counts, kernels, launchers, sampling

    cuda = cudamod.import_cuda()
    arg_counts = [0, 1, 2, 3, 4]
    out = {"python": sys.version.split()[0], "numba_cuda": _version(), "arg_counts": arg_counts,
           "import_s": round(time.perf_counter() - t0, 3)}
    scratch = tempfile.mkdtemp(prefix="count-cost-")

    os.environ["LAUNCHBENCH_KERNEL_DIR"] = os.path.join(scratch, "kernels")
    t = time.perf_counter()
    sampling.gpu_or_skip()
    out["cuda_start_s"] = round(time.perf_counter() - t, 3)
    out["compile_one_after_another_s"] = _first_launches(cuda, kernels, arg_counts)

    state = {}
    phases = {"warm_up_100_s": 0.0, "count_20_s": 0.0, "warm_up_now_s": 0.0, "count_now_s": 0.0}
    sets = 0
    for style, per_launch_configure in countgrid.STYLES.items():
        for nargs in arg_counts:
            for config in launchers.CONFIG_NAMES:
                launch, kargs = countgrid.prepared(per_launch_configure, nargs, config, state)
                for warm, n, wkey, ckey in ((100, 20, "warm_up_100_s", "count_20_s"),
                                            (countgrid.COUNT_WARMUP, countgrid.COUNT_LAUNCHES, "warm_up_now_s",
                                             "count_now_s")):
                    t = time.perf_counter()
                    launchers.warm_up(launch, kargs, launches=warm)
                    phases[wkey] += time.perf_counter() - t
                    t = time.perf_counter()
                    counts.count(launch, kargs, launches=n, sync=launchers.synchronize)
                    phases[ckey] += time.perf_counter() - t
                sets += 1
    out["parameter_sets"] = sets
    out.update({k: round(v, 3) for k, v in phases.items()})

    t = time.perf_counter()
    if args.profile:
        import cProfile
        import io
        import pstats

        prof = cProfile.Profile()
        prof.runcall(countgrid.count_all, arg_counts)
        out["count_all_cached_profiled_s"] = round(time.perf_counter() - t, 3)
        text = io.StringIO()
        pstats.Stats(prof, stream=text).sort_stats("cumulative").print_stats(40)
        with open(args.profile, "w") as fh:
            fh.write(text.getvalue())
    else:
        countgrid.count_all(arg_counts)
        out["count_all_cached_s"] = round(time.perf_counter() - t, 3)
    out["process_s"] = round(time.perf_counter() - t0, 3)
    with open(args.out, "w") as fh:
        json.dump(out, fh, indent=1)
    print(json.dumps(out, indent=1))


def _first_launches(cuda, kernels, arg_counts):
    """Seconds to the first finished launch of each argument count's cached kernel (compile or load)."""
    took = {}
    for nargs in arg_counts:
        t = time.perf_counter()
        kernels.cached_kernel(nargs)[1, 1](*kernels.device_arrays(nargs, cuda))
        cuda.synchronize()
        took[str(nargs)] = round(time.perf_counter() - t, 3)
    took["total"] = round(sum(took.values()), 3)
    return took


def _version():
    from importlib import metadata

    for dist in ("numba-cuda", "numba-cuda-mlir"):
        try:
            return f"{dist} {metadata.version(dist)}"
        except metadata.PackageNotFoundError:
            continue
    return None


if __name__ == "__main__":
    main()
