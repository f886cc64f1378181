"""Versioned migrations, one folder of numbered SQL files per dialect.

``NNNN_description.sql`` files are applied in order; the ``schema_version``
table records each. ``schema.sql`` beside them is the canonical schema a fresh
database gets; a test checks it equals the result of every migration.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

_FILE = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    description: str
    sql: str


def load_migrations(folder: Path) -> list[Migration]:
    migrations = []
    for path in sorted(folder.iterdir()):
        match = _FILE.match(path.name)
        if match:
            migrations.append(Migration(int(match.group(1)), match.group(2).replace("_", " "), path.read_text(encoding="utf-8")))
    versions = [m.version for m in migrations]
    if versions != list(range(1, len(versions) + 1)):
        raise RuntimeError(f"{folder}: migrations must be numbered 0001, 0002, … without gaps, found {versions}")
    return migrations


def latest_version(migrations: list[Migration]) -> int:
    return migrations[-1].version if migrations else 0
