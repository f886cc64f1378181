"""Every pick_* named query has one declaration (``domain.policy_picks``): the same names as the stores'
queries in both dialects and as ``POLICY_PICKS``, each naming a partial index both schemas create and
its query walks in its ORDER BY; tests/conformance/test_pick_declarations.py checks what they take."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ostinato.domain.policy_picks import PICKS, policy_picks
from ostinato.domain.visit_policies import POLICY_PICKS, VisitPolicy
from ostinato.store.queries import load_queries

STORE = Path(__file__).resolve().parents[2] / "src" / "ostinato" / "store"
DIALECTS = ("sqlite", "postgresql")


def _picks(dialect: str) -> dict[str, str]:
    queries = load_queries(STORE / "origins" / f"{dialect}_scheduling.sql")
    return {name: body for name, body in queries.items() if name.startswith("pick_")}


@pytest.mark.parametrize("dialect", DIALECTS)
def test_one_declaration_per_pick_query(dialect):
    assert sorted(PICKS) == sorted(_picks(dialect))
    assert sorted(PICKS) == sorted({name for names in POLICY_PICKS.values() for name in names})


@pytest.mark.parametrize("dialect", DIALECTS)
def test_each_declared_index_is_a_partial_index_its_query_walks_in_order(dialect):
    schema = (STORE / dialect / "schema_origins.sql").read_text()
    queries = _picks(dialect)
    for pick in PICKS.values():
        found = re.search(rf"CREATE INDEX {pick.index} ON origin_visit_stats \(visit_type, ([^\n]*)\)\s*\n\s*WHERE ",
                          schema)
        assert found, f"{pick.name}: no partial index {pick.index} in {dialect}'s schema"
        order = re.search(r"ORDER BY s\.visit_type, ([^\n]*)\n", queries[pick.name])
        assert order, f"{pick.name}: no ORDER BY by visit type in {dialect}"
        assert order.group(1).replace("s.", "") == found.group(1), f"{pick.name}: not the order of {pick.index}"


def test_policy_picks_follow_the_grab_order():
    for policy in VisitPolicy:
        assert [pick.name for pick in policy_picks(policy)] == list(POLICY_PICKS[policy])
