"""The run's progress on stderr: a bar on a terminal, one line per round otherwise."""
from __future__ import annotations

import sys
import time


class Progress:
    """A bar on a TTY; plain lines (one per round) otherwise. Always on stderr."""

    def __init__(self, total: int, stream=None, enabled: bool = True):
        self.total = max(1, total)
        self.done = 0
        self.stream = stream or sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.enabled = enabled
        self.start = time.monotonic()

    def tick(self, note: str) -> None:
        self.done += 1
        if self.enabled and self.tty:
            width = 30
            filled = int(width * self.done / self.total)
            elapsed = time.monotonic() - self.start
            eta = elapsed / self.done * (self.total - self.done)
            self.stream.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} "
                              f"{note:<28.28} eta {eta:4.0f}s")
            self.stream.flush()

    def line(self, text: str) -> None:
        if not self.enabled:
            return
        if self.tty:
            self.stream.write("\r\033[K")
        self.stream.write(text + "\n")
        self.stream.flush()

    def finish(self) -> None:
        if self.enabled and self.tty:
            self.stream.write("\r\033[K")
            self.stream.flush()
