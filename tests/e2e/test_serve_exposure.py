"""The servers' safe defaults: serving without tokens (`swh-rpc serve --no-auth`, `api serve
--open-metrics`) is refused beyond a loopback address unless `--insecure` says so, in one line that
names the flag, before anything is opened; once listening, each server prints one line with its URL,
the store (never its password) and whether tokens are required."""

from __future__ import annotations

import array
import fcntl
import os
import signal
import subprocess
import sys
import termios

import pytest
from cli_helpers import run
from test_api_serve import LAUNCH, wait_until_up
from waiting import wait_until

from ostinato.cli.app import is_loopback, store_shown
from ostinato.config import Settings
from ostinato.store import open_store
from test_servers.postgres import free_port


@pytest.mark.parametrize("args, flag", [
    (["swh-rpc", "serve", "--host", "0.0.0.0", "--no-auth"], "--no-auth"),
    (["swh-rpc", "serve", "--host", "10.1.2.3", "--no-auth"], "--no-auth"),
    (["api", "serve", "--host", "0.0.0.0", "--open-metrics"], "--open-metrics"),
    (["api", "serve", "--host", "::", "--open-metrics"], "--open-metrics"),
])
def test_serving_without_tokens_beyond_loopback_is_refused(tmp_path, args, flag):
    url = f"sqlite:///{tmp_path}/never.db"
    result = run(url, *args)
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: --host: expected a loopback address"), result.output
    assert flag in lines[0] and "--insecure" in lines[0]
    assert not (tmp_path / "never.db").exists()  # refused before the store was opened


def test_loopback_addresses():
    assert all(is_loopback(h) for h in ("127.0.0.1", "127.9.9.9", "::1", "[::1]", "localhost", "LOCALHOST"))
    assert not any(is_loopback(h) for h in ("0.0.0.0", "::", "10.0.0.1", "example.org", ""))


def test_the_store_is_shown_without_its_password():
    shown = store_shown(Settings().with_values({"db": "postgresql://alice:s3cret@db.example:5432/ostinato"}))
    assert "s3cret" not in shown and shown == "postgresql://alice:***@db.example:5432/ostinato"
    assert "s3cret" not in store_shown(Settings().with_values({"db": "host=db password=s3cret dbname=o"}))
    assert store_shown(Settings().with_values({"db": "sqlite:///x.db"})) == "sqlite:///x.db"


@pytest.mark.parametrize("command, expected", [
    (["swh-rpc", "serve", "--no-auth", "--insecure", "--host", "0.0.0.0"],
     "ostinato swh-rpc serve: http://0.0.0.0:{port}/ on {url}; NO TOKENS (--no-auth)"),
    (["swh-rpc", "serve", "--host", "127.0.0.1"],
     "ostinato swh-rpc serve: http://127.0.0.1:{port}/ on {url}; tokens required (read scope to read"),
    (["api", "serve", "--host", "127.0.0.1", "--open-metrics"],
     "ostinato api serve: http://127.0.0.1:{port}/ on {url}; tokens required (not for /health, the OpenAPI "
     "description and /metrics"),
])
def test_a_listening_server_says_where_on_what_and_how(tmp_path, command, expected):
    url = f"sqlite:///{tmp_path}/o.db"
    with open_store(url) as store:
        store.init_schema()
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("OSTINATO_")}
    launch = LAUNCH.replace("import ostinato.cli.api,", "import ostinato.cli.api, ostinato.cli.swh_rpc,")
    server = subprocess.Popen([sys.executable, "-c", launch, "--db", url, *command, "--port", str(port),
                               "--log-level", "warning"],
                              cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        wait_until_up(server, f"http://127.0.0.1:{port}/" + ("health" if command[0] == "api" else ""))
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=20) == 0
        output = server.stdout.read()
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    started = [line for line in output.splitlines() if line.startswith("ostinato ")]
    assert len(started) == 1 and started[0].startswith(expected.format(port=port, url=url)), output


def unread(pipe) -> int:
    """Bytes written to a pipe that its reader has not taken yet."""
    count = array.array("i", [0])
    fcntl.ioctl(pipe.fileno(), termios.FIONREAD, count)
    return count[0]


def test_ctrl_c_exits_130_and_says_what_was_written(tmp_path):
    """A command stopped by Ctrl-C while it reads its input: status 130, one line, nothing written."""
    url = f"sqlite:///{tmp_path}/o.db"
    with open_store(url) as store:
        store.init_schema()
    run(url, "task-type", "add", "load-git", "ostinato.examples:load_directory", "Load git", "--no-default-interval")
    env = {k: v for k, v in os.environ.items() if not k.startswith("OSTINATO_")}
    command = subprocess.Popen([sys.executable, "-c", "from ostinato.cli import main; main()", "--db", url, "origin",
                                "record", "--lister", "forge/one", "-"], cwd=tmp_path, env=env, stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               # as a terminal's Ctrl-C finds it (a background job starts with SIGINT ignored)
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        command.stdin.write('{"url": "https://x/a", "visit_type": "git"}\n')
        command.stdin.flush()
        # started and reading stdin, which stays open: it has taken the line from the pipe
        wait_until(lambda: unread(command.stdin) == 0, timeout=60, what="the command to read its stdin")
        command.send_signal(signal.SIGINT)
        out, err = command.communicate(timeout=20)
    finally:
        if command.poll() is None:
            command.kill()
            command.wait()
    assert command.returncode == 130, (out, err)
    assert err.strip().splitlines()[-1].startswith("interrupted (Ctrl-C): the transaction in progress"), err
    assert "Traceback" not in err and "Aborted!" not in err
    with open_store(url) as store:
        assert store.list_listers() == []
