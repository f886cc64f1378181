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
