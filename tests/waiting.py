"""Waiting in tests for the event a test means, with a deadline, instead of a fixed sleep.

``from waiting import wait_until, wait_for_line`` (tests/ is on ``sys.path``, as for ``remote_server``):

- :func:`wait_until` polls a condition until it holds and returns what it returned; past the deadline
  it fails with an :class:`AssertionError` that says what was awaited, for how long, and (``detail``)
  what the test can show of why, e.g. the tail of a log;
- :func:`wait_for_line` waits until a file (a process's log) holds a line containing some text.

A condition may itself raise (an ``assert proc.poll() is None`` that a process died): that ends the
wait at once with its own error. A wait that is the behaviour under test (an observation window, a
period that must pass) is a plain ``time.sleep`` with a comment saying why, not one of these.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")


def wait_until(condition: Callable[[], T], *, timeout: float, what: str, interval: float = 0.02,
               detail: Callable[[], object] | None = None) -> T:
    """``condition()``'s first truthy value, polled every ``interval`` seconds; an AssertionError naming
    ``what`` (and ``detail()``, when given) if none came within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            message = f"timed out after {timeout:g} s waiting for {what}"
            if detail is not None:
                message += f"\n{detail()}"
            raise AssertionError(message)
        time.sleep(interval)  # the polling interval


def tail(path: Path | str, chars: int = 3000) -> str:
    """The end of a text file ('' while it does not exist)."""
    try:
        return Path(path).read_text(errors="replace")[-chars:]
    except FileNotFoundError:
        return ""


def wait_for_line(path: Path | str, text: str, *, timeout: float, alive: Callable[[], object] | None = None) -> str:
    """The first complete line of ``path`` that contains ``text``, once there is one; ``alive`` (e.g. a
    process's ``poll() is None``) must stay true while waiting, else the wait fails at once. Either
    failure shows the file's tail."""

    def found() -> str | None:
        try:
            content = Path(path).read_text(errors="replace")
        except FileNotFoundError:
            content = ""
        # a line is complete once its newline is written: a line being written is not read half
        line = next((line for line in content.splitlines(keepends=True) if text in line and line.endswith("\n")),
                    None)
        if line is None and alive is not None:
            assert alive(), f"gone before {text!r} was in {path}:\n{tail(path)}"
        return line.rstrip("\n") if line is not None else None

    return wait_until(found, timeout=timeout, what=f"{text!r} in {path}", detail=lambda: tail(path))
