"""The tests' own waiting helpers (tests/waiting.py): they return as soon as the event is there, and fail
past their deadline saying what was awaited."""

from __future__ import annotations

import threading
import time

import pytest
from waiting import wait_for_line, wait_until


def test_wait_until_returns_the_first_truthy_value_as_soon_as_it_comes():
    calls = []

    def third_time() -> str | None:
        calls.append(1)
        return "there" if len(calls) == 3 else None

    began = time.monotonic()
    assert wait_until(third_time, timeout=5, what="the third call", interval=0.001) == "there"
    assert len(calls) == 3 and time.monotonic() - began < 1


def test_wait_until_fails_past_its_deadline_saying_what_and_how_long():
    began = time.monotonic()
    with pytest.raises(AssertionError) as failed:
        wait_until(lambda: 0, timeout=0.1, what="the impossible", detail=lambda: "last seen: nothing")
    assert 0.1 <= time.monotonic() - began < 2
    assert str(failed.value) == "timed out after 0.1 s waiting for the impossible\nlast seen: nothing"


def test_wait_until_lets_an_error_of_the_condition_through():
    def dead() -> bool:
        raise AssertionError("the process exited")

    with pytest.raises(AssertionError, match="the process exited"):
        wait_until(dead, timeout=5, what="never")


def test_wait_for_line_waits_for_a_complete_line_written_later(tmp_path):
    log = tmp_path / "server.log"
    log.write_text("starting\nlistening on 12")  # the line is not complete yet

    def finish() -> None:
        with open(log, "a") as out:
            out.write("34\n")

    threading.Timer(0.05, finish).start()
    assert wait_for_line(log, "listening on", timeout=5) == "listening on 1234"


def test_wait_for_line_fails_with_the_tail_of_the_file(tmp_path):
    log = tmp_path / "server.log"
    log.write_text("starting\nstill starting\n")
    with pytest.raises(AssertionError, match="(?s)waiting for 'ready' in .*still starting"):
        wait_for_line(log, "ready", timeout=0.05)
    with pytest.raises(AssertionError, match="(?s)gone before 'ready'.*still starting"):
        wait_for_line(log, "ready", timeout=5, alive=lambda: False)
    with pytest.raises(AssertionError, match="waiting for 'ready' in"):
        wait_for_line(tmp_path / "never-written.log", "ready", timeout=0.05)
