"""A dialect's schema files: its versioned migrations, one folder of numbered SQL files, and its
canonical schema, one file per subject beside that folder.

``NNNN_description.sql`` files are applied in order; the ``schema_version``
table records each. The ``schema_<subject>.sql`` files (:data:`SCHEMA_FILES`) are the canonical
schema a fresh database gets, applied in that order; a test checks they equal the result of every
migration.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

_FILE = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")


#: the canonical schema's files in ``store/<dialect>/``, in the order a fresh database gets them: tasks,
#: schedules, origins, and what the HTTP API, its console and the compatibility faces keep (a table
#: references only tables of its own file)
SCHEMA_FILES = ("schema_tasks.sql", "schema_schedules.sql", "schema_origins.sql", "schema_api.sql")


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


def load_schema(folder: Path) -> str:
    """The canonical schema of the dialect in ``folder``: its :data:`SCHEMA_FILES`, in order, as one
    script. Any other ``schema*.sql`` there is an error: no fresh database would get it."""
    found = sorted(path.name for path in folder.glob("schema*.sql"))
    if found != sorted(SCHEMA_FILES):
        raise RuntimeError(f"{folder}: the canonical schema is {', '.join(SCHEMA_FILES)}, found {', '.join(found) or 'none'}")
    return "\n".join((folder / name).read_text(encoding="utf-8") for name in SCHEMA_FILES)
