"""A real change history from this machine: the dated entries of installed packages' Debian changelogs.

Every installed Debian package ships ``/usr/share/doc/<package>/changelog.Debian.gz``:
one entry per upload, newest first, each opened by a header line and closed by a
trailer line that dates the upload::

    bash (5.2.15-2) unstable; urgency=medium
      * Remove one more pdf file without source.
     -- Matthias Klose <doko@debian.org>  Mon, 02 Jan 2023 13:06:21 +0100

Each file gives one origin, ``deb://Debian/packages/<source>``, named by the
source package of its newest entry (binary packages of one source ship the same
changelog, and they are merged; so are doc directories that are links to
another), and one change per dated entry: visit type ``deb``. An entry without a
trailer, a trailer outside an entry, or a date that does not parse (RFC 2822:
``Day, DD Mon YYYY HH:MM:SS +ZZZZ``) is skipped and counted; so is a file that is
not gzip text. Nobody here wrote these histories: they are what Debian's
maintainers recorded, upload by upload.
"""

from __future__ import annotations

import gzip
import re
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC
from email.utils import parsedate_to_datetime
from pathlib import Path

from .trace import Change

VISIT_TYPE = "deb"
ORIGIN_PREFIX = "deb://Debian/packages/"
DEFAULT_DOC_DIR = Path("/usr/share/doc")
_HEADER = re.compile(r"^(?P<source>[a-z0-9][a-z0-9+.\-]*) \((?P<version>[^()\s]+)\)[^;]*;", re.IGNORECASE)
_TRAILER = re.compile(r"^ -- (?P<who>.*?)\s*<[^>]*>\s+(?P<date>\S.*?)\s*$")


@dataclass
class ChangelogCounts:
    """What reading the changelogs found."""

    files: int = 0
    unreadable_files: int = 0
    entries: int = 0
    dated: int = 0
    #: entries without a trailer, and trailers outside an entry
    undated: int = 0
    #: trailers whose date does not parse
    bad_dates: int = 0
    sources: set[str] = field(default_factory=set)

    def as_dict(self) -> dict:
        return {"files": self.files, "unreadable_files": self.unreadable_files, "entries": self.entries,
                "dated_entries": self.dated, "undated_entries": self.undated, "bad_dates": self.bad_dates,
                "origins": len(self.sources)}


def parse_date(text: str) -> float | None:
    """An RFC 2822 date as seconds since the epoch; None when it does not parse (no zone: UTC)."""
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when.tzinfo is None:  # "-0000": a time in UTC whose local zone is not known
        when = when.replace(tzinfo=UTC)
    try:
        return when.timestamp()
    except (OverflowError, ValueError, OSError):
        return None


def parse_changelog(text: str, counts: ChangelogCounts) -> tuple[str | None, list[float]]:
    """The source package named by the newest entry and the time of each dated entry (counted in ``counts``)."""
    source: str | None = None
    times: list[float] = []
    open_entry = False
    for line in text.splitlines():
        header = _HEADER.match(line)
        if header:
            counts.entries += 1
            if open_entry:
                counts.undated += 1
            open_entry = True
            source = source or header["source"].lower()
            continue
        trailer = _TRAILER.match(line)
        if not trailer:
            continue
        if not open_entry:
            counts.undated += 1
            continue
        open_entry = False
        when = parse_date(trailer["date"])
        if when is None:
            counts.bad_dates += 1
            continue
        counts.dated += 1
        times.append(when)
    if open_entry:
        counts.undated += 1
    return source, times


def changelog_files(doc_dir: Path) -> list[Path]:
    """``<doc_dir>/*/changelog.Debian.gz``, each real file once, in name order."""
    seen: set[Path] = set()
    found = []
    for path in sorted(doc_dir.glob("*/changelog.Debian.gz")):
        real = path.resolve()
        if real not in seen and real.is_file():
            seen.add(real)
            found.append(path)
    return found


def debian_changes(doc_dir: Path = DEFAULT_DOC_DIR) -> tuple[list[Change], ChangelogCounts]:
    """The changes of every changelog under ``doc_dir``, and what was read and skipped."""
    counts = ChangelogCounts()
    changes: list[Change] = []
    for path in changelog_files(doc_dir):
        counts.files += 1
        try:
            text = gzip.decompress(path.read_bytes()).decode("utf-8", errors="replace")
        except (OSError, EOFError, zlib.error):
            counts.unreadable_files += 1
            continue
        source, times = parse_changelog(text, counts)
        if source is None or not times:
            continue
        counts.sources.add(source)
        changes.extend(Change(ORIGIN_PREFIX + source, VISIT_TYPE, when) for when in times)
    return changes, counts


def distinct(changes: Iterable[Change]) -> list[Change]:
    """Each (origin, instant) once, by origin then time (a source's changelog shipped by several packages)."""
    return sorted(set(changes), key=lambda c: (c.origin, c.at))
