"""What the tests read in a harness's printed report (bench/chaos/chaos.py's), in one place."""

from __future__ import annotations

import re


def assert_journal_kept(stdout: str, output: str) -> None:
    """Every status the broker acknowledged consumed and in the visit stats; no origin handed out twice."""
    journal = re.search(r"^\s*journal:\s+(\d+) visit statuses the broker acknowledged; (\d+) not consumed by the "
                        r"group at the end; (\d+) origins whose visit stats miss", stdout, re.MULTILINE)
    assert journal is not None and int(journal.group(1)) > 0, output[-6000:]
    assert (int(journal.group(2)), int(journal.group(3))) == (0, 0), output[-6000:]
    twice = re.search(r"^\s*grabs handed out twice: (\d+) ", stdout, re.MULTILINE)
    assert twice is not None and int(twice.group(1)) == 0, output[-6000:]
