"""The swh-compat harness in the test suite (bench/face/swh_compat.py, both stores):
swh-scheduler 3.6.0's own test_scheduler.py and test_journal_client.py, unchanged, through its
own RemoteScheduler against ``ostinato swh-rpc serve`` on SQLite and on PostgreSQL. It makes the peer's virtual
environment on first use. Every test must pass; at most five may be exempted (each for inspecting
swh-scheduler's storage internals, with its reason; docs/reference/swh-compat.md)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.long
def test_swh_scheduler_suite_through_its_client(tmp_path):
    result = subprocess.run([sys.executable, str(ROOT / "bench" / "face" / "swh_compat.py"), "--stores", "sqlite,postgresql",
                             "--json-out", str(tmp_path / "swh-compat.json")],
                            cwd=ROOT, capture_output=True, text=True, timeout=1500)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-6000:]
    totals = re.search(r"^swh-compat: (\d+) passed, (\d+) failed, (\d+) exempted", result.stdout, re.MULTILINE)
    assert totals is not None, output[-6000:]
    assert int(totals.group(1)) >= 340, output[-6000:]  # the suite did run
    assert int(totals.group(2)) == 0, output[-6000:]
    assert int(totals.group(3)) <= 5
