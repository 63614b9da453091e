"""SIGTERM handled as Ctrl-C: finished rounds kept, reports written, workers ended, exit 143.

CI runners and ``timeout`` stop a run with SIGTERM, whose default action kills the
process at once: no message, the JSON left as the last checkpoint wrote it
(``interrupted=false``), no Markdown or PNG, and workers (in their own sessions, so
Ctrl-C reaches only the parent) left for the parent's ``finally`` that never runs.
Every command already handles ``KeyboardInterrupt`` right, so the first SIGTERM is
raised as ``Terminated``, a ``KeyboardInterrupt``, at the same points; ``cli.main``
turns the command's 130 into 143 (128 + SIGTERM) so callers still see what stopped
it. A second SIGTERM gets the default action: a run stuck in its clean-up can
still be stopped.
"""
from __future__ import annotations

import contextlib
import signal
import threading

_received: list = []


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where Ctrl-C would raise ``KeyboardInterrupt``."""


def _on_term(signum, frame):
    _received.append(signum)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    raise Terminated()


@contextlib.contextmanager
def sigterm_as_interrupt():
    """Within: the first SIGTERM raises ``Terminated``; after, the previous handler again
    (``cli.main`` also runs inside test processes, which keep their own). Main thread
    only: Python delivers signals there."""
    _received.clear()
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _on_term)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def terminated() -> bool:
    """True once a SIGTERM has arrived in the current ``sigterm_as_interrupt``."""
    return bool(_received)


def exit_status(rc: int) -> int:
    """The exit status to report: an interrupted run's 130 becomes 143 when SIGTERM stopped it."""
    return 128 + signal.SIGTERM if rc == 130 and terminated() else rc
