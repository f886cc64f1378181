"""``ostinato simulate-schedules`` end to end on a short fleet file: the table, the JSON report with
every measure per rule, the plots, and bad options refused in one line that names them (exit 2)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from ostinato.cli import cli

FLEET = {
    "name": "tiny", "description": "two nodes, a node lost for an hour", "nodes": {"n1": 2, "n2": 1},
    "days": 0.3, "warmup": "1h", "outages": [{"node": "n2", "at": "3h", "lasting": "1h"}],
    "schedules": [
        {"name": "hourly", "count": 6, "period": "1h", "cooldown": "40m",
         "durations": {"dist": "lognormal", "scale": "10m", "sigma": 0.5}, "failure": 0.05},
        {"name": "long", "count": 1, "period": "1d", "cooldown": "6h", "durations": {"dist": "fixed", "scale": "3h"}},
        {"name": "report", "count": 2, "cron": "0 6 * * *", "cron_max": "2h", "dont_run_on": ["n2"],
         "durations": {"dist": "pareto", "scale": "10m", "alpha": 1.5, "cap": "1h"}},
    ],
}


def invoke(*args):
    return CliRunner().invoke(cli, list(args))


@pytest.fixture(scope="module")
def fleet_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("fleet") / "tiny.json"
    path.write_text(json.dumps(FLEET))
    return path


def test_a_fleet_file_runs_under_every_rule_and_reports_every_measure(fleet_file, tmp_path):
    result = invoke("simulate-schedules", "--fleet", str(fleet_file), "--seeds", "2", "--json", "-",
                    "--plot", str(tmp_path / "plots"))
    assert result.exit_code == 0, (result.output, result.exception)
    data = json.loads(result.stdout)
    assert [f["name"] for f in data["fleets"]] == ["tiny"] and data["seeds"] == [0, 1]
    assert list(data["policies"]) == ["greedy", "fifo", "spf", "lookahead", "clairvoyant"]
    assert len(data["runs"]) == 10 and len(data["summary"]) == 7
    measured = [r for r in data["summary"] if r["policy"] in data["policies"]]
    bounds = {r["policy"]: r for r in data["summary"] if r["policy"] not in data["policies"]}
    assert list(bounds) == ["bound", "bound, worst ≤ greedy"] and len(measured) == 5
    for row in bounds.values():  # a computed bound: no rule measured below it, no seed behind it
        assert row["seeds"] == 0 and row["slot_use"]["mean"] is None
        assert all(row["error_share"]["mean"] <= r["error_share"]["mean"] + 0.02 for r in measured)
    assert data["fleets"][0]["demand"] > 0
    for row in measured:
        for key in ("error_share", "warning_share", "worst_error_share", "misses_per_day", "late_p50_min",
                    "late_p99_min", "recovery_min", "slot_use"):
            assert row[key]["n"] >= 1, (row["policy"], key)
        assert 0 <= row["error_share"]["mean"] <= 1 and 0 < row["slot_use"]["mean"] <= 1
        assert row["seeds"] == 2
    greedy = next(r for r in data["summary"] if r["policy"] == "greedy")
    assert greedy["vs_greedy"]["error_share"] in (1.0, None)
    for run in data["runs"]:
        assert run["lost"] >= 0 and run["error_count"]["hours"][0] == 0
    for name in ("errors-tiny.png", "error-share.png"):
        assert (tmp_path / "plots" / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_table_names_the_fleet_and_each_rule(fleet_file):
    result = invoke("simulate-schedules", "--fleet", str(fleet_file), "--seeds", "1", "--policies", "greedy,spf",
                    "--days", "0.2")
    assert result.exit_code == 0, (result.output, result.exception)
    assert "tiny: 9 schedules on 2 nodes" in result.stdout
    assert "greedy" in result.stdout and "spf" in result.stdout and "ERROR" in result.stdout


@pytest.mark.parametrize("args, field", [
    (["--seeds", "0"], "seeds"),
    (["--seeds", "-3"], "seeds"),
    (["--policies", "greedy,edf"], "policies"),
    (["--fleet", "nosuch"], "fleet"),
    (["--load", "-1"], "load"),
    (["--load", "0"], "load"),
    (["--days", "-2"], "days"),
    (["--max-step", "-5m"], "max_step"),
    (["--jobs", "0"], "jobs"),
])
def test_bad_options_name_the_option_and_run_nothing(args, field):
    result = invoke("simulate-schedules", *args)
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and (f"{field}:" in lines[0] or f"--{field.replace('_', '-')}" in lines[0]), lines
    assert "simulated" not in result.output


def test_a_bad_fleet_file_names_its_field(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({**FLEET, "schedules": [{**FLEET["schedules"][0], "durations": {"dist": "fixed",
                                                                                              "scale": "-4m"}}]}))
    result = invoke("simulate-schedules", "--fleet", str(path))
    assert result.exit_code == 2 and "fleet.schedules[0].durations.scale" in result.output, result.output
