"""A run's outcome read from its metadata (domain.run_outcomes): a traceback in any shape it is kept
in becomes lines of text."""

from __future__ import annotations

from ostinato.domain.run_outcomes import Outcome, outcome_of, traceback_lines

PRINTED = ["Traceback (most recent call last):\n", '  File "/srv/jobs.py", line 12, in sync\n    fetch(url)\n',
           "ValueError: no such host\n"]
LINES = ["Traceback (most recent call last):", '  File "/srv/jobs.py", line 12, in sync', "    fetch(url)",
         "ValueError: no such host"]


def test_a_traceback_becomes_lines_whatever_its_shape():
    assert traceback_lines(PRINTED) == LINES  # the lines Python printed, some holding two
    assert traceback_lines("".join(PRINTED)) == LINES  # one text
    assert traceback_lines(["jobs.py:12 in sync: fetch(url)", "net.py:40 in fetch"]) == [
        "at jobs.py:12 in sync: fetch(url)", "at net.py:40 in fetch"]  # an embedded worker's frames
    assert traceback_lines(None) == traceback_lines("") == traceback_lines([]) == []
    assert traceback_lines([{"file": "a.py", "line": 3}]) == ['{"file": "a.py", "line": 3}']


def test_an_outcome_splits_the_error_the_traceback_and_the_result():
    assert outcome_of({"error": "OSError: full", "traceback": PRINTED, "items": 3}) == Outcome(
        "OSError: full", LINES, {"items": 3})
    assert outcome_of(None) == Outcome() and outcome_of({"error": ""}) == Outcome()
