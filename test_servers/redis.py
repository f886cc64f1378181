"""A real, throwaway Redis server on this machine, for the tests and benchmarks of the Celery path.

``RedisServer`` starts Debian's ``redis-server`` on 127.0.0.1 at a free port,
with its data in a private temporary directory and the append-only file on
(``appendfsync always``), so that :meth:`RedisServer.restart` shows what a
broker restart keeps. ``stop()`` shuts it down and deletes the directory.

Run ``python -m test_servers.redis`` to start one by hand: it prints the
URL and keeps the server up until SIGINT or SIGTERM.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType
from typing import Final, Self

from .postgres import free_port

__all__ = ["RedisServer"]

START_TIMEOUT_S: Final = 30
_INSTALL_HINT: Final = "install Debian's redis-server package (apt-get install -y redis-server)"


class RedisServer:
    def __init__(self, *, persistent: bool = True):
        binary = shutil.which("redis-server") or ("/usr/bin/redis-server" if Path("/usr/bin/redis-server").exists() else None)
        if binary is None:
            raise RuntimeError(f"redis-server not found: {_INSTALL_HINT}")
        self.binary = binary
        self.persistent = persistent
        self.port = free_port()
        self.directory = Path(tempfile.mkdtemp(prefix="ostinato-redis-"))
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> Self:
        persistence = ["--appendonly", "yes", "--appendfsync", "always"] if self.persistent else ["--appendonly", "no"]
        log = open(self.directory / "redis.log", "ab")
        self.process = subprocess.Popen(
            [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.directory), "--save", "",
             "--daemonize", "no", "--protected-mode", "yes", *persistence],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"redis-server exited at start: {self._log_tail()}")
            if self.ping():
                return self
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"redis-server did not answer within {START_TIMEOUT_S}s: {self._log_tail()}")

    def ping(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as conn:
                conn.sendall(b"PING\r\n")
                return conn.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def kill(self) -> None:
        """Stop the server at once (SIGKILL): what the append-only file holds survives."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(30)
        self.process = None

    def restart(self, pause: float = 0.0) -> None:
        """Kill the server, wait ``pause`` seconds, and start it again on the same port and data."""
        self.kill()
        time.sleep(pause)
        self.start()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        self.process = None
        shutil.rmtree(self.directory, ignore_errors=True)

    def _log_tail(self) -> str:
        try:
            return (self.directory / "redis.log").read_text(errors="replace")[-2000:]
        except OSError:
            return "(no log)"

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()


if __name__ == "__main__":  # pragma: no cover - a manual helper
    with RedisServer() as server:
        print(server.url, flush=True)
        try:
            signal.sigwait({signal.SIGINT, signal.SIGTERM})
        finally:
            os.write(1, b"stopping\n")
