"""Stopping a benchmark's service processes: SIGTERM to all (a graceful stop), then one shared
deadline to exit, and SIGKILL for those that miss it. Used by the chaos harness and the load
benchmark."""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Mapping


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
