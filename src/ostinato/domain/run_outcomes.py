"""A run's outcome as people read it, from the metadata a task run or the detail a schedule run
keeps: its ``error`` (one line, ``Type: message``), its ``traceback`` as lines of text, and what
the job returned (the other keys). The console's pages and the CLI read it from here.

A traceback is kept in more than one shape: the frames an embedded worker keeps (a list of
``file:line in function: code``, innermost last; each reads ``at …``), a list of the lines
Python prints (``Traceback (most recent call last):``, ``  File …``) or one text of them.
:func:`traceback_lines` makes lines of any of them, never the list's ``repr``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

#: the keys of a run's metadata that say why it failed (the rest is what the job returned)
FAILURE_KEYS = ("error", "traceback")
#: a frame as an embedded worker keeps it (``loader.py:41 in fetch: …``)
_FRAME = re.compile(r"[^\s:]+:\d+ in \S")


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a run's metadata says: its error, its traceback's lines (innermost last) and its result."""

    error: str | None = None
    traceback: list[str] = field(default_factory=list)
    result: dict[str, Any] = field(default_factory=dict)


def traceback_lines(value: Any) -> list[str]:
    """The lines of a kept traceback: each frame as ``at file:line in function: code``, the lines of a
    printed traceback as they were (trailing blanks dropped); nothing for None or an empty one."""
    if value is None or value == "" or value == []:
        return []
    items = value if isinstance(value, (list, tuple)) else [value]
    lines = []
    for item in items:
        text = item if isinstance(item, str) else json.dumps(item, default=str)
        for line in text.splitlines():
            line = line.rstrip()
            if line:
                lines.append(f"at {line}" if _FRAME.match(line) else line)
    return lines


def outcome_of(metadata: Mapping[str, Any] | None) -> Outcome:
    """The outcome a run's metadata (or a schedule run's detail) holds."""
    metadata = metadata or {}
    error = metadata.get("error")
    return Outcome(str(error) if error else None, traceback_lines(metadata.get("traceback")),
                   {k: v for k, v in metadata.items() if k not in FAILURE_KEYS})
