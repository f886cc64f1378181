"""Named SQL queries, kept as SQL in files per dialect.

A query file is a sequence of blocks, each starting with ``-- name: some_name``;
the text up to the next such line is the query. Comments are kept.

A role of the store keeps its queries in a dialect in ``store/<role>/<dialect>.sql``, or, for a role
with many, in one file per subject, ``store/<role>/<dialect>_<subject>.sql``: the loader reads a
role's files together (:func:`role_query_files`, :class:`Queries`), and a name defined in two of
them is an error.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
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


def load_query_files(paths: Sequence[Path]) -> dict[str, str]:
    """The named queries of several files read together, in the order given: a name defined in two
    of them is an error, as it is within one."""
    if not paths:
        raise ValueError("no query files")
    queries: dict[str, str] = {}
    defined_in: dict[str, Path] = {}
    for path in paths:
        for name, body in load_queries(path).items():
            if name in defined_in:
                raise ValueError(f"query {name!r} defined in both {defined_in[name]} and {path}")
            defined_in[name] = path
            queries[name] = body
    return queries


def role_query_files(folder: Path, dialect: str) -> list[Path]:
    """A role's query files in a dialect, in name order: ``<dialect>.sql`` and ``<dialect>_<subject>.sql``
    in the role's folder (``folder``). None is an error."""
    paths = sorted([*folder.glob(f"{dialect}.sql"), *folder.glob(f"{dialect}_*.sql")])
    if not paths:
        raise ValueError(f"{folder}: no {dialect}.sql nor {dialect}_<subject>.sql")
    return paths


class Queries:
    """Attribute access to a dialect's named queries: ``q.grab_ready_tasks``, from one file or from
    several read together (a role's files, :func:`role_query_files`)."""

    def __init__(self, *paths: Path):
        self._where = " + ".join(path.name for path in paths)
        self._queries = load_query_files(paths)

    def __getattr__(self, name: str) -> str:
        try:
            return self._queries[name]
        except KeyError:
            raise AttributeError(f"{self._where} has no query {name!r}") from None

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
