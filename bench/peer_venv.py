"""The peer's separate virtual environment (swh-scheduler 3.6.0 and what runs beside it), shared
by the benchmarks against it (``bench/vs_swh.py``, ``bench/celery_dispatch.py``) and the
swh-compat harness (``bench/swh_compat.py``).

Made on first use with the interpreter running the caller; a ``.installed`` marker lists
the requirements installed, and a caller needing more installs only what is missing, so
the benchmark's and the harness's needs share one environment.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Callable, Sequence

REPO = Path(__file__).resolve().parent.parent
PEER_VERSION = "3.6.0"
PEER_VENV = REPO / ".bench-venvs" / f"swh-scheduler-{PEER_VERSION}"


def _run(command: list[str], say: Callable[[str], None]) -> None:
    say(f"  $ {' '.join(command)}")
    subprocess.run(command, check=True)


def ensure_peer_venv(venv: Path, requirements: Sequence[str], *, say: Callable[[str], None] = print) -> Path:
    """``venv`` with ``requirements`` installed (pip requirement strings); returns its python."""
    python = venv / "bin" / "python"
    marker = venv / ".installed"
    installed = set(marker.read_text().split()) if python.exists() and marker.exists() else set()
    wanted = set(" ".join(requirements).split())
    if wanted <= installed:
        say(f"peer environment: {venv} (reused)")
        return python
    say(f"peer environment: {'creating' if not python.exists() else 'completing'} {venv}")
    if not python.exists():
        venv.parent.mkdir(parents=True, exist_ok=True)
        _run([sys.executable, "-m", "venv", str(venv)], say)
        _run([str(python), "-m", "pip", "install", "--quiet", "--upgrade", "pip"], say)
    _run([str(python), "-m", "pip", "install", "--quiet", *sorted(wanted)], say)
    marker.write_text("\n".join(sorted(installed | wanted)) + "\n")
    return python
