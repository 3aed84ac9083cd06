"""A one-line progress display for long jobs: done/total, rate, ETA."""

import sys
import time


def format_duration(seconds):
    seconds = int(max(0, seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{seconds:02d}" if hours else f"{minutes}:{seconds:02d}"


class Progress:
    """Prints progress to stderr: rewritten in place on a terminal, a line every
    `log_interval` seconds otherwise (logs, CI)."""

    def __init__(self, total, describe, stream=None, log_interval=10.0):
        self.total = total
        self.describe = describe  # callable(done, elapsed) -> str
        self.stream = stream or sys.stderr
        self.interactive = self.stream.isatty()
        self.interval = 0.5 if self.interactive else log_interval
        self.start = time.monotonic()
        self._last = 0.0

    def update(self, done, force=False):
        now = time.monotonic()
        if not force and now - self._last < self.interval:
            return
        self._last = now
        elapsed = now - self.start
        fraction = min(1.0, done / self.total) if self.total else 0.0
        eta = elapsed * (1 - fraction) / fraction if fraction > 0 else 0.0
        line = f"[{fraction:6.1%}] {self.describe(done, elapsed)}  elapsed {format_duration(elapsed)}"
        if fraction < 1.0:
            line += f"  ETA {format_duration(eta)}"
        if self.interactive:
            self.stream.write("\r\033[K" + line)
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def finish(self, done):
        self.update(done, force=True)
        if self.interactive:
            self.stream.write("\n")
            self.stream.flush()
