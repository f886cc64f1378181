"""swh-scheduler 3.6.0, the peer the benchmarks compare with: its separate virtual environment (made by
``test_servers.swh_peer``: one marker, one lock, for the benchmarks, the tests and the swh-compat
harness), its database, the system tools it needs, and a peer driver run in its interpreter."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench.common.report import ROOT as REPO
from bench.common.report import console
from test_servers import swh_peer
from test_servers.postgres import PostgresCluster

PEER_VERSION = swh_peer.PEER_VERSION
PEER_VENV = swh_peer.default_peer_venv(REPO)
PEER_DB = "swh_scheduler"


def _log(line: str) -> None:
    console.print(line, markup=False, highlight=False)


def run(command: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    console.print(f"  $ {' '.join(command)}", markup=False, highlight=False)
    return subprocess.run(command, check=True, text=True, **kwargs)


def ensure_system_tools() -> None:
    """PostgreSQL's server and psql (``swh db create`` runs psql): from Debian's packages if missing."""
    have_server = any((d / "initdb").exists() for d in Path("/usr/lib/postgresql").glob("*/bin"))
    if have_server and shutil.which("psql"):
        return
    console.print("PostgreSQL or psql missing: running scripts/install-system-deps")
    run(["bash", str(REPO / "scripts" / "install-system-deps")])


def ensure_peer_venv(venv: Path, requirements: Sequence[str] = (), *, say: Callable[[str], None] = _log) -> Path:
    """The peer's virtual environment, made on first use (``test_servers.swh_peer``), with ``requirements``
    installed besides the peer itself; returns its python."""
    return swh_peer.ensure_peer_venv(venv, extra=requirements, log=say)


def create_peer_database(cluster: PostgresCluster, python: Path) -> str:
    """The peer's own tools: ``swh db create -d NAME scheduler``, then ``swh db init -d DSN scheduler``."""
    return swh_peer.create_peer_database(python, cluster.dsn("postgres"), PEER_DB, log=_log)


class PeerProcess:
    """A peer driver (``bench/store/vs_swh_peer.py``, …) in the peer's interpreter: one JSON line out, one back."""

    def __init__(self, python: Path, driver: Path) -> None:
        self.process = subprocess.Popen([str(python), str(driver)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        text=True, bufsize=1, cwd=REPO)

    def __call__(self, op: str, **params: Any) -> dict[str, Any]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps({"op": op, **params}) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            raise SystemExit(f"the peer's driver exited (code {self.process.wait()}) during {op}")
        answer: dict[str, Any] = json.loads(line)
        if "error" in answer:
            console.print(answer.get("traceback", ""))
            raise SystemExit(f"peer {op} failed: {answer['error']}")
        return answer

    def close(self) -> None:
        if self.process.poll() is None:
            self("quit")
            self.process.wait(timeout=30)
