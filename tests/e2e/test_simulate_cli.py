"""``ostinato simulate`` end to end, tiny: every policy runs, the report has its shape, the oracle
beats uniform, plots are written, and bad options name themselves."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

import ostinato.cli.simulate  # noqa: F401  (registers the command)
from ostinato.cli import cli
from ostinato.config import Settings
from ostinato.sim.policies import policies_under_test

TINY = ["simulate", "--sources", "500", "--warmup", "20", "--days", "10", "--seed", "3"]
# change_rate_optimal's threshold steering costs tens of milliseconds a pass: once a simulated day is enough here
if hasattr(Settings, "revisit_steer_every"):
    TINY += ["--setting", "revisit_steer_every=1d"]


def invoke(*args):
    return CliRunner().invoke(cli, list(args))


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    folder = tmp_path_factory.mktemp("sim")
    result = invoke(*TINY, "--json", "--out", str(folder / "report.json"), "--plots", str(folder / "plots"))
    assert result.exit_code == 0, (result.output, result.exception)
    data = json.loads(result.stdout)
    return data, folder


def test_every_policy_runs_and_reports_every_measure(report):
    data, _ = report
    names = [p["name"] for p in data["policies"]]
    assert names == list(policies_under_test())
    for policy in data["policies"]:
        for key in ("freshness", "mean_age_days", "change_latency_days", "staleness_p99_days", "staleness_max_days",
                    "visits", "wasted", "never_visited", "first_visit_latency_days", "relative", "freshness_over_time"):
            assert key in policy, (policy["name"], key)
        assert 0 <= policy["freshness"] <= 1 and policy["mean_age_days"] >= 0
        assert len(policy["freshness_over_time"]["days"]) == 30
    by_name = {p["name"]: p for p in data["policies"]}
    for name, policy in by_name.items():
        if policy["kind"] == "store":
            assert sum(policy["notes"]["picked_by_store_policy"].values()) > 0 or name == "seed003_package_mix"
    # share_last_update 0 by default: the default package mix has nothing it may visit
    assert by_name["seed003_package_mix"]["visits"] == 0


def test_the_oracle_beats_uniform_and_relative_figures_are_consistent(report):
    data, _ = report
    by_name = {p["name"]: p for p in data["policies"]}
    uniform, oracle = by_name["uniform"], by_name["oracle_freshness_floor"]
    assert by_name["oracle_freshness"]["freshness"] >= uniform["freshness"]
    assert oracle["freshness"] >= uniform["freshness"]
    assert by_name["oracle_age_floor"]["mean_age_days"] <= uniform["mean_age_days"]
    assert oracle["relative"]["freshness_gain"] == pytest.approx(1.0)
    assert uniform["relative"]["freshness_gain"] == pytest.approx(0.0)
    assert by_name["oracle_age_floor"]["relative"]["age_of_oracle"] == pytest.approx(1.0)
    assert uniform["theory"]["freshness"] < oracle["theory"]["freshness"]


def test_the_report_says_how_to_run_it_again_and_what_was_set(report):
    data, folder = report
    assert data["command"].startswith("ostinato simulate --workload git_lognormal --sources 500 ")
    assert "--seed 3" in data["command"]
    assert data["config"]["capacity"] == pytest.approx(500 / 7)
    assert data["store_settings"]["absolute_cooldown"] == 3600 and data["store_settings"]["minimum_interval"] == 3600
    assert json.loads((folder / "report.json").read_text()) == data
    for name in ("freshness.png", "age.png"):
        assert (folder / "plots" / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_table_names_every_policy_chosen():
    result = invoke(*TINY, "--policy", "uniform", "--policy", "oldest_scheduled_first", "--workload", "web_cho2000")
    assert result.exit_code == 0, (result.output, result.exception)
    assert "Freshness and age" in result.stdout and "Visits and tails" in result.stdout
    assert "uniform" in result.stdout and "oldest_sche" in result.stdout and "oracle_age" not in result.stdout
    assert "workload web_cho2000" in result.stdout and "change counts not reported" in result.stdout
    assert "--policy uniform --policy oldest_scheduled_first" in result.stdout.replace("\n", "")


@pytest.mark.parametrize("args,field", [
    (["--sources", "0"], "sources"),
    (["--workload", "nope"], "workload"),
    (["--policy", "nope"], "policy"),
    (["--share-last-update", "2"], "share_last_update"),
    (["--failure-rate", "x"], "failure_rate"),
    (["--step", "2d"], "step"),
    (["--capacity", "-3"], "capacity"),
    (["--max-gap", "1d"], "max_gap"),
    (["--setting", "absolute_cooldown"], "setting"),
    (["--setting", "absolute_cooldown=soon"], "absolute_cooldown"),
    (["--db", "mysql://x"], "db"),
])
def test_bad_options_name_the_option(args, field):
    result = invoke("simulate", "--sources", "50", "--warmup", "1", "--days", "1", *args)
    assert result.exit_code == 2, result.output
    assert f"{field}:" in result.output or f"'--{field.replace('_', '-')}'" in result.output


def test_a_sqlite_file_per_store_policy(tmp_path):
    db = tmp_path / "sim.db"
    args = ["simulate", "--sources", "60", "--warmup", "2", "--days", "2", "--policy", "oldest_scheduled_first",
            "--db", f"sqlite:///{db}", "--json"]
    result = invoke(*args)
    assert result.exit_code == 0, (result.output, result.exception)
    assert (tmp_path / "sim.oldest_scheduled_first.db").exists()
    again = invoke(*args)
    assert again.exit_code == 2 and "db:" in again.output


@pytest.mark.postgresql
def test_store_policies_on_postgresql_in_a_schema_of_their_own(pg_server):
    import psycopg

    url = pg_server.create_database("ostinato_sim_e2e")
    try:
        result = invoke("simulate", "--sources", "80", "--warmup", "3", "--days", "2", "--policy", "seed000_feedback",
                        "--policy", "uniform", "--db", url, "--json")
        assert result.exit_code == 0, (result.output, result.exception)
        data = json.loads(result.stdout)
        assert data["policies"][0]["visits"] > 0
        with psycopg.connect(url) as conn:  # the schema is dropped afterwards
            schemas = conn.execute("SELECT nspname FROM pg_namespace WHERE nspname LIKE 'ostinato_sim_%'").fetchall()
        assert schemas == []
    finally:
        pg_server.drop_database("ostinato_sim_e2e")
