"""The chaos harness's short variants (bench/chaos.py --minutes 2 --quick, and with --failover): four
schedulers, a runner and an orchestrator on a private PostgreSQL, killed, paused and cut off from the
database, or moved to a promoted standby when the primary dies; the history it checks afterwards must
hold every invariant, with no overlapping runs."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


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
    assert "all invariants hold" in result.stdout


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
    assert "all invariants hold" in result.stdout
