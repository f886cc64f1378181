"""Opening the SQLite file: created only when asked, refused in one line when it is not a database.

A command that only reads opens the file with SQLite's ``mode=rw``, so that a mistyped path
fails instead of leaving an empty database (and its directories) behind.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import TypedDict
from urllib.request import pathname2url

from ...domain.errors import NoDatabase, StoreUnavailable

EXPECTED = "expected a SQLite database file (one `ostinato db init` creates)"


class _ConnectOptions(TypedDict):
    """What every connection is opened with (``sqlite3.connect``'s keywords)."""

    timeout: float
    isolation_level: None
    check_same_thread: bool


def open_sqlite_file(path: str, timeout: float, *, create: bool) -> sqlite3.Connection:
    """A connection to the database file at ``path`` (``:memory:``: a private in-memory one), in WAL mode.

    Without ``create`` a missing file is refused; with it the file and its directories are created.
    Any failure is a :class:`StoreUnavailable` naming the path and what was expected.
    """
    options: _ConnectOptions = {"timeout": timeout, "isolation_level": None, "check_same_thread": False}
    if path == ":memory:":
        return sqlite3.connect(path, **options)
    file = Path(path).expanduser().absolute()
    if file.is_dir():
        raise StoreUnavailable(f"database {file} is a directory: {EXPECTED}")
    if not file.exists():
        if not create:
            raise NoDatabase(f"no database at {file}: create one with `ostinato db init`, "
                                   "or name an existing one with --db (or OSTINATO_DB)")
        try:
            file.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreUnavailable(f"cannot create the database {file}: {exc.strerror or exc}") from None
    uri = f"file:{pathname2url(str(file))}?mode={'rwc' if create else 'rw'}"
    try:
        conn = sqlite3.connect(uri, uri=True, **options)
    except sqlite3.Error as exc:
        raise StoreUnavailable(f"cannot open the database {file}: {exc}") from None
    try:
        conn.execute("PRAGMA journal_mode=WAL")
    except sqlite3.Error as exc:
        conn.close()
        if isinstance(exc, sqlite3.DatabaseError) and "not a database" in str(exc):
            raise StoreUnavailable(f"{file} is not a SQLite database: {EXPECTED}") from None
        raise StoreUnavailable(f"cannot open the database {file}: {exc}") from None
    return conn
