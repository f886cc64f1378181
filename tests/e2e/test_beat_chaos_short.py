"""The chaos harness of the beats, short form (bench/beat/beat_chaos.py --quick, under a minute): three
Celery beats over PostgreSQL and Redis, one killed, one paused past its lease, PostgreSQL stopped
for 20 s with a beat killed meanwhile. Counted from what the two workers received: no fire time
twice, and none missed that the catch-up rule does not explain."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.long
def test_three_beats_under_chaos_send_each_fire_time_once(tmp_path):
    out = tmp_path / "chaos.json"
    result = subprocess.run([sys.executable, str(ROOT / "bench" / "beat" / "beat_chaos.py"), "--quick", "--out", str(out)],
                            cwd=ROOT, capture_output=True, text=True, timeout=300)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-6000:]
    found = json.loads(out.read_text())
    assert found["duplicates"] == 0 and found["unexplained"] == 0, output[-6000:]
    assert found["faults"] == {"kill": 2, "pause": 1, "resume": 1, "pg_stop": 1, "pg_start": 1, "stopping": 1,
                               "drained": 1, "report": 1}, output[-6000:]
    # the outage made a backlog, caught up by its rule
    assert found["explained"] > 0 and found["fire_times"] > 40, output[-6000:]
    assert found["stop_codes"] == [0, 0, 0], output[-6000:]
    assert "all invariants hold" in result.stdout
