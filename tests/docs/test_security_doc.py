"""docs/reference/security.md lists, scope by scope, the store verbs each token reaches over HTTP: the lists
are the code's (``REMOTE_SCOPES`` and ``NOT_REMOTE`` of each role), verb for verb."""

from __future__ import annotations

import re
from pathlib import Path

from ostinato.domain.access import SCOPES
from ostinato.remote.verbs import ROLE_VERBS

DOC = Path(__file__).resolve().parents[2] / "docs" / "reference" / "security.md"


def sections() -> dict[str, set[str]]:
    """The verbs named in each table of the doc's store section, by its heading's first code word."""
    found: dict[str, set[str]] = {}
    for part in DOC.read_text().split("\n### ")[1:]:
        heading, body = part.split("\n", 1)
        match = re.match(r"`(\w+)`", heading)
        if match is None and not heading.startswith("Not served"):
            continue  # a section of another part of the page (the console's)
        key = match.group(1) if match else "not served"
        rows = [line for line in body.split("\n## ", 1)[0].splitlines() if line.startswith("| ")]
        found[key] = {name for row in rows for name in re.findall(r"`(\w+)`", row)}
    return found


def test_the_doc_lists_each_scope_s_verbs_as_the_code_serves_them():
    documented = sections()
    for scope in SCOPES:
        served = {name for entry in ROLE_VERBS for name, needed in entry.served.items() if needed == scope}
        assert documented[scope] == served, scope
    assert documented["not served"] == {name for entry in ROLE_VERBS for name in entry.not_served}
