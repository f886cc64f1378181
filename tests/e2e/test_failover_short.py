"""The chaos harness's failover variant (bench/chaos/chaos.py --minutes 1 --quick --failover): the services of
test_chaos_short.py on a primary and a synchronous standby, the primary killed and the standby promoted; the
history must hold every invariant."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from harness_output import assert_journal_kept

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.long
def test_short_failover_run_keeps_every_invariant():
    """The same services on a primary and a synchronous standby: the primary killed with SIGKILL, the standby
    promoted, a new standby built, twice; no overlapping run, no lost run left, the journal's replay unchanged."""
    result = subprocess.run([sys.executable, str(ROOT / "bench" / "chaos" / "chaos.py"), "--minutes", "1", "--quick",
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
