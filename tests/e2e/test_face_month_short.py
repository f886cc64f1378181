"""The short form of ``bench/face/face_month.py``: a tiny simulated world (300 sources, 3 days of warm-up, 2
measured, hourly steps) through every scheduler the benchmark runs by default — Ostinato's orchestrator,
Ostinato's ``swh-rpc serve`` with change_rate_optimal fed by swh's journal client and by
``record_visit_statuses``, and swh-scheduler 3.6.0's own server with its default mixes and single policies —
end to end, through swh's own client in the peer's environment (made on first use), on a PostgreSQL cluster
the script starts. It checks that the harness runs and gives figures for every scheduler, not the
benchmark's goals (a few simulated days teach nothing)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # the repository's root: bench.*

from bench.face.face_month import DEFAULT_SCHEDULERS


@pytest.mark.long
def test_face_month_short(tmp_path):
    out = tmp_path / "face-month.json"
    result = subprocess.run([sys.executable, str(ROOT / "bench" / "face" / "face_month.py"), "--sources", "300", "--days", "2",
                             "--warmup", "3", "--seed", "1", "--json-out", str(out)],
                            cwd=ROOT, capture_output=True, text=True, timeout=600)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-6000:]
    report = json.loads(out.read_text())
    assert report["parameters"]["sources"] == 300 and report["parameters"]["seeds"] == [1]
    runs = {row["scheduler"]: row for row in report["runs"]}
    assert set(runs) == set(DEFAULT_SCHEDULERS) and len(report["runs"]) == len(DEFAULT_SCHEDULERS)
    for name, row in runs.items():
        assert 0.0 <= row["freshness"] <= 1.0 and row["mean_age_days"] >= 0.0, (name, row)
        assert row["capacity_in_window"] > 0 and row["seconds"] > 0, (name, row)
    # every scheduler that can visit at once did visit, through its own server (swh's lag policy alone visits
    # only origins visited before, so none in a world that starts unvisited)
    for name in set(DEFAULT_SCHEDULERS) - {"swh-already_visited_order_by_lag"}:
        assert runs[name]["visits"] > 0, (name, runs[name])
    for name in set(DEFAULT_SCHEDULERS) - {"ostinato"}:
        assert runs[name]["notes"]["client"]["calls"]["grab"] > 0, (name, runs[name]["notes"])  # through the client
    for face in ("face+swh-journal", "face+ostinato-journal"):
        assert runs[face]["notes"]["grabbed"] > 0 and runs[face]["notes"]["statuses_fed"] > 0, runs[face]["notes"]
    assert runs["face+swh-journal"]["notes"]["client"]["calls"]["journal"] > 0  # swh's journal client ran
    assert runs["face+ostinato-journal"]["notes"]["client"]["calls"]["journal"] == 0  # the store's verb, not it
    assert set(report["summary"]) == set(DEFAULT_SCHEDULERS)
    assert report["goals"]["swh_best"] in runs
    assert "face-month" in result.stdout + result.stderr  # the table was printed
