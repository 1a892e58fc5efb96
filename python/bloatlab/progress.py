"""What a person sees during long, otherwise silent work (issue 35): a verb
that runs for tens of seconds without a word (a 60-s `run --engine emu`,
`compare`) says what it is doing. On a terminal, one line on stderr redrawn
every half second: ``what: 12 s of ~65 s``; elsewhere (a pipe, a log, CI) a
start line and an end line, so that a log shows when it started and how long
it took without a line every half second. Nothing goes to stdout (``--json``
stays machine output)."""

from __future__ import annotations

import sys
import threading
import time


class Long:
    """``with Long("running rrul on the emulator", expected_s=65):`` around the work."""

    def __init__(self, what: str, expected_s: float | None = None, file=None):
        self.what, self.expected = what, expected_s
        self.file = file if file is not None else sys.stderr
        self.tty = hasattr(self.file, "isatty") and self.file.isatty()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _line(self, elapsed: float) -> str:
        of = f" of ~{self.expected:.0f} s" if self.expected else ""
        return f"{self.what}: {elapsed:.0f} s{of}"

    def _draw(self) -> None:
        while not self._stop.wait(0.5):
            self.file.write("\r" + self._line(time.monotonic() - self.t0) + "\033[K")
            self.file.flush()

    def __enter__(self):
        self.t0 = time.monotonic()
        if self.tty:
            self._thread = threading.Thread(target=self._draw, daemon=True)
            self._thread.start()
        else:
            of = f" (expected ~{self.expected:.0f} s)" if self.expected else ""
            print(f"bloatlab: {self.what}{of} ...", file=self.file, flush=True)
        return self

    def __exit__(self, exc_type, exc, tb):
        elapsed = time.monotonic() - self.t0
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self.file.write("\r\033[K")
            self.file.flush()
        elif exc_type is None:
            print(f"bloatlab: {self.what}: done in {elapsed:.0f} s", file=self.file, flush=True)
        return False
