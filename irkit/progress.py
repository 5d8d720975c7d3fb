"""Progress on stderr for long runs of `irkit` and `irkit-opt`.

A large document takes a while (parsing, lowering, the C compiler), and a run that
prints nothing for a minute looks hung.  The phases a run goes through are marked
with `phase("lower-tensorop")` (a context manager) and, inside a phase that walks
many items, `advance(done, total)`.  Nothing is printed unless the run has lasted
`DELAY_S` seconds; from then on a ticker thread shows the current phase, its
progress and the elapsed time, about twice a second.

When: `IRKIT_PROGRESS=1` always, `IRKIT_PROGRESS=0` never, and otherwise only when
stderr is a terminal.  On a terminal the status is one line rewritten in place and
erased when the run ends; elsewhere (forced on, e.g. a CI log) a line is written
per phase and every `LOG_EVERY_S` seconds within a long one.  Standard output and
the diagnostics are never changed: progress is on stderr only, and a terminal's
status line is erased before anything else is expected there.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

ENV = "IRKIT_PROGRESS"
DELAY_S = 2.0  # show nothing for runs shorter than this
TICK_S = 0.5
LOG_EVERY_S = 10.0


class _State:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.start: float | None = None  # the first phase's start: the run's clock
        self.phases: list[tuple[str, float]] = []  # (name, start), innermost last
        self.count: tuple[int, int] | None = None
        self.thread: threading.Thread | None = None
        self.shown = False  # a status line is on the terminal
        self.last_log: tuple[str, float] = ("", 0.0)
        self.stop = threading.Event()


_STATE = _State()


def enabled() -> bool:
    """Is progress shown?  `IRKIT_PROGRESS` decides; otherwise whether stderr is a terminal."""
    value = os.environ.get(ENV, "").strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


@contextmanager
def phase(name: str) -> Iterator[None]:
    """Mark the phase `name` for the duration of the block (phases nest)."""
    if not enabled():
        yield
        return
    s = _STATE
    now = time.monotonic()
    with s.lock:
        if s.start is None:
            s.start = now
        s.phases.append((name, now))
        s.count = None
        if s.thread is None:
            s.thread = threading.Thread(target=_tick, name="irkit-progress", daemon=True)
            s.thread.start()
    try:
        yield
    finally:
        with s.lock:
            if s.phases and s.phases[-1][0] == name:
                s.phases.pop()
            s.count = None
            if not s.phases:  # between phases: the terminal's line is erased, the run's clock goes on
                _clear()


def advance(done: int, total: int) -> None:
    """Within the current phase, `done` of `total` items are finished (cheap: no output here)."""
    s = _STATE
    if s.phases:
        s.count = (done, total)


def _status(now: float) -> str | None:
    s = _STATE
    if s.start is None or not s.phases or now - s.start < DELAY_S:
        return None
    names = " > ".join(n for n, _ in s.phases)
    count = f" {s.count[0]:,}/{s.count[1]:,}" if s.count else ""
    return f"irkit: {names}{count} ({now - s.phases[-1][1]:.0f} s; {now - s.start:.0f} s in all)"


def _tick() -> None:
    s = _STATE
    while not s.stop.wait(TICK_S):
        with s.lock:
            text = _status(time.monotonic())
            if text is not None:
                _show(text)


def _show(text: str) -> None:
    s = _STATE
    try:
        if sys.stderr.isatty():
            sys.stderr.write("\r\x1b[K" + text[:200])
            sys.stderr.flush()
            s.shown = True
            return
        name = " > ".join(n for n, _ in s.phases)
        now = time.monotonic()
        if name != s.last_log[0] or now - s.last_log[1] >= LOG_EVERY_S:
            sys.stderr.write(text + "\n")
            sys.stderr.flush()
            s.last_log = (name, now)
    except (OSError, ValueError):  # stderr closed: progress is best effort
        pass


def _clear() -> None:
    s = _STATE
    if s.shown:
        try:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()
        except (OSError, ValueError):
            pass
        s.shown = False
    s.last_log = ("", 0.0)


def _at_exit() -> None:
    _STATE.stop.set()
    with _STATE.lock:
        _clear()


atexit.register(_at_exit)
