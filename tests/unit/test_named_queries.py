"""Each role of the store keeps its SQL as named queries, one file per dialect
(``store/<role>/sqlite.sql`` and ``postgresql.sql``): the same names in both, each one used
by the role's code, and no query file elsewhere but the schemas and migrations."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ostinato.domain.visit_policies import POLICY_PICKS
from ostinato.store.queries import load_queries

STORE = Path(__file__).resolve().parents[2] / "src" / "ostinato" / "store"
ROLES = sorted(p.parent.name for p in STORE.glob("*/sqlite.sql"))
#: queries the code runs by a name it reads elsewhere: the grab runs each policy's picks by name
NAMED_ELSEWHERE = {pick for picks in POLICY_PICKS.values() for pick in picks}


def test_every_role_has_both_dialects():
    assert ROLES, "no role keeps named queries"
    for role in ROLES:
        assert (STORE / role / "postgresql.sql").exists(), f"store/{role} has sqlite.sql but no postgresql.sql"
    for path in STORE.glob("*/postgresql.sql"):
        assert (path.parent / "sqlite.sql").exists(), f"store/{path.parent.name} has postgresql.sql but no sqlite.sql"


@pytest.mark.parametrize("role", ROLES)
def test_same_names_in_both_dialects(role):
    lite = set(load_queries(STORE / role / "sqlite.sql"))
    pg = set(load_queries(STORE / role / "postgresql.sql"))
    assert sorted(lite - pg) == [], f"store/{role}: only in sqlite.sql"
    assert sorted(pg - lite) == [], f"store/{role}: only in postgresql.sql"


@pytest.mark.parametrize("role", ROLES)
def test_every_query_is_used(role):
    code = "\n".join(p.read_text(encoding="utf-8") for p in STORE.rglob("*.py"))
    unused = [name for name in load_queries(STORE / role / "sqlite.sql")
              if name not in NAMED_ELSEWHERE and not re.search(rf"\.{name}\b", code)]
    assert unused == [], f"store/{role}: named queries no code uses"
