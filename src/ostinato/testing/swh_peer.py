"""swh-scheduler 3.6.0 in its own virtual environment, for the benchmarks that compare with it
(``bench/vs_swh.py``, ``bench/swh_import.py``) and the importer's end-to-end test.

Nothing of the peer is imported here or anywhere in Ostinato: :func:`ensure_peer_venv` makes
(once, then reuses) a separate virtual environment with ``pip install
"swh-scheduler[journal]==3.6.0"`` and psycopg's binary build, and :func:`create_peer_database`
runs the peer's own tools, ``swh db create`` then ``swh db init``, to make its database on a
PostgreSQL server. Code that drives the peer runs in that environment's interpreter.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Callable

PEER_VERSION = "3.6.0"
PEER_REQUIREMENT = f"swh-scheduler[journal]=={PEER_VERSION}"
#: where the repository keeps it (ignored by git): ``.bench-venvs/swh-scheduler-3.6.0``
VENV_DIR = Path(".bench-venvs") / f"swh-scheduler-{PEER_VERSION}"

Log = Callable[[str], None]


def _run(command: list[str], log: Log, **kwargs) -> subprocess.CompletedProcess[str]:
    log(f"  $ {' '.join(command)}")
    return subprocess.run(command, check=True, text=True, **kwargs)


def ensure_peer_venv(venv: Path, *, log: Log = print) -> Path:
    """The peer's virtual environment, made on first use (a marker file names what it holds, so that
    a half-made one is made again); returns its python."""
    import psycopg

    python = venv / "bin" / "python"
    marker = venv / ".installed"
    wanted = f"{PEER_REQUIREMENT} psycopg[binary]=={psycopg.__version__}"
    if python.exists() and marker.exists() and marker.read_text().strip() == wanted:
        log(f"peer environment: {venv} (reused)")
        return python
    log(f"peer environment: creating {venv}")
    if not python.exists():
        _run([sys.executable, "-m", "venv", str(venv)], log)
    _run([str(python), "-m", "pip", "install", "--quiet", "--upgrade", "pip"], log)
    # psycopg's binary build, the one Ostinato runs on: the peer depends on plain psycopg,
    # which otherwise falls back to its pure-Python implementation.
    _run([str(python), "-m", "pip", "install", "--quiet", PEER_REQUIREMENT, f"psycopg[binary]=={psycopg.__version__}"], log)
    marker.write_text(wanted + "\n")
    return python


def peer_packages(python: Path) -> dict[str, str]:
    """``pip freeze`` of the peer's environment: the swh-* packages and psycopg."""
    frozen = subprocess.run([str(python), "-m", "pip", "freeze"], capture_output=True, text=True, check=True).stdout
    packages = {}
    for line in frozen.splitlines():
        name, sep, version = line.partition("==")
        if sep and (name.lower().startswith("swh") or name.lower().startswith("psycopg")):
            packages[name] = version
    return packages


def create_peer_database(python: Path, admin_dsn: str, name: str, *, log: Log = print) -> str:
    """The peer's own tools on the server of ``admin_dsn``: ``swh db create -d NAME scheduler``, then
    ``swh db init -d DSN scheduler``; returns the new database's DSN."""
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    swh = str(python.parent / "swh")
    server = conninfo_to_dict(admin_dsn)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PG", "SWH_"))}
    # swh db create takes libpq's standard variables for the server, and runs psql
    for key, variable in (("host", "PGHOST"), ("port", "PGPORT"), ("user", "PGUSER"), ("password", "PGPASSWORD")):
        if server.get(key):
            env[variable] = str(server[key])
    _run([swh, "db", "create", "-d", name, "scheduler"], log, env=env, stdout=subprocess.DEVNULL)
    dsn = make_conninfo(admin_dsn, dbname=name)
    _run([swh, "db", "init", "-d", dsn, "scheduler"], log, env=env, stdout=subprocess.DEVNULL)
    return dsn


__all__ = ["PEER_REQUIREMENT", "PEER_VERSION", "VENV_DIR", "create_peer_database", "ensure_peer_venv", "peer_packages"]
