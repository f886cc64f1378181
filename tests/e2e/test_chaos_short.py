"""The chaos harness's short variants (bench/chaos.py --minutes 2 --quick, and with --failover): four
schedulers, a runner, an orchestrator and two journal clients of one consumer group on a private
PostgreSQL and a Tansu broker, killed, paused and cut off from the database, or moved to a promoted
standby when the primary dies; the history it checks afterwards must hold every invariant: no
overlapping runs, no status lost, no grab handed out twice."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.long
def test_short_chaos_run_keeps_every_invariant():
    result = subprocess.run([sys.executable, str(ROOT / "bench" / "chaos.py"), "--minutes", "2", "--quick"],
                            cwd=ROOT, capture_output=True, text=True, timeout=1200)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-6000:]
    overlaps = re.search(r"^\s*overlaps:\s+(\d+)$", result.stdout, re.MULTILINE)
    assert overlaps is not None, output[-6000:]
    assert int(overlaps.group(1)) == 0
    kills = re.search(r"^\s*kills:\s+(\d+)", result.stdout, re.MULTILINE)
    assert kills is not None and int(kills.group(1)) >= 5, output[-6000:]  # the faults did happen
    assert_journal_kept(result.stdout, output)
    assert "all invariants hold" in result.stdout


def assert_journal_kept(stdout: str, output: str) -> None:
    """Every status the broker acknowledged consumed and in the visit stats; no origin handed out twice."""
    journal = re.search(r"^\s*journal:\s+(\d+) visit statuses the broker acknowledged; (\d+) not consumed by the "
                        r"group at the end; (\d+) origins whose visit stats miss", stdout, re.MULTILINE)
    assert journal is not None and int(journal.group(1)) > 0, output[-6000:]
    assert (int(journal.group(2)), int(journal.group(3))) == (0, 0), output[-6000:]
    twice = re.search(r"^\s*grabs handed out twice: (\d+) ", stdout, re.MULTILINE)
    assert twice is not None and int(twice.group(1)) == 0, output[-6000:]


@pytest.mark.long
def test_short_failover_run_keeps_every_invariant():
    """The same services on a primary and a synchronous standby: the primary killed with SIGKILL, the standby
    promoted, a new standby built, twice; no overlapping run, no lost run left, the journal's replay unchanged."""
    result = subprocess.run([sys.executable, str(ROOT / "bench" / "chaos.py"), "--minutes", "1", "--quick",
                             "--failover", "--failover-every", "22"],
                            cwd=ROOT, capture_output=True, text=True, timeout=1200)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-6000:]
    failovers = re.search(r"^\s*failovers:\s+(\d+) \(synchronous replication\); longest gap in service ([\d.]+)s",
                          result.stdout, re.MULTILINE)
    assert failovers is not None and int(failovers.group(1)) >= 2, output[-6000:]
    assert re.search(r"^\s*overlaps:\s+0$", result.stdout, re.MULTILINE), output[-6000:]
    assert_journal_kept(result.stdout, output)
    assert "all invariants hold" in result.stdout
