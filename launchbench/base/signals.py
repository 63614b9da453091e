"""SIGTERM and SIGHUP handled as Ctrl-C, and a second signal that cannot cut the clean-up short.

CI runners and ``timeout`` stop a run with SIGTERM, whose default action kills the
process at once: no message, the JSON left as the last checkpoint wrote it
(``interrupted=false``), no Markdown or PNG. Every command already handles
``KeyboardInterrupt`` right, so the first SIGTERM is raised as ``Terminated``, a
``KeyboardInterrupt``, at the same points; the run records ``SIGTERM`` as its reason
(``reason``) and ``cli.main`` turns the command's 130 into 143 (128 + SIGTERM). SIGHUP (the
terminal or ssh session closed) kills a process as abruptly and is handled the same way: reason
``SIGHUP``, exit 129.

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
SIGINT_REASON, SIGTERM_REASON, SIGHUP_REASON = "KeyboardInterrupt", "SIGTERM", "SIGHUP"
#: the signals raised as ``Terminated`` (not Ctrl-C), by the reason each records
_TERMINATING = {signal.SIGTERM: SIGTERM_REASON}
if hasattr(signal, "SIGHUP"):  # not on Windows
    _TERMINATING[signal.SIGHUP] = SIGHUP_REASON
HANDLED = (signal.SIGINT, *_TERMINATING)


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised where Ctrl-C would raise ``KeyboardInterrupt``."""

    def __init__(self, signum=signal.SIGTERM):
        super().__init__()
        self.signum = signum


class _Tolerant:
    """A stream whose writes to a terminal that is gone (EIO after SIGHUP) are dropped: the
    clean-up after a hang-up must still write the results."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, text):
        try:
            return self._stream.write(text)
        except (OSError, ValueError):
            return len(text)

    def flush(self):
        try:
            self._stream.flush()
        except (OSError, ValueError):
            pass

    def __getattr__(self, name):
        return getattr(self._stream, name)


def _on_signal(signum, frame):
    _received.append(signum)
    if signum == getattr(signal, "SIGHUP", None) and not isinstance(sys.stdout, _Tolerant):
        sys.stdout, sys.stderr = _Tolerant(sys.stdout), _Tolerant(sys.stderr)
    if len(_received) == 1:
        raise Terminated(signum) if signum in _TERMINATING else KeyboardInterrupt()
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
    """Within: the first SIGTERM or SIGHUP raises ``Terminated`` (the first Ctrl-C ``KeyboardInterrupt``,
    as always); a second signal of either is noted, a third stops the process. After: the
    previous handlers again (``cli.main`` also runs inside test processes, which keep their
    own). Main thread only: Python delivers signals there."""
    _received.clear()
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, _on_signal) for sig in HANDLED}
    streams = sys.stdout, sys.stderr
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if isinstance(sys.stdout, _Tolerant):
            sys.stdout, sys.stderr = streams


def terminated() -> bool:
    """True when SIGTERM or SIGHUP was the first signal in the current ``sigterm_as_interrupt``."""
    return bool(_received) and _received[0] in _TERMINATING


def signals_received() -> int:
    """How many SIGINT/SIGTERM/SIGHUP arrived in the current ``sigterm_as_interrupt``."""
    return len(_received)


def reason(exc: BaseException | None = None) -> str:
    """What a run interrupted by *exc* (a KeyboardInterrupt) records: ``SIGTERM``, ``SIGHUP`` or
    ``KeyboardInterrupt``."""
    if isinstance(exc, Terminated):
        return _TERMINATING.get(exc.signum, SIGTERM_REASON)
    if exc is None and terminated():
        return _TERMINATING[_received[0]]
    return SIGINT_REASON


def by_signal(text: str | None) -> bool:
    """True when a run's interrupt reason is a signal (exit 130, 143 or 129), not a failure (exit 1)."""
    return text in (SIGINT_REASON, *_TERMINATING.values())


def exit_status(rc: int) -> int:
    """The exit status to report: an interrupted run's 130 becomes 128 + the signal (143 for SIGTERM,
    129 for SIGHUP) when one of those stopped it."""
    return 128 + _received[0] if rc == 130 and terminated() else rc


def stopped_by() -> str:
    """What ``cli.main`` says of an interrupted run: ``terminated (SIGTERM)``, ``terminated (SIGHUP)``
    or ``interrupted``."""
    return f"terminated ({reason()})" if terminated() else "interrupted"
