"""The README's Python example runs as written: its ```python block, saved as ``jobs.py`` in an
empty directory and run with this install's Python (``python jobs.py --once``), creates its two
schedules on the embedded default and runs the one due; started again without one of them, it
pauses that one and keeps its history."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"
PYTHON_BLOCK = re.compile(r"^```python\n(.*?)^```$", re.S | re.M)


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OSTINATO_")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


def _run(args: list[str], cwd: Path) -> str:
    result = subprocess.run(args, cwd=cwd, env=_env(), capture_output=True, text=True, timeout=120)
    output = result.stdout + result.stderr
    assert result.returncode == 0, f"{args} stopped ({result.returncode}):\n{output[-4000:]}"
    assert "Traceback" not in output, output[-4000:]
    return result.stdout


def _show(name: str, cwd: Path) -> dict:
    return json.loads(_run([sys.executable, "-m", "ostinato", "schedule", "show", name, "--json"], cwd))


def test_the_readme_has_one_python_example():
    assert len(PYTHON_BLOCK.findall(README.read_text(encoding="utf-8"))) == 1


def test_the_readmes_python_example_runs_as_written(tmp_path):
    source = PYTHON_BLOCK.search(README.read_text(encoding="utf-8")).group(1)
    (tmp_path / "jobs.py").write_text(source)
    assert "cleaning /tmp" in _run([sys.executable, "jobs.py", "--once"], tmp_path)
    cleanup, report = _show("cleanup", tmp_path), _show("nightly-report", tmp_path)
    assert cleanup["enabled"] and cleanup["last_good_end_at"] is not None
    assert report["enabled"] and report["catch_up"] == "all:3" and report["tz"] == "Europe/Paris"
    assert report["next_fire_time"] is not None and report["condition"] == "OK"

    start = source.index("@jobs.calendar")
    (tmp_path / "jobs.py").write_text(source[:start] + source[source.index('if __name__'):])
    _run([sys.executable, "jobs.py", "--once"], tmp_path)
    assert not _show("nightly-report", tmp_path)["enabled"]   # paused, not deleted
    assert _show("cleanup", tmp_path)["enabled"]
