"""The chaos harness's short variant (bench/chaos/chaos.py --minutes 2 --quick): four schedulers, a runner, an
orchestrator and two journal clients of one consumer group on a private PostgreSQL and a Tansu broker, killed,
paused and cut off from the database; the history it checks afterwards must hold every invariant: no
overlapping runs, no status lost, no grab handed out twice. (Its failover variant is test_failover_short.py:
a file of its own, so that a parallel run gives each its own worker.)"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from harness_output import assert_journal_kept

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.long
def test_short_chaos_run_keeps_every_invariant():
    result = subprocess.run([sys.executable, str(ROOT / "bench" / "chaos" / "chaos.py"), "--minutes", "2", "--quick"],
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
