"""The chaos harness's processes and faults.

:class:`Supervisor` starts the real ``ostinato`` CLI as subprocesses (four
``ostinato scheduler`` with their own node names, one ``ostinato runner``, one
``ostinato orchestrator`` and, with a broker, two ``ostinato journal-client`` of one
group), restarts any that dies, and injects the faults:
SIGKILL of a random process (restarted at once, after it has been reaped),
SIGSTOP/SIGCONT of one process, and a PostgreSQL stop and start. Every fault
goes to :attr:`Supervisor.events` with its time, for the history checks.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench.chaos.chaos_journal import BROKERS_ENV, client_argv
from bench.common.processes import stop_processes
from test_servers.postgres import PostgresCluster
from test_servers.processes import die_with_parent

SCHEDULERS = 4
SCHEDULER_CAPACITY = 64
JOURNAL_CLIENTS = 2


@dataclass
class Event:
    at: float
    kind: str  # kill, exit, pause, resume, pg_stop, pg_start, start
    process: str = ""
    pid: int = 0
    detail: str = ""


@dataclass
class Service:
    name: str
    argv: list[str]
    env: dict[str, str]
    proc: subprocess.Popen | None = None
    paused: bool = False
    pids: list[int] = field(default_factory=list)


class Supervisor:
    def __init__(self, cluster: PostgresCluster, dsn: str, run_dir: Path, bench_dir: Path, settings: dict[str, str],
                 rng: random.Random, brokers: str | None = None):
        self.cluster = cluster
        self.run_dir = run_dir
        self.rng = rng
        self.events: list[Event] = []
        self.logs = run_dir / "logs"
        self.logs.mkdir(exist_ok=True)
        base = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(bench_dir), str(bench_dir.parents[1]), os.environ.get("PYTHONPATH")])),
                "OSTINATO_DB": dsn, **settings, **({BROKERS_ENV: brokers} if brokers else {})}
        python = [sys.executable, "-m", "ostinato"]
        self.services: dict[str, Service] = {}
        for i in range(1, SCHEDULERS + 1):
            node = f"chaos-n{i}"
            self.services[node] = Service(node, [*python, "scheduler", "--node", node, "--capacity",
                                                 str(SCHEDULER_CAPACITY)], {**base, "OSTINATO_NODE": node})
        self.services["runner"] = Service("runner", [*python, "runner", "--with-priority", "--workers", "8"],
                                          {**base, "OSTINATO_NODE": "chaos-runner"})
        self.services["orchestrator"] = Service("orchestrator", [*python, "orchestrator", "--workers", "8"],
                                                {**base, "OSTINATO_NODE": "chaos-orchestrator",
                                                 "OSTINATO_VISIT_TYPES": "git"})
        for i in range(1, JOURNAL_CLIENTS + 1 if brokers else 1):
            name = f"journal-{i}"
            self.services[name] = Service(name, client_argv(python, brokers or ""), {**base, "OSTINATO_NODE": name})

    # -- processes ---------------------------------------------------------------------
    def start(self, service: Service) -> None:
        out = open(self.logs / f"{service.name}.log", "ab")
        # killed with the harness if it dies without stopping them (its parent killed, its output closed)
        service.proc = subprocess.Popen(service.argv, env=service.env, stdout=out, stderr=subprocess.STDOUT,
                                        stdin=subprocess.DEVNULL, preexec_fn=die_with_parent())
        out.close()
        service.pids.append(service.proc.pid)
        self.events.append(Event(time.time(), "start", service.name, service.proc.pid))

    def start_all(self) -> None:
        for service in self.services.values():
            self.start(service)

    def restart_dead(self) -> list[str]:
        """Start again any process that exited on its own (it should not); returns their names."""
        restarted = []
        for service in self.services.values():
            if service.proc is not None and service.proc.poll() is not None and not service.paused:
                self.events.append(Event(time.time(), "exit", service.name, service.proc.pid,
                                         f"exit code {service.proc.returncode}"))
                self.start(service)
                restarted.append(service.name)
        return restarted

    def kill_random(self) -> Service:
        """SIGKILL a random running process (never the paused one), reap it, and start it again."""
        service = self.rng.choice([s for s in self.services.values() if not s.paused])
        assert service.proc is not None
        pid = service.proc.pid
        service.proc.send_signal(signal.SIGKILL)
        service.proc.wait()
        self.events.append(Event(time.time(), "kill", service.name, pid))
        self.start(service)
        return service

    def pause(self, name: str) -> Service:
        service = self.services[name]
        assert service.proc is not None
        service.proc.send_signal(signal.SIGSTOP)
        service.paused = True
        self.events.append(Event(time.time(), "pause", name, service.proc.pid))
        return service

    def resume(self, service: Service) -> None:
        assert service.proc is not None
        service.proc.send_signal(signal.SIGCONT)
        service.paused = False
        self.events.append(Event(time.time(), "resume", service.name, service.proc.pid))

    def stop_all(self, grace: float = 40.0, only: list[str] | None = None) -> dict[str, int | None]:
        """SIGTERM every process, or those named (a graceful stop), and wait; returns their exit codes (a process
        stopped before keeps its code)."""
        chosen = {name: s for name, s in self.services.items() if only is None or name in only}
        for service in chosen.values():  # a paused process cannot act on SIGTERM
            if service.paused and service.proc is not None and service.proc.poll() is None:
                self.resume(service)
        codes, killed = stop_processes({name: s.proc for name, s in chosen.items()}, grace)
        for name in killed:
            self.events.append(Event(time.time(), "kill", name, self.services[name].proc.pid, "did not stop in time"))
        return codes

    # -- the database ---------------------------------------------------------------------
    def stop_postgres(self) -> None:
        self.events.append(Event(time.time(), "pg_stop"))
        self.cluster.stop()

    def start_postgres(self) -> None:
        self.cluster.start()
        self.events.append(Event(time.time(), "pg_start"))

    # -- what happened to whom ------------------------------------------------------------
    def kill_times(self) -> dict[int, float]:
        """pid -> when it was killed (or exited): its jobs did no work after that."""
        return {e.pid: e.at for e in self.events if e.kind in ("kill", "exit")}

    def count(self, kind: str) -> int:
        return sum(1 for e in self.events if e.kind == kind)
