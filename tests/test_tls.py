"""Semantics of the C extension launchbench._tls: a per-thread (config, args) stack."""
import gc
import sys
import threading
import time
import tracemalloc

import pytest

_tls = pytest.importorskip("launchbench._tls", reason="C extension not built (pip install -e .)")


@pytest.fixture(autouse=True)
def empty_stack():
    assert _tls.depth() == 0, "a previous test left entries on the stack"
    yield
    while _tls.depth():
        _tls.leave()


class Config:
    """A fresh object per test, so reference counts start from a known value."""


def test_empty_stack_reads_none():
    assert _tls.current() is None
    assert _tls.current_args() is None
    assert _tls.depth() == 0


def test_enter_leave_round_trip():
    cfg, args = Config(), (1, 2)
    assert _tls.enter(cfg, args) is None
    assert _tls.current() is cfg
    assert _tls.current_args() is args
    assert _tls.depth() == 1
    assert _tls.leave() is None
    assert _tls.current() is None and _tls.depth() == 0


def test_nesting_restores_outer_entry():
    outer, inner = Config(), Config()
    _tls.enter(outer, ("o",))
    _tls.enter(inner, ("i",))
    assert (_tls.current(), _tls.current_args(), _tls.depth()) == (inner, ("i",), 2)
    _tls.leave()
    assert (_tls.current(), _tls.current_args(), _tls.depth()) == (outer, ("o",), 1)
    _tls.leave()
    assert _tls.current() is None


def test_leave_on_empty_stack_raises():
    with pytest.raises(RuntimeError, match="without a matching enter"):
        _tls.leave()


def test_enter_needs_two_arguments():
    with pytest.raises(TypeError):
        _tls.enter(Config())
    with pytest.raises(TypeError):
        _tls.enter(Config(), (), 3)
    assert _tls.depth() == 0


def test_stack_full_raises_and_keeps_entries():
    for i in range(_tls.MAX_DEPTH):
        _tls.enter(i, ())
    with pytest.raises(RuntimeError, match="stack is full"):
        _tls.enter("one too many", ())
    assert _tls.depth() == _tls.MAX_DEPTH
    assert _tls.current() == _tls.MAX_DEPTH - 1


def test_try_finally_restores_on_exception():
    outer = Config()
    _tls.enter(outer, ())

    def launch():
        _tls.enter(Config(), ("x",))
        try:
            raise ValueError("compile failed")
        finally:
            _tls.leave()

    with pytest.raises(ValueError):
        launch()
    assert _tls.current() is outer and _tls.depth() == 1


def test_reference_counts_balanced():
    cfg, args = Config(), ("a", "b")
    base_cfg, base_args = sys.getrefcount(cfg), sys.getrefcount(args)
    _tls.enter(cfg, args)
    assert sys.getrefcount(cfg) == base_cfg + 1  # the stack owns one reference
    assert sys.getrefcount(args) == base_args + 1
    got = _tls.current()
    assert sys.getrefcount(cfg) == base_cfg + 2  # plus the one current() returned
    del got
    _tls.leave()
    assert sys.getrefcount(cfg) == base_cfg
    assert sys.getrefcount(args) == base_args


def test_leave_releases_last_reference():
    import weakref

    cfg = Config()
    ref = weakref.ref(cfg)
    _tls.enter(cfg, ())
    del cfg
    gc.collect()
    assert ref() is not None, "the stack must keep the config alive"
    _tls.leave()
    assert ref() is None, "leave() must drop the stack's reference"


def test_threads_are_isolated():
    main_cfg = Config()
    _tls.enter(main_cfg, ("main",))
    barrier = threading.Barrier(4)
    seen, errors = {}, []

    def worker(i):
        try:
            seen[(i, "start")] = (_tls.current(), _tls.depth())
            cfg = ("cfg", i)
            _tls.enter(cfg, (i,))
            barrier.wait(timeout=10)  # every thread holds its own entry at once
            for _ in range(10_000):
                assert _tls.current() is cfg and _tls.current_args() == (i,)
            barrier.wait(timeout=10)
            _tls.leave()
            seen[(i, "end")] = _tls.depth()
        except Exception as exc:  # noqa: BLE001 - re-raised in the main thread
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for i in range(4):
        assert seen[(i, "start")] == (None, 0)
        assert seen[(i, "end")] == 0
    assert _tls.current() is main_cfg and _tls.current_args() == ("main",)


def test_no_memory_growth_over_a_million_pairs():
    cfg, args = Config(), (1, 2, 3)
    enter, leave = _tls.enter, _tls.leave
    for _ in range(1000):  # warm any lazily allocated state
        enter(cfg, args)
        leave()
    rc_cfg, rc_args = sys.getrefcount(cfg), sys.getrefcount(args)
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        for _ in range(1_000_000):
            enter(cfg, args)
            leave()
        after, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert after - before < 4096, f"grew by {after - before} bytes"
    assert sys.getrefcount(cfg) == rc_cfg and sys.getrefcount(args) == rc_args


def test_spin_waits_at_least_the_requested_time():
    for ns in (0, 500, 20_000):
        t0 = time.perf_counter_ns()
        _tls.spin(ns)
        assert time.perf_counter_ns() - t0 >= ns


def test_spin_is_accurate_on_average():
    n, ns = 200, 2000
    per = float("inf")
    for _ in range(20):  # the fastest batch is the one least disturbed by other processes
        t0 = time.perf_counter_ns()
        for _ in range(n):
            _tls.spin(ns)
        per = min(per, (time.perf_counter_ns() - t0) / n)
    # the loop and call overhead add a little; a busy-wait never returns early
    assert ns <= per < ns + 500, per


@pytest.mark.parametrize("bad", [-1, 11 * 10**9])
def test_spin_rejects_bad_durations(bad):
    with pytest.raises(ValueError):
        _tls.spin(bad)


def test_spin_rejects_non_integers():
    with pytest.raises(TypeError):
        _tls.spin("1us")
