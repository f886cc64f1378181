"""The differential harness's short form (``bench/face/swh_diff.py --seeds 3 --ops 150``): the same seeded, random
operations through swh-scheduler's own client, ``RemoteScheduler``, to swh-scheduler 3.6.0's own server (the
reference, on PostgreSQL) and to ``ostinato swh-rpc serve`` on SQLite and on PostgreSQL, every answer compared
(docs/reference/swh-compat.md). It makes the peer's virtual environment on first use and starts its own
PostgreSQL cluster. Every operation must be counted once, and no difference may be unexplained: each one not
named in ``DELIBERATE`` (``bench/face/swh_diff_compare.py``) is listed with its reproduction."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SEEDS, OPS = 3, 150


@pytest.mark.long
def test_swh_diff_short(tmp_path):
    out = tmp_path / "swh-diff.json"
    result = subprocess.run([sys.executable, str(ROOT / "bench" / "face" / "swh_diff.py"), "--seeds", str(SEEDS), "--ops",
                             str(OPS), "--json-out", str(out)],
                            cwd=ROOT, capture_output=True, text=True, timeout=900)
    output = result.stdout + result.stderr
    assert out.exists(), output[-6000:]  # the run completed
    report = json.loads(out.read_text())
    assert report["seeds"] == list(range(SEEDS)) and report["ops"] == OPS
    assert set(report["counts"]) == {"sqlite", "postgresql"}
    assert not report["server_errors"], report["server_errors"]
    for store, counts in report["counts"].items():
        # each drawn operation, and each section of the final state of each seed, counted once
        assert counts["operations"] >= SEEDS * OPS, (store, counts)
        assert counts["operations"] == (counts["equal"] + counts["tie_reconciled"] + sum(counts["deliberate"].values())
                                        + counts["unexplained"] + counts["after_divergence"]), (store, counts)
        assert counts["equal"] > 0, (store, counts)
        assert set(counts["deliberate"]) <= set(report["deliberate"]), (store, counts)
    listed = [d for d in report["unexplained"]]
    assert len(listed) == sum(c["unexplained"] + c["after_divergence"] for c in report["counts"].values())
    first = [f"{d['store']}: {d['kind']} (seed {d['seed']} op {d['index']})" for d in listed if not d.get("after")]
    assert not listed, "\n".join(first[:40]) + f"\n({len(listed) - len(first)} more after a divergence)\n" + output[-3000:]
    assert result.returncode == 0, output[-6000:]
