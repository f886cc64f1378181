"""A service a harness starts (``test_servers.processes.die_with_parent``) is killed by the kernel when
the harness dies without stopping it, so no benchmark runs beside a killed run's leftovers."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]
HARNESS = """
import subprocess, sys, time
sys.path.insert(0, sys.argv[1])
from test_servers.processes import die_with_parent
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], preexec_fn=die_with_parent())  # a service, until killed
print(child.pid, flush=True)
time.sleep(120)  # a harness that lives until the test kills it
"""


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie (exited, not yet reaped by init) counts as gone
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().split(") ", 1)[1][0] != "Z"


def test_a_service_dies_with_its_harness_killed():
    harness = subprocess.Popen([sys.executable, "-c", HARNESS, str(ROOT)], stdout=subprocess.PIPE, text=True)
    child = int(harness.stdout.readline())
    assert alive(child)
    harness.send_signal(signal.SIGKILL)  # no cleanup of its own
    harness.wait()
    wait_until(lambda: not alive(child), timeout=10, what="the child to die with its harness")
