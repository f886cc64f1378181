"""What every benchmark reports with: its console, its progress, the code it measured and the head of
its JSON result, and where results go (``bench/results/``)."""

from __future__ import annotations

import contextlib
import hashlib
import os
import platform
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

import ostinato

#: the repository's root, and the folder every benchmark writes its JSON results to by default
ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "bench" / "results"
console = Console(stderr=True)


def code_version() -> dict[str, Any]:
    """Which Ostinato is measured: its path, git commit and local store changes, a digest of the store sources."""
    package = Path(ostinato.__file__).parent
    digest = hashlib.sha256()
    for path in sorted(package.joinpath("store").rglob("*")):
        if path.suffix in (".py", ".sql"):
            digest.update(path.relative_to(package).as_posix().encode() + b"\0" + path.read_bytes())

    def git(*command: str) -> str | None:
        done = subprocess.run(["git", "-C", str(package), *command], capture_output=True, text=True, check=False)
        return done.stdout.rstrip() if done.returncode == 0 else None

    changes = git("status", "--porcelain", "--", "store")
    return {
        "package": str(package),
        "git_commit": git("rev-parse", "HEAD"),
        "store_changes": changes.splitlines() if changes else [],
        "store_sha256": digest.hexdigest(),
    }


@contextlib.contextmanager
def progress(label: str, total: int) -> Iterator[Callable[[int], None]]:
    """Yield ``advance(n)``: a rich progress bar on a terminal, a line per 10 % otherwise (a log file)."""
    if console.is_terminal:
        columns = (TextColumn("  {task.description:<18}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), TimeRemainingColumn())
        with Progress(*columns, console=console, transient=True) as bar:
            step = bar.add_task(label, total=total)
            yield lambda n: bar.advance(step, n)
        return
    done, tenth, start = 0, 1, time.monotonic()

    def advance(n: int) -> None:
        nonlocal done, tenth
        done += n
        if done * 10 >= tenth * total:
            console.print(f"  {label}: {done:,}/{total:,} after {time.monotonic() - start:.0f} s")
            tenth = done * 10 // total + 1

    yield advance


def result_header(benchmark: str, results: dict[str, Any]) -> dict[str, Any]:
    """The head of a benchmark's JSON result: which benchmark, when, the exact command, the machine."""
    pythonpath = os.environ.get("PYTHONPATH")  # set when measuring another checkout (see bench/limits/tasks.md)
    command = ([f"PYTHONPATH={pythonpath}"] if pythonpath else []) + [Path(sys.executable).name, *sys.argv]
    return {
        "benchmark": benchmark,
        "timestamp": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": " ".join(command),
        "machine": {
            "platform": platform.platform(),
            "cpu_count": os.cpu_count(),
            "python": platform.python_version(),
            "psycopg": psycopg.__version__,
            "sqlite": sqlite3.sqlite_version,
            "postgresql": results.get("postgresql", {}).get("version"),
        },
    }
