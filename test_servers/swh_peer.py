"""The peer, swh-scheduler 3.6.0, in a virtual environment of its own: for the benchmarks that set
Ostinato beside it (``bench/store/vs_swh.py``, ``bench/beat/celery_dispatch.py``) and the tests that compare the
Celery messages both send (``tests/e2e/test_swh_compat_celery.py``, docs/reference/swh-compat-celery.md),
the importer's (``bench/store/swh_import.py``, ``tests/e2e/test_swh_import.py``).

Nothing of the peer is imported here or anywhere in Ostinato: it is installed with pip in
``.bench-venvs/swh-scheduler-3.6.0`` and run only by that environment's interpreter and its ``swh``
command. :func:`ensure_peer_venv` makes the environment on first use (about 20 s on a 2-core
machine, pip's cache warm or not) and reuses it afterwards; a file lock lets several test
processes ask at once. :func:`create_peer_database` makes the peer's database with its own tools,
``swh db create`` then ``swh db init``, on any PostgreSQL server given by an admin DSN.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

__all__ = ["PEER_REQUIREMENT", "PEER_VERSION", "VENV_DIR", "create_peer_database", "default_peer_venv",
           "ensure_peer_venv", "peer_env", "peer_packages"]

PEER_VERSION = "3.6.0"
PEER_REQUIREMENT = f"swh-scheduler[journal]=={PEER_VERSION}"
#: where a checkout keeps it, relative to the repository (ignored by git)
VENV_DIR = Path(".bench-venvs") / f"swh-scheduler-{PEER_VERSION}"


def default_peer_venv(root: Path) -> Path:
    """Where a checkout keeps the peer's environment: ``<root>/.bench-venvs/swh-scheduler-<version>``."""
    return root / VENV_DIR


def _psycopg_version() -> str:
    from importlib.metadata import version

    return version("psycopg")


def ensure_peer_venv(venv: Path, *, extra: Sequence[str] = (), log: Callable[[str], object] = print) -> Path:
    """The peer's virtual environment, made on first use; returns its python.

    It holds :data:`PEER_REQUIREMENT`, psycopg's binary build at the version Ostinato runs on (the
    peer depends on plain psycopg, which would otherwise fall back to its pure-Python form), and the
    ``extra`` requirements a caller needs (the swh-compat harness: the peer's test extras). A marker
    file lists what was installed; a caller needing more installs only that, so the benchmarks, the
    tests and the harness share one environment.
    """
    python = venv / "bin" / "python"
    marker = venv / ".installed"
    wanted = {PEER_REQUIREMENT, f"psycopg[binary]=={_psycopg_version()}", *extra}
    venv.parent.mkdir(parents=True, exist_ok=True)
    with open(venv.parent / f".{venv.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another process may be making it: wait for it
        installed = set(marker.read_text().split()) if python.exists() and marker.exists() else set()
        if wanted <= installed:
            log(f"peer environment: {venv} (reused)")
            return python
        log(f"peer environment: {'completing' if python.exists() else 'creating'} {venv}")
        if not python.exists():
            _run([sys.executable, "-m", "venv", str(venv)], log)
            _run([str(python), "-m", "pip", "install", "--quiet", "--upgrade", "pip"], log)
        _run([str(python), "-m", "pip", "install", "--quiet", *sorted(wanted)], log)
        marker.write_text("\n".join(sorted(installed | wanted)) + "\n")
    return python


def _run(command: list[str], log: Callable[[str], object], **kwargs) -> None:
    log("  $ " + " ".join(command))
    subprocess.run(command, check=True, text=True, **kwargs)


def peer_packages(python: Path) -> dict[str, str]:
    """``pip freeze`` of the peer's environment: the swh-* packages and psycopg."""
    frozen = subprocess.run([str(python), "-m", "pip", "freeze"], capture_output=True, text=True, check=True).stdout
    packages = {}
    for line in frozen.splitlines():
        name, sep, version = line.partition("==")
        if sep and name.lower().startswith(("swh", "psycopg")):
            packages[name] = version
    return packages


def peer_env(**extra: str) -> dict[str, str]:
    """This process's environment without libpq's and swh's variables (they would steer the peer), plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PG", "SWH_"))}
    env.update(extra)
    return env


def create_peer_database(python: Path, admin_dsn: str, name: str, *,
                         log: Callable[[str], object] = print) -> str:
    """The peer's database ``name`` on the server of ``admin_dsn``, made by its own tools; returns its DSN.

    ``swh db create -d NAME scheduler`` (which runs psql, reading the server from libpq's
    variables), then ``swh db init -d DSN scheduler``.
    """
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    info = conninfo_to_dict(admin_dsn)
    swh = str(python.parent / "swh")
    libpq = {"PGHOST": str(info.get("host") or "127.0.0.1"), "PGPORT": str(info.get("port") or 5432),
             "PGUSER": str(info.get("user") or "postgres")}
    if info.get("password"):
        libpq["PGPASSWORD"] = str(info["password"])
    env = peer_env(**libpq)
    _run([swh, "db", "create", "-d", name, "scheduler"], log, env=env, stdout=subprocess.DEVNULL)
    dsn = make_conninfo(**{**info, "dbname": name})
    _run([swh, "db", "init", "-d", dsn, "scheduler"], log, env=env, stdout=subprocess.DEVNULL)
    return dsn
