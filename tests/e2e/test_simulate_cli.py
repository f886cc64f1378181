"""``ostinato simulate`` end to end, tiny: every policy runs, the report has its shape, the oracle
beats uniform, plots are written, and bad options name themselves."""

from __future__ import annotations

import json
from datetime import UTC

import pytest
from click.testing import CliRunner

from ostinato.cli import cli
from ostinato.config import Settings
from ostinato.sim.policies import TRACE_ONLY, policies_under_test

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
    # without a trace, every policy but those that need one (the model oracle fits its models on a trace)
    assert names == [name for name in policies_under_test() if name not in TRACE_ONLY] and "model_oracle" not in names
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
    assert "workload web_cho2000" in result.stdout and "visits see whether the source changed" in result.stdout
    assert "--policy uniform --policy oldest_scheduled_first" in result.stdout.replace("\n", "")


@pytest.mark.parametrize("args,field", [
    (["--sources", "0"], "sources"),
    (["--workload", "nope"], "workload"),
    (["--policy", "nope"], "policy"),
    (["--share-last-update", "2"], "--share-last-update"),
    (["--failure-rate", "x"], "--failure-rate"),
    (["--step", "2d"], "step"),
    (["--capacity", "-3"], "capacity"),
    (["--max-gap", "1d"], "--max-gap"),
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


# -- recorded histories --------------------------------------------------------------
def write_trace(path, origins=30, days=60):
    """A small trace: each origin changes in bursts of two, a few hours apart."""
    import random
    from datetime import datetime, timedelta

    rng = random.Random(5)
    start = datetime(2024, 1, 1, tzinfo=UTC)
    lines = []
    for number in range(origins):
        t = rng.uniform(-10, 5)
        while t < days:
            for extra in (0.0, rng.uniform(0.05, 0.5)):
                when = (start + timedelta(days=t + extra)).isoformat()
                lines.append(json.dumps({"origin": f"https://forge.example/{number}", "visit_type": "git",
                                         "changed_at": when}))
            t += rng.expovariate(1 / 8)
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_trace_replays_and_is_set_against_the_hindsight_bound(tmp_path):
    trace = write_trace(tmp_path / "trace.jsonl")
    result = invoke("simulate", "--trace", str(trace), "--trace-start", "2024-01-01T00:00:00Z", "--warmup", "20",
                    "--days", "30", "--step", "6h", "--capacity", "3", "--max-gap", "30d", "--policy", "uniform",
                    "--policy", "oracle_freshness", "--json")
    assert result.exit_code == 0, (result.output, result.exception)
    data = json.loads(result.stdout)
    assert data["config"]["trace"] == str(trace) and data["config"]["sources"] == 30
    assert "--trace " in data["command"] and "--trace-start 2024-01-01T00:00:00+00:00" in data["command"]
    bound = data["hindsight"]
    assert bound["window_visits"] == 90 and 0 < bound["freshness"] < 1 and bound["mean_age_days"] > 0
    assert bound["burstiness"]["soon_after_tenth"] > 2  # every change has a twin within hours
    for policy in data["policies"]:
        assert policy["freshness"] <= bound["freshness"] and policy["mean_age_days"] >= bound["mean_age_days"]
        assert policy["relative"]["freshness_of_bound"] == pytest.approx(policy["freshness"] / bound["freshness"])
    table = invoke("simulate", "--trace", str(trace), "--warmup", "5", "--days", "5", "--policy", "uniform",
                   "--capacity", "10", "--max-gap", "10d")
    assert table.exit_code == 0, (table.output, table.exception)
    assert "hindsight bound" in table.stdout and "of bound" in table.stdout


def test_a_trace_of_origin_lines_replays_as_the_same_changes_one_a_line(tmp_path):
    one_a_line = write_trace(tmp_path / "trace.jsonl", origins=8, days=30)
    by_origin: dict[tuple[str, str], list[str]] = {}
    for line in one_a_line.read_text().splitlines():
        change = json.loads(line)
        by_origin.setdefault((change["origin"], change["visit_type"]), []).append(change["changed_at"])
    origin_lines = tmp_path / "origins.jsonl"
    origin_lines.write_text("".join(json.dumps({"origin": o, "visit_type": t, "changes": c}) + "\n"
                                    for (o, t), c in by_origin.items()))
    digests = []
    for trace in (one_a_line, origin_lines):
        result = invoke("trace", "stats", str(trace), "--json")
        assert result.exit_code == 0, (result.output, result.exception)
        digests.append(json.loads(result.stdout)["sha256"])
    assert digests[0] == digests[1]


def test_visits_that_see_change_times_give_them_to_the_store_policy(tmp_path):
    trace = write_trace(tmp_path / "trace.jsonl")
    args = ["simulate", "--trace", str(trace), "--trace-start", "2024-01-01T00:00:00Z", "--warmup", "20", "--days",
            "30", "--step", "6h", "--capacity", "3", "--max-gap", "30d", "--policy", "change_rate_optimal",
            "--no-bound", "--setting", "revisit_steer_every=1d", "--json"]
    runs = {}
    for level in ("counts", "times"):
        result = invoke(*args, "--visit-information", level)
        assert result.exit_code == 0, (result.output, result.exception)
        data = json.loads(result.stdout)
        assert data["config"]["visit_information"] == level and f"--visit-information {level}" in data["command"]
        runs[level] = data["policies"][0]
    # the same visits' outcomes, but with times every change's twin hours later counts in the same burst:
    # a different belief, so a different schedule
    assert runs["times"]["visits"] == runs["counts"]["visits"]
    assert runs["times"]["freshness"] != runs["counts"]["freshness"]
    both = invoke(*args, "--visit-information", "times", "--change-counts", "no")
    assert both.exit_code == 2 and "--change-counts: expected no value with visit_information" in both.output


def test_the_model_oracle_replays_a_trace_and_needs_one(tmp_path):
    trace = write_trace(tmp_path / "trace.jsonl")
    result = invoke("simulate", "--trace", str(trace), "--trace-start", "2024-01-01T00:00:00Z", "--warmup", "20",
                    "--days", "30", "--step", "6h", "--capacity", "3", "--policy", "model_oracle", "--policy",
                    "uniform", "--json")
    assert result.exit_code == 0, (result.output, result.exception)
    data = json.loads(result.stdout)
    runs = {policy["name"]: policy for policy in data["policies"]}
    oracle = runs["model_oracle"]
    assert oracle["visits"] > 0 and 0 < oracle["freshness"] <= data["hindsight"]["freshness"]
    assert oracle["notes"]["distinct_models"] >= 1 and oracle["notes"]["multiplier"] > 0
    # every change has a twin within hours: knowing it, the oracle waits for the twin, uniform does not
    assert oracle["freshness"] > runs["uniform"]["freshness"]
    refused = invoke("simulate", "--sources", "50", "--warmup", "1", "--days", "1", "--policy", "model_oracle")
    assert refused.exit_code == 2 and "policy: expected a --trace" in refused.output


@pytest.mark.parametrize("lines,message", [
    (['{"origin": "https://a", "visit_type": "git", "changed_at": "2024-01-01T00:00:00Z"}',
      '{"origin": "https://a", "visit_type": "git"}',
      '{"origin": "https://b", "visit_type": "git", "changed_at": "yesterday"}', "not json"],
     ["3 bad lines, nothing was written", "line 2: changed_at: expected", "line 3: changed_at: expected",
      "line 4: record: expected"]),
    (["origin,visit_type,changed_at", "https://a,git,2024-01-01T00:00:00Z", "https://a,,2024-01-02T00:00:00Z"],
     ["line 3: visit_type: expected"]),
    (["origin,type,date", "https://a,git,2024-01-01T00:00:00Z"], ["line 1: header: expected"]),
    (['{"origin": "https://a", "visit_type": "git", "changes": ["2024-01-01T00:00:00Z", "soon"]}',
      '{"origin": "https://b", "visit_type": "git", "changes": "2024-01-01T00:00:00Z"}',
      '{"origin": "https://c", "visit_type": "git", "changes": [], "changed_at": "2024-01-01T00:00:00Z"}'],
     ["line 1: changes[1]: expected", "line 2: changes: expected a list", "line 3: changed_at: expected only"]),
    (['{"origin": "https://a", "visit_type": "git", "changed_at": "2024-01-01T00:00:00Z"}',
      '{"origin": "https://b", "visit_type": "hg", "changed_at": "2024-01-01T00:00:00Z"}'], ["visit_type: expected one"]),
])
def test_a_bad_trace_names_line_and_field_and_runs_nothing(tmp_path, lines, message):
    trace = tmp_path / "bad.trace"
    trace.write_text("\n".join(lines) + "\n")
    result = invoke("simulate", "--trace", str(trace), "--warmup", "1", "--days", "1", "--out", str(tmp_path / "r.json"))
    assert result.exit_code == 2, result.output
    for part in message:
        assert part in result.output
    assert "simulated uniform" not in result.output and not (tmp_path / "r.json").exists()


@pytest.mark.parametrize("args,field", [
    (["--sources", "10"], "sources"), (["--workload", "git_lognormal"], "workload"), (["--dead-share", "0"], "--dead-share"),
    (["--trace-start", "2024-01-01"], "--trace-start"), (["--trace-start", "2030-01-01T00:00:00Z"], "--trace-start"),
])
def test_a_trace_refuses_what_it_decides_itself(tmp_path, args, field):
    trace = write_trace(tmp_path / "trace.jsonl", origins=3)
    result = invoke("simulate", "--trace", str(trace), "--warmup", "1", "--days", "1", *args)
    assert result.exit_code == 2, result.output
    assert f"{field}:" in result.output
    missing = invoke("simulate", "--trace", str(tmp_path / "nope.jsonl"))
    assert missing.exit_code == 2 and "trace:" in missing.output


def test_a_trace_built_from_debian_changelogs_and_measured(tmp_path):
    import gzip

    doc = tmp_path / "doc"
    for package, days in (("alpha", (1, 2, 40)), ("beta", (3, 30))):
        entries = "".join(f"{package} (1.{day}-1) unstable; urgency=low\n\n  * Upload.\n\n"
                          f" -- Jane Doe <jane@example.org>  Mon, {day:02d} Jan 2024 12:00:00 +0000\n\n"
                          if day <= 31 else
                          f"{package} (1.{day}-1) unstable; urgency=low\n\n  * Upload.\n\n"
                          f" -- Jane Doe <jane@example.org>  Fri, 09 Feb 2024 12:00:00 +0000\n\n"
                          for day in days)
        (doc / package).mkdir(parents=True)
        (doc / package / "changelog.Debian.gz").write_bytes(gzip.compress(entries.encode()))
    out = tmp_path / "debian.jsonl"
    result = invoke("trace", "build", "--debian-changelogs", "--doc-dir", str(doc), "--out", str(out))
    assert result.exit_code == 0, (result.output, result.exception)
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(records) == 5 and {r["visit_type"] for r in records} == {"deb"}
    assert records[0] == {"origin": "deb://Debian/packages/alpha", "visit_type": "deb",
                          "changed_at": "2024-01-01T12:00:00+00:00"}
    assert "2 origins, 5 changes from 2 changelogs" in result.stderr
    stats = invoke("trace", "stats", str(out), "--json")
    assert stats.exit_code == 0, (stats.output, stats.exception)
    data = json.loads(stats.stdout)
    assert data["origins"] == 2 and data["changes"] == 5 and data["last_change"] == "2024-02-09T12:00:00+00:00"
    empty = invoke("trace", "build", "--debian-changelogs", "--doc-dir", str(tmp_path))
    assert empty.exit_code == 2 and "--doc-dir:" in empty.output
