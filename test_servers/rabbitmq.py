"""A real, throwaway RabbitMQ node on this machine, for the tests of the Celery path over AMQP.

``RabbitMQServer`` starts Debian's ``rabbitmq-server`` (its script
``/usr/lib/rabbitmq/bin/rabbitmq-server``, not the systemd service and not the
``/usr/sbin`` wrapper that switches to the ``rabbitmq`` user and logs to
``/var/log``) as the current user, with everything private:

- AMQP on 127.0.0.1 at a free port, user ``guest``/``guest`` (allowed from
  loopback only, RabbitMQ's default), no plugins;
- its own ``epmd`` (Erlang's port mapper) on a free loopback port, started
  and stopped with the node (``ERL_EPMD_PORT``), so that neither a system
  ``epmd`` nor a system RabbitMQ on 4369/5672/25672 matters, and no ``epmd
  -daemon`` is left behind; Erlang distribution on a free port, loopback only;
- node name ``ostinato-<port>@localhost``, data (mnesia), logs, config,
  enabled-plugins file, Erlang cookie (``HOME``) and PID file in a private
  temporary directory; ``/etc/rabbitmq/rabbitmq-env.conf`` is not read.

:meth:`RabbitMQServer.kill` stops the node at once (SIGKILL) and
:meth:`RabbitMQServer.restart` starts it again on the same port, node name and
data: durable queues survive, and so do persistent messages that reached the
disk, which RabbitMQ guarantees only for messages it confirmed (publisher
confirms); others it writes within about a second, and a kill before that
loses them. ``stop()`` shuts the node down gracefully (SIGKILL after 30 s),
kills anything left in its process group, stops its ``epmd`` and deletes the
directory. A start takes 4-8 s here (Erlang boot), a graceful stop about 1 s.

``OSTINATO_RABBITMQ_SERVER`` names another server script than Debian's.

Run ``python -m test_servers.rabbitmq`` to start one by hand: it prints the
URL and keeps the node up until SIGINT or SIGTERM.
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

__all__ = ["RabbitMQServer"]

START_TIMEOUT_S: Final = 90
STOP_TIMEOUT_S: Final = 30
_SCRIPT: Final = "/usr/lib/rabbitmq/bin/rabbitmq-server"
_INSTALL_HINT: Final = ("install Debian's rabbitmq-server package (apt-get install -y --no-install-recommends "
                        "rabbitmq-server; scripts/install-system-deps does it)")
_AMQP_HEADER: Final = b"AMQP\x00\x00\x09\x01"


def _find_epmd() -> str | None:
    found = shutil.which("epmd")
    if found:
        return found
    for candidate in sorted(Path("/usr/lib/erlang").glob("erts-*/bin/epmd"), reverse=True):
        if os.access(candidate, os.X_OK):
            return str(candidate)
    return None


class RabbitMQServer:
    def __init__(self) -> None:
        script = os.environ.get("OSTINATO_RABBITMQ_SERVER") or _SCRIPT
        if not os.access(script, os.X_OK):
            raise RuntimeError(f"RabbitMQ's server script {script} not found: {_INSTALL_HINT}")
        epmd = _find_epmd()
        if epmd is None:
            raise RuntimeError(f"Erlang's epmd not found: {_INSTALL_HINT}")
        self.script = script
        self.epmd_binary = epmd
        self.port = free_port()
        self.dist_port = free_port()
        self.epmd_port = free_port()
        self.node = f"ostinato-{self.port}@localhost"
        self.directory = Path(tempfile.mkdtemp(prefix="ostinato-rabbitmq-"))
        self.process: subprocess.Popen | None = None
        self.epmd: subprocess.Popen | None = None
        #: how long each start took until AMQP answered, in seconds
        self.start_times: list[float] = []
        d = self.directory
        (d / "rabbitmq.conf").write_text(
            f"listeners.tcp.1 = 127.0.0.1:{self.port}\n"
            "loopback_users.guest = true\n"
            "log.console = false\n"
            "log.file.level = info\n")
        (d / "enabled_plugins").write_text("[].\n")
        (d / "rabbitmq-env.conf").write_text("")  # instead of /etc/rabbitmq/rabbitmq-env.conf
        (d / "home").mkdir()

    @property
    def url(self) -> str:
        return f"amqp://guest:guest@127.0.0.1:{self.port}//"

    def _env(self) -> dict[str, str]:
        d = self.directory
        env = {k: v for k, v in os.environ.items() if not k.startswith(("RABBITMQ_", "ERL_"))}
        env.update({
            "HOME": str(d / "home"),  # the Erlang cookie
            "RABBITMQ_NODENAME": self.node,
            "RABBITMQ_USE_LONGNAME": "false",
            "RABBITMQ_NODE_IP_ADDRESS": "127.0.0.1",
            "RABBITMQ_NODE_PORT": str(self.port),
            "RABBITMQ_DIST_PORT": str(self.dist_port),
            "RABBITMQ_MNESIA_BASE": str(d / "mnesia"),
            "RABBITMQ_LOG_BASE": str(d / "log"),
            "RABBITMQ_CONFIG_FILE": str(d / "rabbitmq.conf"),
            "RABBITMQ_ADVANCED_CONFIG_FILE": str(d / "advanced.config"),
            "RABBITMQ_ENABLED_PLUGINS_FILE": str(d / "enabled_plugins"),
            "RABBITMQ_CONF_ENV_FILE": str(d / "rabbitmq-env.conf"),
            "RABBITMQ_PID_FILE": str(d / "rabbitmq.pid"),
            # never start a daemonised epmd (ours runs), distribution on loopback only
            "RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS": "-start_epmd false -kernel inet_dist_use_interface {127,0,0,1}",
            "ERL_EPMD_PORT": str(self.epmd_port),
            "ERL_EPMD_ADDRESS": "127.0.0.1",
        })
        return env

    def start(self) -> Self:
        began = time.monotonic()
        if self.epmd is None or self.epmd.poll() is not None:
            self._start_epmd()
        log = open(self.directory / "server.log", "ab")
        try:
            self.process = subprocess.Popen([self.script], env=self._env(), cwd=self.directory,
                                            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                            start_new_session=True)
        finally:
            log.close()
        deadline = began + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                tail = self._log_tail()
                self._kill_group()
                self.process = None
                raise RuntimeError(f"rabbitmq-server exited at start: {tail}")
            if self.ping():
                self.start_times.append(time.monotonic() - began)
                return self
            time.sleep(0.1)
        tail = self._log_tail()
        self.stop()
        raise RuntimeError(f"rabbitmq-server did not accept AMQP connections within {START_TIMEOUT_S}s: {tail}")

    def _start_epmd(self) -> None:
        log = open(self.directory / "epmd.log", "ab")
        try:
            self.epmd = subprocess.Popen([self.epmd_binary, "-port", str(self.epmd_port), "-address", "127.0.0.1"],
                                         env=self._env(), stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                         start_new_session=True)
        finally:
            log.close()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.epmd.poll() is not None:
                raise RuntimeError(f"epmd exited at start: {self._log_tail('epmd.log')}")
            try:
                with socket.create_connection(("127.0.0.1", self.epmd_port), timeout=1):
                    return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"epmd did not listen on 127.0.0.1:{self.epmd_port} within 10s")

    def ping(self) -> bool:
        """Whether the node answers an AMQP 0-9-1 handshake (Connection.Start) on its port."""
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as conn:
                conn.settimeout(2)
                conn.sendall(_AMQP_HEADER)
                frame = conn.recv(7)
                # a method frame (type 1) on channel 0: Connection.Start
                return len(frame) == 7 and frame[0] == 1 and frame[1:3] == b"\x00\x00"
        except OSError:
            return False

    def kill(self) -> None:
        """Stop the node at once (SIGKILL): durable queues and persistent messages survive."""
        if self.process is not None:
            self._kill_group()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                pass
        self.process = None

    def restart(self, pause: float = 0.0) -> None:
        """Kill the node, wait ``pause`` seconds, and start it again on the same port and data."""
        self.kill()
        time.sleep(pause)
        self.start()

    def stop(self) -> None:
        """Shut the node down (SIGTERM, SIGKILL after 30 s), stop its epmd, delete its directory."""
        if self.process is not None:
            if self.process.poll() is None:
                # the script traps SIGTERM and stops the node gracefully
                self.process.terminate()
                try:
                    self.process.wait(STOP_TIMEOUT_S)
                except subprocess.TimeoutExpired:
                    pass
            self._kill_group()  # whatever the node left behind (erl_child_setup, inet_gethost...)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                pass
            self.process = None
        if self.epmd is not None:
            if self.epmd.poll() is None:
                self.epmd.kill()
            self.epmd.wait(10)
            self.epmd = None
        shutil.rmtree(self.directory, ignore_errors=True)

    def _kill_group(self) -> None:
        if self.process is None:
            return
        try:
            os.killpg(self.process.pid, signal.SIGKILL)  # start_new_session: the group is the script's pid
        except (ProcessLookupError, PermissionError):
            pass
        # wait until every process of the group is gone, so that a restart finds the ports free
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            self.process.poll()
            try:
                os.killpg(self.process.pid, 0)
            except (ProcessLookupError, PermissionError):
                return
            time.sleep(0.05)

    def _log_tail(self, name: str = "server.log") -> str:
        parts = []
        for path in [self.directory / name, *sorted((self.directory / "log").glob(f"{self.node}.log"))]:
            try:
                parts.append(f"[{path.name}] " + path.read_text(errors="replace")[-2000:])
            except OSError:
                pass
        return "\n".join(parts) or "(no log)"

    def __enter__(self) -> Self:
        try:
            return self.start()
        except BaseException:
            self.stop()  # no epmd nor directory left behind
            raise

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()


if __name__ == "__main__":  # pragma: no cover - a manual helper
    with RabbitMQServer() as server:
        print(server.url, flush=True)
        try:
            signal.sigwait({signal.SIGINT, signal.SIGTERM})
        finally:
            os.write(1, b"stopping\n")
