"""``ostinato simulate`` with politeness per host, tiny: on a world where a few hosts hold most sources,
the limits cost the busy host its share of the visits, the capacity still goes out in full (to other
hosts), politeness off changes nothing, and the oracles (scheduled by time) are refused."""

from __future__ import annotations

import json

from click.testing import CliRunner

from ostinato.cli import cli

TINY = ["simulate", "--sources", "600", "--warmup", "10", "--days", "5", "--seed", "2", "--hosts", "20",
        "--no-bound", "--setting", "revisit_steer_every=1d", "--json"]
POLICIES = ["--policy", "oldest_scheduled_first", "--policy", "uniform", "--policy", "multiplicative"]


def simulate(*args):
    result = CliRunner().invoke(cli, [*TINY, *args])
    assert result.exit_code == 0, (result.output, result.exception)
    return {p["name"]: p for p in json.loads(result.stdout)["policies"]}


def test_politeness_moves_the_busy_hosts_share_to_other_hosts_and_spends_the_capacity():
    off, on = simulate(*POLICIES), simulate(*POLICIES, "--max-per-host", "1")
    for name in off:
        before, after = off[name]["notes"]["hosts"], on[name]["notes"]["hosts"]
        assert before["largest_host_share_of_sources"] > 0.4
        assert before["largest_host_share_of_visits"] > 0.3
        # one visit in flight, a step of an hour: at most 24 a day of the capacity's 86
        assert after["largest_host_share_of_visits"] <= 24 / 86 + 0.01, (name, after)
        assert after["visits_in_window"] >= 0.99 * after["capacity_in_window"], (name, after)
        assert on[name]["freshness"] < off[name]["freshness"], name


def test_oracles_are_refused_with_politeness():
    result = CliRunner().invoke(cli, [*TINY, "--max-per-host", "2", "--policy", "oracle_age"])
    assert result.exit_code == 2 and "policy: expected" in result.output, result.output
    result = CliRunner().invoke(cli, [*TINY, "--max-per-host", "0"])
    assert result.exit_code == 2 and "--max-per-host:" in result.output, result.output
