"""The ```console examples of the documentation print what they show: each ``$ ostinato …`` line
is run (in an empty directory, with this install's ``ostinato``) and its output must be the lines
that follow it, exactly."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"
CONSOLE_BLOCK = re.compile(r"^```console\n(.*?)^```$", re.S | re.M)


def examples() -> list[tuple[str, str, str]]:
    """(page, command, expected output) for every ``$`` line of every console block."""
    found = []
    for page in sorted(DOCS.rglob("*.md")):
        for block in CONSOLE_BLOCK.findall(page.read_text(encoding="utf-8")):
            for chunk in re.split(r"^\$ ", block, flags=re.M)[1:]:
                command, _, output = chunk.partition("\n")
                found.append((str(page.relative_to(DOCS)), command, output))
    return found


def test_the_reference_has_console_examples():
    assert any(page == "reference/schedules.md" for page, _, _ in examples())


@pytest.mark.parametrize("page, command, expected", examples(), ids=lambda value: str(value)[:60])
def test_a_console_example_prints_what_it_shows(page, command, expected, tmp_path):
    words = shlex.split(command)
    assert words[0] == "ostinato", f"{page}: console examples run ostinato only"
    env = {k: v for k, v in os.environ.items() if not k.startswith("OSTINATO_")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["COLUMNS"] = "200"
    result = subprocess.run(words, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout == expected, f"{page}: {command}"
