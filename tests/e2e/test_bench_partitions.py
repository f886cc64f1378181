"""bench/limits/partitions.py on a small database: the three copies of the origin tables get the same rows, and every
grab statement, on every copy, hands out the batch asked for."""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_partitions_bench_writes_the_same_rows_and_grabs_a_batch_on_every_copy(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT))
    from bench.limits import partitions

    out = tmp_path / "partitions.json"
    assert partitions.main(["--origins", "3000", "--batch", "1000", "--grab-batch", "200", "--rounds", "1",
                            "--parts", "4", "--json-out", str(out)]) == 0
    results = json.loads(out.read_text())["results"]
    digests = results["visit_stats_digests"]
    assert set(digests) == {"plain", "by_type", "by_hash"}
    assert len(set(digests.values())) == 1 and next(iter(digests.values())).startswith("3000:")
    for pick, by_statement in results["grabs"].items():
        assert set(by_statement) == {f"{c}/{k}" for c in digests for k in ("pick", "pick_and_mark_by_key")} | {
            "plain/pick_and_mark_by_tid"}, pick
        for statement, found in by_statement.items():
            assert found["rows"] == 200, (pick, statement)
        assert "Merge Append" in by_statement["by_hash/pick"]["nodes"], pick  # one index walk per part, merged
    for layout in digests:
        assert results["sizes"][f"{layout}.origin_visit_stats"]["heap_bytes"] > 0
        assert results["rates_per_s"][layout]["listings"] > 0
    sys.modules.pop("partitions", None)
