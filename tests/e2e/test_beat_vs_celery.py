"""Ostinato's beats against Celery's own, on a simulated clock (bench/beat/beat_compare.py --quick): the
same 34-entry beat_schedule (intervals from 1 s to 1 day, crontabs in five zones), 45 minutes
around the night Europe/Paris and Europe/London move to summer time, through a real Redis broker
and worker. Counted from what the worker received, the two send the same fire times except the
daylight-saving choices docs/reference/distributed.md lists, and Ostinato sends none twice."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: the documented differences in the quick window: (side, entry, local fire time)
DOCUMENTED = {
    ("stock only", "cron-0230-paris", "2026-03-29 03:30:00 CEST"),
    ("stock only", "cron-every-10m-at-2", "2026-03-29 03:00:00 CEST"),
    ("stock only", "cron-two-hourly", "2026-03-29 03:00:00 CEST"),
    ("Ostinato only", "cron-0230-paris", "2026-03-29 03:00:00 CEST"),
    ("Ostinato only", "cron-15-past-1to4", "2026-03-29 03:00:00 CEST"),
}


@pytest.mark.long
def test_the_same_fire_times_as_celerys_beat_but_the_daylight_saving_choices(tmp_path):
    out = tmp_path / "compare.json"
    result = subprocess.run([sys.executable, str(ROOT / "bench" / "beat" / "beat_compare.py"), "--quick", "--out", str(out)],
                            cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, (result.stdout + result.stderr)[-6000:]
    found = json.loads(out.read_text())
    assert found["duplicates"] == 0
    assert {(d["side"], d["entry"], d["local"]) for d in found["differences"]} == DOCUMENTED
    rows = {row["entry"]: row for row in found["entries"]}
    assert len(rows) >= 30 and rows["every-1s"]["stock"] == rows["every-1s"]["ostinato"] > 2000
    assert found["stock_received"] == found["stock_sends"]  # the worker got every stock send
