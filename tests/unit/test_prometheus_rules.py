"""The Prometheus rules shipped in deploy/prometheus: `promtool check rules` accepts them, `promtool
test rules` runs their unit tests (each alert fires on the series that should raise it, and only
there), and every metric they read is one Ostinato exports. promtool is Debian's (`prometheus`,
installed by scripts/install-system-deps); the test fails, not skips, without it."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "deploy" / "prometheus"


def promtool(*args: str) -> subprocess.CompletedProcess:
    tool = shutil.which("promtool")
    assert tool, "promtool is missing: run scripts/install-system-deps (Debian's prometheus package)"
    return subprocess.run([tool, *args], cwd=RULES, capture_output=True, text=True, timeout=120)


def test_the_rules_are_valid():
    checked = promtool("check", "rules", "ostinato-rules.yml")
    assert checked.returncode == 0 and "SUCCESS: 5 rules found" in checked.stdout, checked.stdout + checked.stderr


def test_the_rules_unit_tests_pass():
    tested = promtool("test", "rules", "ostinato-rules.test.yml")
    assert tested.returncode == 0 and "SUCCESS" in tested.stdout, tested.stdout + tested.stderr


def test_every_metric_the_rules_read_is_exported():
    rules = (RULES / "ostinato-rules.yml").read_text()
    read = set(re.findall(r"\b(ostinato_[a-z_]+)\b", rules))
    assert {"ostinato_schedules", "ostinato_queue_depth", "ostinato_journal_lag_messages"} <= read
    source = "\n".join(p.read_text() for p in (ROOT / "src" / "ostinato").rglob("*.py"))
    exported = set(re.findall(r'"(ostinato_[a-z_]+)"', source))
    assert read <= exported, sorted(read - exported)
