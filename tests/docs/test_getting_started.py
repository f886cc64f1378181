"""The getting-started pages run as written: every ```sh block of a page, in order, in one shell in
an empty directory, with this install's ``ostinato`` on the PATH, exits 0 and prints no traceback.

A block that needs a service the page cannot start for the reader (a broker) is written as
```text instead, and is not run here.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"
PAGES = sorted((DOCS / "getting-started").glob("*.md"))
SH_BLOCK = re.compile(r"^```sh\n(.*?)^```$", re.S | re.M)


def test_there_are_pages_with_commands():
    assert {p.name for p in PAGES} >= {"archive-operator.md", "periodic-jobs.md", "writing-tasks.md"}
    assert all(SH_BLOCK.search(p.read_text()) for p in PAGES)


@pytest.mark.long
@pytest.mark.parametrize("page", PAGES, ids=[p.stem for p in PAGES])
def test_a_getting_started_page_runs_as_written(page, tmp_path):
    script = "\n".join(SH_BLOCK.findall(page.read_text(encoding="utf-8")))
    env = {k: v for k, v in os.environ.items() if not k.startswith("OSTINATO_")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    result = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", script], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=600)
    output = result.stdout + result.stderr
    assert result.returncode == 0, f"{page.name} stopped ({result.returncode}):\n{output[-4000:]}"
    assert "Traceback" not in output, output[-4000:]
