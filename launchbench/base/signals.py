"""SIGTERM handled as Ctrl-C, and a second signal that cannot cut the clean-up short.

CI runners and ``timeout`` stop a run with SIGTERM, whose default action kills the
process at once: no message, the JSON left as the last checkpoint wrote it
(``interrupted=false``), no Markdown or PNG. Every command already handles
``KeyboardInterrupt`` right, so the first SIGTERM is raised as ``Terminated``, a
``KeyboardInterrupt``, at the same points; the run records ``SIGTERM`` as its reason
(``reason``) and ``cli.main`` turns the command's 130 into 143 (128 + SIGTERM).

A second signal (SIGTERM or Ctrl-C, e.g. ``timeout`` then a CI runner's own) arrives while
the first one's clean-up writes the results: raising again there lost the Markdown and left
``interrupted=false``. So it is only noted, and the clean-up (bounded: workers are killed, not
waited for) finishes. A third gets the signal's default action: a run stuck anyway can still
be stopped, and ``base/lifeline.py`` still ends its workers.
"""
from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading

_received: list = []
#: the reasons a run records when a signal ended it (``Outcome.reason``, the JSON's interrupt_reason)
SIGINT_REASON, SIGTERM_REASON = "KeyboardInterrupt", "SIGTERM"
HANDLED = (signal.SIGINT, signal.SIGTERM)


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where Ctrl-C would raise ``KeyboardInterrupt``."""


def _on_signal(signum, frame):
    _received.append(signum)
    if len(_received) == 1:
        raise Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()
    if len(_received) == 2:
        try:
            sys.stderr.write("\nlaunchbench: still writing the results of the interrupted run; "
                             "a third signal stops at once\n")
            sys.stderr.flush()
        except (OSError, ValueError):
            pass
        return
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


@contextlib.contextmanager
def sigterm_as_interrupt():
    """Within: the first SIGTERM raises ``Terminated`` (the first Ctrl-C ``KeyboardInterrupt``,
    as always); a second signal of either is noted, a third stops the process. After: the
    previous handlers again (``cli.main`` also runs inside test processes, which keep their
    own). Main thread only: Python delivers signals there."""
    _received.clear()
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, _on_signal) for sig in HANDLED}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def terminated() -> bool:
    """True when SIGTERM was the first signal in the current ``sigterm_as_interrupt``."""
    return bool(_received) and _received[0] == signal.SIGTERM


def signals_received() -> int:
    """How many SIGINT/SIGTERM arrived in the current ``sigterm_as_interrupt``."""
    return len(_received)


def reason(exc: BaseException | None = None) -> str:
    """What a run interrupted by *exc* (a KeyboardInterrupt) records: ``SIGTERM`` or ``KeyboardInterrupt``."""
    if isinstance(exc, Terminated) or (exc is None and terminated()):
        return SIGTERM_REASON
    return SIGINT_REASON


def by_signal(text: str | None) -> bool:
    """True when a run's interrupt reason is a signal (exit 130 or 143), not a failure (exit 1)."""
    return text in (SIGINT_REASON, SIGTERM_REASON)


def exit_status(rc: int) -> int:
    """The exit status to report: an interrupted run's 130 becomes 143 when SIGTERM stopped it."""
    return 128 + signal.SIGTERM if rc == 130 and terminated() else rc
