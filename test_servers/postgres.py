"""A real, throwaway PostgreSQL cluster on this machine, for the test suite and benchmarks.

``PostgresCluster`` runs ``initdb`` into a private temporary directory, starts a
server that listens only on 127.0.0.1 at a free TCP port, and on ``stop()`` shuts
it down and deletes the directory. The server binaries come from the Debian
``postgresql`` package (``/usr/lib/postgresql/<version>/bin``), or from PATH.

initdb and the server refuse to run as root, so when this process is root both
run as the ``postgres`` system user (through ``runuser``), in a directory that
user owns.

Run ``python -m test_servers.postgres`` to start one by hand: it prints the
DSN on one line and keeps the server up until SIGINT or SIGTERM.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import os
import pwd
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from types import FrameType, TracebackType
from typing import TYPE_CHECKING, Final, Self
from urllib.parse import quote

if TYPE_CHECKING:
    from psycopg import sql

__all__ = ["PostgresCluster", "PostgresStandby", "find_bindir", "free_port"]

SERVER_BINARIES: Final = ("initdb", "pg_ctl", "postgres")
BINDIR_ENV: Final = "OSTINATO_PG_BINDIR"
SYSTEM_USER: Final = "postgres"  # OS account that runs the server when we are root
SUPERUSER: Final = "postgres"  # database role that initdb creates
START_TIMEOUT_S: Final = 60
STOP_TIMEOUT_S: Final = 60
LOG_TAIL_LINES: Final = 40

_INSTALL_HINT: Final = (
    "install Debian's postgresql package (apt-get install -y postgresql), "
    f"or set {BINDIR_ENV} to a directory holding {', '.join(SERVER_BINARIES)}"
)
# Settings the cluster manages itself; a caller changing them would break dsn().
_MANAGED_SETTINGS: Final = frozenset({"listen_addresses", "port", "unix_socket_directories"})
_PORT_IN_USE_MARKERS: Final = ("could not bind", "Address already in use")


def find_bindir() -> Path:
    """The directory holding initdb, pg_ctl and postgres, newest version first.

    Order: ``$OSTINATO_PG_BINDIR``; the highest ``/usr/lib/postgresql/*/bin``;
    ``pg_config --bindir`` (often the client-only package, so it may not qualify);
    the directory of ``initdb`` on PATH.
    """
    override = os.environ.get(BINDIR_ENV)
    if override:
        if _has_server(Path(override)):
            return Path(override)
        raise RuntimeError(f"{BINDIR_ENV}={override} does not hold {', '.join(SERVER_BINARIES)}")

    versioned: list[tuple[tuple[int, ...], Path]] = []
    for bindir in Path("/usr/lib/postgresql").glob("*/bin"):
        version = _version_key(bindir.parent.name)
        if version is not None and _has_server(bindir):
            versioned.append((version, bindir))
    if versioned:
        return max(versioned)[1]

    candidates: list[Path] = []
    pg_config = shutil.which("pg_config")
    if pg_config:
        try:
            out = subprocess.run(
                [pg_config, "--bindir"],
                capture_output=True,
                text=True,
                check=True,
                timeout=10,
            ).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            out = ""
        if out:
            candidates.append(Path(out))
    initdb = shutil.which("initdb")
    if initdb:
        candidates += [Path(initdb).parent, Path(initdb).resolve().parent]
    for bindir in candidates:
        if _has_server(bindir):
            return bindir
    raise RuntimeError(f"PostgreSQL server binaries not found: {_INSTALL_HINT}")


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that nothing listens on right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


class PostgresCluster:
    """One PostgreSQL server with its own data directory, for one test session or benchmark.

    Without ``base_dir`` the cluster lives in a fresh temporary directory that
    ``stop()`` deletes. With ``base_dir`` it lives (and stays) there, and an
    existing ``base_dir/data`` cluster is reused instead of running initdb again.
    ``durable=False`` turns off fsync and friends: fast, and unsafe on a crash,
    which is fine for throwaway data. ``settings`` are extra server settings,
    passed as ``-c key=value``.
    """

    def __init__(
        self,
        base_dir: Path | None = None,
        port: int | None = None,
        *,
        durable: bool = False,
        settings: dict[str, str] | None = None,
    ) -> None:
        extra = dict(settings or {})
        managed = sorted(_MANAGED_SETTINGS & extra.keys())
        if managed:
            raise ValueError(
                f"PostgresCluster sets {', '.join(managed)} itself; pass port= instead"
            )
        self.bindir: Path = find_bindir()
        self.port: int = port if port is not None else free_port()
        self.durable: bool = durable
        self.settings: dict[str, str] = extra
        self.base_dir: Path | None = Path(base_dir) if base_dir is not None else None
        self._port_chosen = port is None
        self._owns_base_dir = False
        self._started = False
        self._owner_pid = os.getpid()
        self._run_as = _server_account()
        self._runuser = shutil.which("runuser") if self._run_as is not None else None

    # -- paths -------------------------------------------------------------

    @property
    def data_dir(self) -> Path:
        return self._base() / "data"

    @property
    def socket_dir(self) -> Path:
        return self._base() / "sock"

    @property
    def log_path(self) -> Path:
        return self._base() / "postgres.log"

    # -- lifecycle ---------------------------------------------------------

    def start(self) -> None:
        """initdb if needed, start the server, and return once it accepts connections."""
        if self._started:
            raise RuntimeError(f"{self!r} is already started")
        self._started = True
        self._owner_pid = os.getpid()
        atexit.register(self._stop_at_exit)
        try:
            self._prepare_dirs()
            if not (self.data_dir / "PG_VERSION").exists():
                self._initdb()
            self._start_server()
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        """Fast shutdown, then delete the directory if this cluster created it. Idempotent."""
        if not self._started:
            return
        atexit.unregister(self._stop_at_exit)
        try:
            if self.base_dir is not None and (self.data_dir / "postmaster.pid").exists():
                self._stop_server()
        finally:
            self._started = False
            if self._owns_base_dir and self.base_dir is not None:
                shutil.rmtree(self.base_dir, ignore_errors=True)
                self.base_dir = None
                self._owns_base_dir = False

    def kill(self) -> None:
        """The machine's death: SIGKILL to the server and every process it started (no shutdown, no
        checkpoint); the data directory stays as the crash left it. ``stop()`` afterwards only cleans up."""
        pid = _read_pid(self.data_dir / "postmaster.pid")
        if pid is None:
            return
        children = [int(entry.name) for entry in Path("/proc").iterdir() if entry.name.isdigit()
                    and _parent_of(int(entry.name)) == pid]
        for victim in (pid, *children):
            with contextlib.suppress(ProcessLookupError):
                os.kill(victim, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while any(_alive(p) for p in (pid, *children)) and time.monotonic() < deadline:
            time.sleep(0.05)
        (self.data_dir / "postmaster.pid").unlink(missing_ok=True)
        for leftover in self.socket_dir.glob(".s.PGSQL.*"):  # what a shutdown would have removed
            leftover.unlink(missing_ok=True)

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "running" if self._started else "stopped"
        return f"<PostgresCluster 127.0.0.1:{self.port} {state} base_dir={self.base_dir}>"

    # -- databases ---------------------------------------------------------

    def dsn(self, dbname: str = "postgres") -> str:
        """A libpq URI for ``dbname`` as the superuser, over TCP (trust auth, no password)."""
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/{quote(dbname, safe='')}"

    def create_database(self, name: str, template: str | None = None) -> None:
        """CREATE DATABASE, optionally copying ``template`` (which must have no open sessions)."""
        from psycopg import sql

        query = sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name))
        if template is not None:
            query = sql.SQL("{} TEMPLATE {}").format(query, sql.Identifier(template))
        self._execute(query)

    def drop_database(self, name: str, *, missing_ok: bool = False) -> None:
        """DROP DATABASE ... WITH (FORCE): open sessions on it are terminated first."""
        from psycopg import sql

        query = sql.SQL("DROP DATABASE {}{} WITH (FORCE)").format(
            sql.SQL("IF EXISTS ") if missing_ok else sql.SQL(""), sql.Identifier(name)
        )
        self._execute(query)

    def _execute(self, query: sql.Composed) -> None:
        import psycopg

        with psycopg.connect(self.dsn(), autocommit=True, connect_timeout=10) as conn:
            conn.execute(query)

    # -- internals ---------------------------------------------------------

    def _base(self) -> Path:
        if self.base_dir is None:
            raise RuntimeError(f"{self!r} has no directory until it is started")
        return self.base_dir

    def _stop_at_exit(self) -> None:
        # A forked child that exits normally runs the parent's atexit hooks too: leave
        # the server alone there.
        if os.getpid() == self._owner_pid:
            self.stop()

    def _prepare_dirs(self) -> None:
        if self.base_dir is None:
            # The postgres user must be able to traverse the directory: /tmp, not
            # whatever TMPDIR root happens to have.
            parent = "/tmp" if self._run_as is not None else None
            self.base_dir = Path(tempfile.mkdtemp(prefix="ostinato-pg-", dir=parent))
            self._owns_base_dir = True
            self.base_dir.chmod(0o755)
        elif not self.base_dir.exists():
            self.base_dir.mkdir(parents=True)
            self.base_dir.chmod(0o755)
        for directory in (self.data_dir, self.socket_dir):
            directory.mkdir(exist_ok=True)
            self._give_to_server(directory)
            directory.chmod(0o700)
        self.log_path.touch(exist_ok=True)
        self._give_to_server(self.log_path)

    def _give_to_server(self, path: Path) -> None:
        if self._run_as is not None:
            os.chown(path, self._run_as.pw_uid, self._run_as.pw_gid)

    def _initdb(self) -> None:
        args = ["-D", str(self.data_dir), "-U", SUPERUSER, "--auth=trust", "-E", "UTF8"]
        if not self.durable:
            args.append("--no-sync")
        first = self._run("initdb", *args, "--locale=C.UTF-8", timeout=120)
        if first.returncode == 0:
            return
        _empty_dir(self.data_dir)
        second = self._run("initdb", *args, "--no-locale", timeout=120)
        if second.returncode != 0:
            raise RuntimeError(
                f"initdb failed in {self.data_dir}\n"
                f"--- with --locale=C.UTF-8:\n{first.stdout.strip()}\n"
                f"--- with --no-locale:\n{second.stdout.strip()}"
            )

    def _server_args(self) -> list[str]:
        values: dict[str, str] = {
            "listen_addresses": "127.0.0.1",
            "port": str(self.port),
            "unix_socket_directories": str(self.socket_dir),
            "max_connections": "200",
            "shared_buffers": "256MB",
        }
        if not self.durable:
            values.update(fsync="off", synchronous_commit="off", full_page_writes="off")
        values.update(self.settings)
        args: list[str] = []
        for key, value in values.items():
            args += ["-c", f"{key}={value}"]
        return args

    def _start_server(self) -> None:
        attempts = 3 if self._port_chosen else 1
        for attempt in range(1, attempts + 1):
            log_offset = self.log_path.stat().st_size
            # pg_ctl hands -o to /bin/sh, hence shell quoting.
            result = self._run(
                "pg_ctl", "start", "-D", str(self.data_dir), "-l", str(self.log_path),
                "-w", "-t", str(START_TIMEOUT_S), "-s", "-o", shlex.join(self._server_args()),
                timeout=START_TIMEOUT_S + 30,
            )  # fmt: skip
            if result.returncode == 0:
                return
            log = self._read_log(log_offset)
            port_taken = any(marker in log for marker in _PORT_IN_USE_MARKERS)
            if port_taken and attempt < attempts:
                # Someone took the free port between free_port() and the bind.
                self.port = free_port()
                continue
            raise RuntimeError(
                f"PostgreSQL ({self.bindir}) failed to start on 127.0.0.1:{self.port} "
                f"(pg_ctl waits up to {START_TIMEOUT_S}s): "
                f"{result.stdout.strip() or '(no output)'}\n"
                f"--- last lines of the server log:\n{_tail(log)}"
            )

    def _stop_server(self) -> None:
        pid_file = self.data_dir / "postmaster.pid"
        pid = _read_pid(pid_file)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._run(
                "pg_ctl", "stop", "-D", str(self.data_dir), "-m", "fast",
                "-w", "-t", str(STOP_TIMEOUT_S), "-s",
                timeout=STOP_TIMEOUT_S + 30,
            )  # fmt: skip
        if not pid_file.exists() or pid is None:
            return
        # Fast shutdown did not finish: immediate shutdown, then kill outright.
        for sig in (signal.SIGQUIT, signal.SIGKILL):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                return
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                if not pid_file.exists() or not _alive(pid):
                    return
                time.sleep(0.1)

    def _run(self, program: str, *args: str, timeout: float) -> subprocess.CompletedProcess[str]:
        argv = [str(self.bindir / program), *args]
        account = self._run_as
        if account is not None and self._runuser is not None:
            argv = [self._runuser, "-u", account.pw_name, "--", *argv]
            account = None  # runuser switches user; no need for subprocess to
        return subprocess.run(
            argv,
            cwd=self._base(),  # the server user may not be able to enter our cwd
            env=_server_env(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=timeout,
            check=False,
            user=account.pw_uid if account else None,
            group=account.pw_gid if account else None,
            extra_groups=[] if account else None,
        )

    def _read_log(self, offset: int = 0) -> str:
        try:
            with self.log_path.open("r", encoding="utf-8", errors="replace") as log:
                log.seek(offset)
                return log.read()
        except OSError as exc:
            return f"(cannot read log: {exc})"


class PostgresStandby(PostgresCluster):
    """A streaming-replication standby of a running ``primary``: its data directory is a ``pg_basebackup`` of the
    primary's (``-R``: the standby settings and ``primary_conninfo`` written for it, WAL streamed), and it
    serves reads (hot standby) on its own port. ``promote()`` makes it a primary (failover)."""

    def __init__(self, primary: PostgresCluster, **kwargs: object) -> None:
        super().__init__(durable=primary.durable, settings=dict(primary.settings), **kwargs)  # type: ignore[arg-type]  # PostgresCluster's own keywords, passed on
        self.primary = primary

    def _initdb(self) -> None:
        result = self._run("pg_basebackup", "-D", str(self.data_dir), "-R", "-X", "stream", "-c", "fast",
                           "-h", "127.0.0.1", "-p", str(self.primary.port), "-U", SUPERUSER, timeout=300)
        if result.returncode != 0:
            raise RuntimeError(f"pg_basebackup of {self.primary!r} failed: {result.stdout.strip()}")

    def promote(self) -> None:
        """The standby becomes a primary (``pg_ctl promote``, waiting until it is)."""
        result = self._run("pg_ctl", "promote", "-D", str(self.data_dir), "-w", "-t", "60", timeout=90)
        if result.returncode != 0:
            raise RuntimeError(f"pg_ctl promote failed: {result.stdout.strip()}")


def _has_server(bindir: Path) -> bool:
    return all(os.access(bindir / name, os.X_OK) for name in SERVER_BINARIES)


def _version_key(name: str) -> tuple[int, ...] | None:
    try:
        return tuple(int(part) for part in name.split("."))
    except ValueError:
        return None


def _server_account() -> pwd.struct_passwd | None:
    """The account to run initdb and the server as: None means this process's own."""
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam(SYSTEM_USER)
    except KeyError:
        raise RuntimeError(
            f"running as root, and PostgreSQL refuses to; there is no {SYSTEM_USER!r} "
            f"system user to run it as: {_INSTALL_HINT}"
        ) from None


def _server_env() -> dict[str, str]:
    # PGDATA, PGPORT, PGHOST and friends in our environment must not steer the tools.
    return {key: value for key, value in os.environ.items() if not key.startswith("PG")}


def _empty_dir(directory: Path) -> None:
    for child in directory.iterdir():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            child.unlink()


def _read_pid(pid_file: Path) -> int | None:
    try:
        return int(pid_file.read_text().split("\n", 1)[0])
    except (OSError, ValueError):
        return None


def _parent_of(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[1])


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    except OSError:
        return True
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"  # a zombie has exited


def _tail(text: str, lines: int = LOG_TAIL_LINES) -> str:
    return "\n".join(text.rstrip().splitlines()[-lines:]) or "(log is empty)"


def _parse_settings(pairs: list[str]) -> dict[str, str]:
    settings: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {pair!r}")
        settings[key.strip()] = value.strip()
    return settings


def main(argv: list[str] | None = None) -> int:
    """Start a cluster, print its DSN, and keep it up until SIGINT or SIGTERM."""
    parser = argparse.ArgumentParser(
        prog="python -m test_servers.postgres",
        description="Start a throwaway PostgreSQL cluster, print its DSN, "
        "and stop it on Ctrl-C or SIGTERM.",
    )
    parser.add_argument("--port", type=int, help="TCP port (default: a free one)")
    parser.add_argument("--base-dir", type=Path, help="keep the cluster here instead of a temp dir")
    parser.add_argument("--durable", action="store_true", help="keep fsync and friends on")
    parser.add_argument(
        "-c", dest="settings", action="append", default=[], metavar="KEY=VALUE",
        help="extra server setting (repeatable)",
    )  # fmt: skip
    args = parser.parse_args(argv)
    try:
        settings = _parse_settings(args.settings)
    except argparse.ArgumentTypeError as exc:
        parser.error(str(exc))

    stop_requested = threading.Event()

    def request_stop(signum: int, frame: FrameType | None) -> None:
        stop_requested.set()

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, request_stop)

    try:
        cluster = PostgresCluster(args.base_dir, args.port, durable=args.durable, settings=settings)
    except (RuntimeError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    try:
        cluster.start()
        print(cluster.dsn(), flush=True)
        print(
            f"data in {cluster.data_dir}, log in {cluster.log_path}; Ctrl-C or SIGTERM stops it",
            file=sys.stderr,
            flush=True,
        )
        while not stop_requested.wait(1.0):
            pass
    except RuntimeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    finally:
        cluster.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
