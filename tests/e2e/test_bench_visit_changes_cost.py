"""bench/limits/visit_changes_cost.py on a few origins: both stores take every status of both halves, read back the
change times sent, and the run reports a ratio for each."""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_visit_changes_cost_bench_times_both_halves_on_both_stores(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT))
    from bench.limits import visit_changes_cost

    out = tmp_path / "cost.json"
    assert visit_changes_cost.main(["--origins", "1200", "--batch", "200", "--rounds", "4", "--warm-up", "1",
                                    "--no-durable", "--json", str(out)]) == 0
    results = json.loads(out.read_text())["results"]
    assert set(results) == {"sqlite", "postgresql"}
    for found in results.values():
        assert len(found["seconds"]["plain"]) == len(found["seconds"]["timed"]) == len(found["round_ratios"]) == 4
        assert found["statuses_per_s"]["plain"] > 0 and found["statuses_per_s"]["timed"] > 0
        assert found["ratio_median"] > 0
    sys.modules.pop("visit_changes_cost", None)
