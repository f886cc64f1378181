"""bench/limits/task_index_cost.py on a few tasks: both stores run the life cycle with and without the index, every
run grabbed and recorded on both sides, and the run reports a ratio for each step."""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_task_index_cost_bench_runs_both_sides_on_both_stores(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT))
    from bench.limits import task_index_cost

    out = tmp_path / "cost.json"
    assert task_index_cost.main(["--tasks", "2000", "--batch", "500", "--grab-batch", "400", "--reads", "3",
                                 "--json-out", str(out)]) == 0
    results = json.loads(out.read_text())["results"]
    assert set(results) == {"sqlite", "postgresql"}
    for found in results.values():
        for step in ("create_tasks", "grab_ready_tasks", "record_run_events", "task type page", "writes"):
            assert found[step]["with_seconds"] > 0 and found[step]["without_seconds"] > 0
            assert found[step]["ratio_with_over_without"] > 0 and found[step]["cpu_ratio_with_over_without"] > 0
    for name in ("task_index_cost", "visit_changes_cost"):
        sys.modules.pop(name, None)
