"""The processes of a benchmark: a free port, the ``ostinato`` command, a folder to run in, and stopping
the services at the end."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

#: the ``ostinato`` command of the running interpreter's environment
OSTINATO = Path(sys.executable).parent / "ostinato"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def ostinato(db: str, *args: str) -> str:
    done = subprocess.run([str(OSTINATO), "--db", db, *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"ostinato {' '.join(args)} failed: {done.stderr.strip()}")
    return done.stdout


def stop_processes(processes: Mapping[str, subprocess.Popen | None], grace: float) -> tuple[dict[str, int | None], list[str]]:
    """SIGTERM every running process and wait up to ``grace`` seconds in all; returns each one's exit
    code (None: killed) and the names of those killed for not stopping in time."""
    for proc in processes.values():
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
    codes: dict[str, int | None] = {}
    killed: list[str] = []
    deadline = time.monotonic() + grace
    for name, proc in processes.items():
        if proc is None:
            continue
        try:
            codes[name] = proc.wait(max(deadline - time.monotonic(), 0.1))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            codes[name] = None
            killed.append(name)
    return codes, killed


@contextlib.contextmanager
def work_folder(keep: Path | None, prefix: str) -> Iterator[Path]:
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
        os.chmod(keep, 0o755)
        yield keep
        return
    with tempfile.TemporaryDirectory(prefix=prefix, dir="/tmp") as work:
        os.chmod(work, 0o755)
        yield Path(work)
