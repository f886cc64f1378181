"""`ostinato run` and `ostinato orchestrator` visit the example origins (sub-directories
listed by `ostinato example install`) as real processes, and the visits show in
`ostinato origin show`; bad orchestrator settings are refused with the field named."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
from cli_helpers import ok, ok_json, run

from ostinato.examples import list_directories, load_directory


def ostinato(url: str, cwd, *args: str, **env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("OSTINATO_")}
    proc = subprocess.run([sys.executable, "-m", "ostinato", "--db", url, *args], cwd=cwd, env={**clean, **env},
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout
    return proc


@pytest.fixture
def tree(tmp_path):
    (tmp_path / "alpha").mkdir()
    (tmp_path / "alpha" / "readme.txt").write_text("hello\n")
    (tmp_path / "beta" / "deep").mkdir(parents=True)
    (tmp_path / "beta" / "deep" / "code.py").write_text("print(1)\n")
    (tmp_path / ".hidden").mkdir()
    return tmp_path


def stats_of(url: str, path) -> dict:
    [entry] = ok_json(url, "origin", "show", path.as_uri())["visit_types"]
    assert entry["visit_type"] == "directory" and [lst["lister"] for lst in entry["listed"]] == ["example"]
    return entry["stats"]


@pytest.mark.parametrize("command, runs", [("run", 3), ("orchestrator", 0)])
def test_example_origins_are_visited_and_shown(fresh_url, tree, command, runs):
    ok(fresh_url, "example", "install")
    out = ok(fresh_url, "example", "install").output  # again is harmless
    assert "example origins: 2 sub-directories" in out
    proc = ostinato(fresh_url, tree, command, "--once")
    assert f"stopped: {runs} runs dispatched, {runs} ended, 2 visits dispatched, 2 ended" in proc.stdout
    assert "orchestrator: dispatched 2 load-directory" in proc.stdout
    if command == "run":  # `ostinato run` also runs the example schedule
        assert "1 schedule run," in proc.stdout
        assert ok_json(fresh_url, "schedule", "runs", "example-heartbeat")[0]["status"] in ("succeeded", "failed")
    for name in ("alpha", "beta"):
        stats = stats_of(fresh_url, tree / name)
        assert stats["last_visit_status"] == "successful" and stats["successful_visits"] == 1
        assert stats["last_snapshot"] == load_directory((tree / name).as_uri())["snapshot"]
    shown = ok(fresh_url, "origin", "show", (tree / "alpha").as_uri()).output
    assert "Last visit: successful, " in shown and "Successful visits: 1" in shown
    assert run(fresh_url, "origin", "show", (tree / ".hidden").as_uri()).exit_code == 1  # hidden: not listed


def test_a_changed_directory_is_visited_again_after_it_is_listed_again(fresh_url, tree):
    fast = {"OSTINATO_ABSOLUTE_COOLDOWN": "1ms"}
    ok(fresh_url, "example", "install")
    ostinato(fresh_url, tree, "orchestrator", "--once", **fast)
    first = stats_of(fresh_url, tree / "alpha")
    changed = tree / "alpha" / "readme.txt"
    changed.write_text("hello again\n")
    later = time.time_ns() + 3_600 * 10**9  # modified after the visit whatever the file system's time resolution
    os.utime(changed, ns=(later, later))
    ok(fresh_url, "example", "install")  # the lister sees the newer last_update
    proc = ostinato(fresh_url, tree, "orchestrator", "--once", **fast)
    assert "1 visit dispatched, 1 ended" in proc.stdout and "1 already_visited_order_by_lag" in proc.stdout
    second = stats_of(fresh_url, tree / "alpha")
    assert second["successful_visits"] == 2 and second["last_snapshot"] != first["last_snapshot"]
    assert second["last_eventful"] == second["last_successful"] != first["last_successful"]
    assert stats_of(fresh_url, tree / "beta")["successful_visits"] == 1  # unchanged: not visited again


def test_the_example_lister_task_lists_the_directories_again(fresh_url, tree):
    from ostinato.examples import relist_directories
    from ostinato.store import open_store

    ok(fresh_url, "example", "install")
    tasks = ok_json(fresh_url, "task", "list", "-t", "example-list-directories")
    assert len(tasks) == 1 and tasks[0]["arguments"]["args"][1] == fresh_url
    changed = tree / "beta" / "later.txt"
    changed.write_text("later\n")
    later = time.time_ns() + 7_200 * 10**9
    os.utime(changed, ns=(later, later))
    result = relist_directories(str(tree), fresh_url)
    assert result.metadata == {"listed": 2}
    with open_store(fresh_url) as store:
        [beta] = store.get_listed_origins(url=(tree / "beta").as_uri())
    assert beta.origin.last_update.timestamp() == pytest.approx(later / 1e9)


def test_the_example_loader_and_lister(tree):
    alpha = tree / "alpha"
    listed = {o.url: o for o in list_directories(tree)}
    assert sorted(listed) == [alpha.as_uri(), (tree / "beta").as_uri()]
    assert all(o.visit_type == "directory" and o.last_update is not None for o in listed.values())
    first = load_directory(alpha.as_uri(), "example", "local")
    assert first["status"] == "full" and len(first["snapshot"]) == 40
    assert load_directory(alpha.as_uri(), "example", "local") == first  # nothing changed, same snapshot
    (alpha / "new.txt").write_text("new\n")
    assert load_directory(alpha.as_uri(), "example", "local")["snapshot"] != first["snapshot"]
    for child in alpha.iterdir():
        child.unlink()
    alpha.rmdir()
    assert load_directory(alpha.as_uri(), "example", "local") == {"status": "not_found", "snapshot": None}


@pytest.mark.parametrize("toml, field", [
    ("[policy_ratios.git]\nbogus_policy = 1\n", "policy_ratios.git.bogus_policy"),
    ("[ostinato.policy_ratios.git]\nalready_visited_order_by_lag = -5\n", "policy_ratios.git.already_visited_order_by_lag"),
    ("orchestrator_threshold = 3\n", "orchestrator_threshold"),
])
def test_bad_orchestrator_settings_exit_2_naming_the_field(fresh_url, tmp_path, toml, field):
    ok(fresh_url, "db", "init")
    (tmp_path / "ostinato.toml").write_text(toml, encoding="utf-8")
    for command in (["orchestrator", "--once"], ["run", "--once"]):
        result = run(fresh_url, *command)
        assert result.exit_code == 2, result.output
        assert f"error: {field}: expected" in result.output
