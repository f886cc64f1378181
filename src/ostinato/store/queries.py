"""Named SQL queries, kept as SQL in one file per dialect.

A query file is a sequence of blocks, each starting with ``-- name: some_name``;
the text up to the next such line is the query. Comments are kept.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

_NAME = re.compile(r"^--\s*name:\s*([a-z_][a-z0-9_]*)\s*$", re.MULTILINE)


def load_queries(path: Path) -> dict[str, str]:
    text = path.read_text(encoding="utf-8")
    names = list(_NAME.finditer(text))
    if not names:
        raise ValueError(f"{path}: no '-- name:' blocks")
    queries: dict[str, str] = {}
    for index, match in enumerate(names):
        end = names[index + 1].start() if index + 1 < len(names) else len(text)
        body = text[match.end():end].strip()
        name = match.group(1)
        if name in queries:
            raise ValueError(f"{path}: query {name!r} defined twice")
        if not body:
            raise ValueError(f"{path}: query {name!r} is empty")
        queries[name] = body
    return queries


class Queries:
    """Attribute access to a dialect's named queries: ``q.grab_ready_tasks``."""

    def __init__(self, path: Path):
        self._path = path
        self._queries = load_queries(path)

    def __getattr__(self, name: str) -> str:
        try:
            return self._queries[name]
        except KeyError:
            raise AttributeError(f"{self._path.name} has no query {name!r}") from None

    def names(self) -> list[str]:
        return sorted(self._queries)


@lru_cache(maxsize=256)
def statements(sql: str) -> tuple[str, ...]:
    """The statements of a named query that holds several, in order: each ends with a semicolon at
    the end of a line outside comments. A driver runs one statement with parameters at a time, so a
    flow runs each (a dialect may need two statements where another does the work in one)."""
    found: list[str] = []
    lines: list[str] = []
    for line in sql.splitlines():
        lines.append(line)
        if not line.lstrip().startswith("--") and line.rstrip().endswith(";"):
            found.append("\n".join(lines).strip())
            lines = []
    if any(line.strip() and not line.lstrip().startswith("--") for line in lines):
        found.append("\n".join(lines).strip())
    return tuple(found)
