"""Progress of the long commands (`bench`, `kernels`) on one stderr line, shown only when stderr
is a terminal: logs and CI output get none."""
from __future__ import annotations

import sys
import time
from types import TracebackType
from typing import TextIO, final


@final
class Progress:
    """`[i/n] what is running (elapsed)` rewritten in place; silent unless `stream` is a tty.

    Use as a context manager, calling `step(description)` before each of the `total` items.
    """

    def __init__(self, total: int, stream: TextIO | None = None) -> None:
        self.stream = sys.stderr if stream is None else stream
        self.total, self.done, self.width = total, 0, 0
        self.shown = bool(getattr(self.stream, "isatty", lambda: False)())
        self.start = time.monotonic()

    def step(self, description: str) -> None:
        """Item `done + 1` of `total` starts: show it."""
        self.done += 1
        if not self.shown:
            return
        line = (f"[{self.done}/{self.total}] {description} "
                f"({time.monotonic() - self.start:.0f} s)")
        self.stream.write("\r" + line.ljust(self.width))
        self.stream.flush()
        self.width = len(line)

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self.shown and self.width:
            self.stream.write("\r" + " " * self.width + "\r")   # leave the line clean
            self.stream.flush()
