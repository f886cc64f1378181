"""A trace built from Debian changelogs the test writes itself: each dated entry a change at its
trailer's time, one origin per source package, undated and malformed entries skipped and counted."""

from __future__ import annotations

import gzip
from datetime import UTC, datetime, timedelta, timezone

from ostinato.sim.debian import ORIGIN_PREFIX, debian_changes, distinct, parse_date

HELLO = """\
hello (2.10-3) unstable; urgency=medium

  * Fix the build with a newer compiler.

 -- Santiago Vila <sanvila@debian.org>  Sun, 20 Nov 2022 18:06:06 +0100

hello (2.10-2) unstable; urgency=low

  * An entry whose trailer is missing.

hello (2.10-1) unstable; urgency=low

  * New upstream release.

 -- Santiago Vila <sanvila@debian.org>  Wed, 30 Dec 2015 09:00:00 -0500

hello (2.9-2) unstable; urgency=low

  * A trailer whose date does not parse.

 -- Santiago Vila <sanvila@debian.org>  sometime in 2014
"""

TINY = """\
tiny (1.0-1) unstable; urgency=low

  * Initial release.

 -- Jane Doe <jane@example.org>  Mon, 01 Jan 2024 00:00:00 +0000
 -- A trailer outside any entry <x@example.org>  Mon, 01 Jan 2024 00:00:00 +0000
"""


def write(doc, package, text):
    (doc / package).mkdir(parents=True)
    (doc / package / "changelog.Debian.gz").write_bytes(gzip.compress(text.encode()))


def test_changelogs_become_a_trace(tmp_path):
    doc = tmp_path / "doc"
    write(doc, "hello", HELLO)
    write(doc, "hello-dbg", HELLO)  # a binary package of the same source: the same history
    write(doc, "tiny", TINY)
    (doc / "tiny-doc").symlink_to(doc / "tiny")  # a doc directory that is a link to another
    (doc / "broken").mkdir()
    (doc / "broken" / "changelog.Debian.gz").write_bytes(b"not gzip at all")
    (doc / "readme-only").mkdir()
    (doc / "readme-only" / "README").write_text("no changelog here")

    changes, counts = debian_changes(doc)
    assert counts.files == 4 and counts.unreadable_files == 1
    assert counts.entries == 2 * 4 + 1 and counts.dated == 2 * 2 + 1
    assert counts.undated == 2 * 1 + 1 and counts.bad_dates == 2 * 1
    assert counts.as_dict()["origins"] == 2
    trace = distinct(changes)
    assert [(c.origin, c.visit_type) for c in trace] == [(ORIGIN_PREFIX + "hello", "deb")] * 2 + [
        (ORIGIN_PREFIX + "tiny", "deb")]
    when = [datetime.fromtimestamp(c.at, UTC) for c in trace]
    assert when == [datetime(2015, 12, 30, 14, 0, tzinfo=UTC),
                    datetime(2022, 11, 20, 17, 6, 6, tzinfo=UTC),
                    datetime(2024, 1, 1, tzinfo=UTC)]


def test_dates_with_their_zone_or_none():
    assert parse_date("Sun, 20 Nov 2022 18:06:06 +0100") == datetime(2022, 11, 20, 17, 6, 6, tzinfo=UTC).timestamp()
    assert parse_date("Sun, 20 Nov 2022 18:06:06 -0000") == datetime(2022, 11, 20, 18, 6, 6, tzinfo=UTC).timestamp()
    when = datetime(2022, 11, 20, 18, 6, 6, tzinfo=timezone(timedelta(hours=-7)))
    assert parse_date("Sun, 20 Nov 2022 18:06:06 -0700") == when.timestamp()
    for bad in ("", "yesterday", "Sun, 99 Nov 2022 18:06:06 +0100", "Sun, 20 Nov 2022 25:06:06 +0100"):
        assert parse_date(bad) is None
