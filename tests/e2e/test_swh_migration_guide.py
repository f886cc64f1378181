"""docs/how-to/migrate-from-swh-scheduler.md runs as written, against a real swh-scheduler 3.6.

The fixture sets up what the page starts from, the way an archive runs it: on a throwaway
PostgreSQL cluster, swh-scheduler's database made by its own tools (``swh db create``, ``swh db
init``, in the peer's environment ``.bench-venvs/swh-scheduler-3.6.0``), filled through its own
API by ``bench/store/swh_import_peer.py`` (listers, listed origins, visits through its journal client,
grabs, task types, tasks, runs, metrics), and served by its own RPC server (its Flask app under
gunicorn, as ``bench/face/vs_swh_rpc.py`` starts it); and an empty database for Ostinato. The page's
```sh blocks then run, in order, in one bash (``set -e -o pipefail``), with this install's
``ostinato`` and the peer's ``swh`` on the PATH and the variables the page names in the
environment. Then the outcomes: the import copied swh's rows, ``compare`` printed its table for
each policy, and ``copy-tasks`` made swh's server hold the tasks created in Ostinato after the cut-over.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from datetime import UTC, datetime
from pathlib import Path

import psycopg
import pytest
from waiting import wait_until

from test_servers.postgres import free_port
from test_servers.swh_peer import VENV_DIR, create_peer_database, ensure_peer_venv, peer_env

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "how-to" / "migrate-from-swh-scheduler.md"
FILLER = ROOT / "bench" / "store" / "swh_import_peer.py"
SH_BLOCK = re.compile(r"^```sh\n(.*?)^```$", re.S | re.M)
ORIGINS, TASKS = 300, 60
#: the policies `compare` grabs git with by default (swh's recurrent visit scheduler's)
GIT_POLICIES = ("already_visited_order_by_lag", "never_visited_oldest_update_first", "origins_without_last_update")
#: what the page's task creators add through Ostinato after the tasks side moved (its `swh scheduler task add`)
CREATED_AFTER_CUT_OVER = {
    "https://forge.example.org/saved/urgent.git": ("oneshot", "high"),
    "https://forge.example.org/saved/later.git": ("oneshot", None),
    "https://forge.example.org/new/project.git": ("recurring", None),
}


def rows(dsn: str, query: str) -> list[tuple]:
    with psycopg.connect(dsn) as conn:
        return conn.execute(query).fetchall()


def wait_for(url: str, process: subprocess.Popen, log: Path) -> None:
    def answers() -> bool:
        if process.poll() is not None:
            raise AssertionError(f"the server of {url} exited: {log.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2):
                return True
        except urllib.error.HTTPError:
            return True  # it answers
        except OSError:
            return False

    wait_until(answers, timeout=60, interval=0.05, what=f"{url} to answer")


@pytest.fixture(scope="module")
def swh(pg_server, tmp_path_factory):
    """swh-scheduler as an archive runs it: its database, filled through its API, and its RPC server."""
    python = ensure_peer_venv(Path(os.environ.get("OSTINATO_SWH_PEER_VENV") or ROOT / VENV_DIR), log=lambda line: None)
    work = tmp_path_factory.mktemp("swh")
    name = f"swh_migration_{uuid.uuid4().hex[:8]}"
    dsn = create_peer_database(python, pg_server.admin_dsn, name, log=lambda line: None)
    now = datetime.now(UTC).replace(microsecond=0)
    subprocess.run([str(python), str(FILLER), "--dsn", dsn, "--origins", str(ORIGINS), "--tasks", str(TASKS),
                    "--now", now.isoformat(), "--batch", "250"], check=True, capture_output=True, text=True)
    config = work / "scheduler.yml"
    config.write_text(json.dumps({"scheduler": {"cls": "postgresql", "db": dsn}}))  # JSON is YAML
    port = free_port()
    log = work / "swh-server.log"
    with log.open("w") as out:
        server = subprocess.Popen([str(python), "-m", "gunicorn", "--workers", "1", "--bind", f"127.0.0.1:{port}",
                                   "swh.scheduler.api.server:make_app_from_configfile()"],
                                  env=peer_env(SWH_CONFIG_FILENAME=str(config)), stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/"
    try:
        wait_for(url, server, log)
        yield {"dsn": dsn, "url": url, "python": python}
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
        pg_server.drop_database(name)


def run_page(env: dict[str, str], cwd: Path) -> tuple[int, str, str]:
    """The page's ```sh blocks in one bash, in its own process group (the page starts Ostinato's server in
    the background: the group is ended afterwards); its exit status, stdout and stderr."""
    script = "\n".join(SH_BLOCK.findall(PAGE.read_text(encoding="utf-8")))
    out, err = cwd / "page.out", cwd / "page.err"
    with out.open("w") as stdout, err.open("w") as stderr:
        bash = subprocess.Popen(["bash", "-e", "-o", "pipefail", "-c", script], cwd=cwd, env=env, stdout=stdout,
                                stderr=stderr, start_new_session=True)
        try:
            code = bash.wait(timeout=240)
        finally:
            try:
                os.killpg(bash.pid, signal.SIGTERM)  # the group bash led: the server it left in the background
            except ProcessLookupError:
                pass
    return code, out.read_text(), err.read_text()


def test_the_page_has_the_four_steps_in_order():
    text = PAGE.read_text(encoding="utf-8")
    steps = [line.split(" ", 2)[1] for line in text.splitlines() if re.match(r"## \d\. ", line)]
    assert steps == ["1.", "2.", "3.", "4."], steps
    script = "\n".join(SH_BLOCK.findall(text))
    for command in ("ostinato db init", "ostinato token add", "ostinato import swh-scheduler", "ostinato swh-rpc serve",
                    "ostinato swh-rpc compare", "ostinato swh-rpc copy-tasks"):
        assert command in script, command
    assert "--with-runs --verify" in script
    assert "kafka-consumer-groups.sh" in text and "--reset-offsets --to-datetime" in text  # shown, not run
    assert "kafka-consumer-groups.sh" not in script
    assert "SWH_SCHEDULER_URL=" not in script  # swh's CLI reads that variable as its --url


def test_the_migration_guide_runs_as_written(swh, pg_server, tmp_path):
    ours_name = f"ostinato_migration_{uuid.uuid4().hex[:8]}"
    ours = pg_server.create_database(ours_name)
    swh_tasks_before = {r[0] for r in rows(swh["dsn"], "SELECT id FROM task")}
    try:
        peer_bin = tmp_path / "peer-bin"  # only the peer's `swh` command, not its python nor its pytest
        peer_bin.mkdir()
        (peer_bin / "swh").symlink_to(Path(swh["python"]).parent / "swh")
        port = free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OSTINATO_", "SWH_", "PG"))}
        env.update({
            "PATH": os.pathsep.join([str(Path(sys.executable).parent), str(peer_bin), env.get("PATH", "")]),
            "SWH_SCHEDULER_DB": swh["dsn"], "SWH_SCHEDULER_RPC_URL": swh["url"], "OSTINATO_DB": ours,
            "OSTINATO_SWH_RPC_HOST": "127.0.0.1", "OSTINATO_SWH_RPC_PORT": str(port),
            "OSTINATO_SWH_RPC_URL": f"http://127.0.0.1:{port}/",
        })
        started = time.monotonic()
        code, out, err = run_page(env, tmp_path)
        took = time.monotonic() - started
        output = out + err
        assert code == 0, f"the page stopped ({code}) after {took:.0f}s:\n{output[-6000:]}"
        assert "Traceback" not in output, output[-6000:]

        # 1. the import copied swh's rows (and checked them, twice: at first and at the cut-over)
        assert output.count("Verified: the ") >= 2, out
        for table, ours_table in (("listers", "lister"), ("listed_origins", "listed_origin"), ("task_run", "task_run"),
                                  ("task_type", "task_type")):
            assert rows(ours, f"SELECT count(*) FROM {ours_table}") == rows(swh["dsn"], f"SELECT count(*) FROM {table}"), table
        # a visit stats row of swh's is an origin visited or scheduled (Ostinato keeps a row for every listed origin)
        assert rows(ours, "SELECT count(*) FROM origin_visit_stats WHERE last_status_date IS NOT NULL "
                          "OR last_scheduled IS NOT NULL") == rows(swh["dsn"], "SELECT count(*) FROM origin_visit_stats")
        ours_tasks = {r[0] for r in rows(ours, "SELECT id FROM task")}
        assert swh_tasks_before <= ours_tasks
        assert len(ours_tasks - swh_tasks_before) == len(CREATED_AFTER_CUT_OVER)

        # 2. compare printed its table for each policy, and a verdict
        for policy in GIT_POLICIES:
            assert re.search(rf"│ {policy}\s+│ \d+\s+│ \d+\s+│ \d+\s+│", out), (policy, out)
        assert re.search(r"^Verdict: ", out, re.M), out

        # 4. copy-tasks: swh's server holds the tasks created in Ostinato after the cut-over, under new ids
        copied = rows(swh["dsn"], "SELECT id, arguments, policy::text, priority::text, status::text FROM task "
                                  f"WHERE id <> ALL(ARRAY{sorted(swh_tasks_before) or [0]}::bigint[])")
        by_url = {}
        for _id, arguments, policy, priority, status in copied:
            url = (arguments.get("kwargs") or {}).get("url") or (arguments.get("args") or [None])[0]
            by_url[url] = (policy, priority, status)
        assert {url: v[:2] for url, v in by_url.items()} == CREATED_AFTER_CUT_OVER, copied
        assert {v[2] for v in by_url.values()} == {"next_run_not_scheduled"}
        assert "Copied 3 tasks to " in out, out
    finally:
        pg_server.drop_database(ours_name)
