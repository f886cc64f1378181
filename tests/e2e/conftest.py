"""Fixtures of the end-to-end tests."""

from __future__ import annotations

import pytest


@pytest.fixture
def fresh_url(tmp_path, monkeypatch):
    """A SQLite URL in an empty folder, with no OSTINATO_* settings leaking in (and no ./ostinato.toml)."""
    monkeypatch.chdir(tmp_path)
    for name in ("OSTINATO_DB", "OSTINATO_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    return f"sqlite:///{tmp_path}/t.db"


@pytest.fixture(scope="module")
def chromium():
    """Debian's chromium, driven by Playwright (the dashboard's browser tests; see browser_helpers.py)."""
    import shutil

    from playwright.sync_api import sync_playwright

    executable = shutil.which("chromium")
    assert executable, "Debian's chromium is needed (apt-get install chromium; .ci/run installs it)"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=["--no-sandbox", "--disable-gpu"])
        yield browser
        browser.close()
