"""Every pick is declared once (``domain.policy_picks``) and each store renders its statement from its
dialect's one pick template (store/origins/picks.py): each declaration names a partial index both
schemas create, which keeps exactly its conditions but the time ones, and whose columns are its
rendered ORDER BY; tests/conformance/test_pick_declarations.py checks what the statements take."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from ostinato.domain.policy_picks import (
    PICKS,
    POLICY_PICKS,
    POLICY_WALKS,
    AtMost,
    Eq,
    IsNull,
    Key,
    Lag,
    ListingFacts,
    Nulls,
    Pick,
    moments,
    policy_picks,
)
from ostinato.domain.visit_policies import GrabOptions, VisitPolicy
from ostinato.domain.visits import VisitStats
from ostinato.store.origins.picks import SYNTAX, _key, pick_statement, render_pick
from ostinato.store.postgresql.dialect import role_queries as pg_queries
from ostinato.store.queries import load_queries
from ostinato.store.sqlite.dialect import role_queries as lite_queries

STORE = Path(__file__).resolve().parents[2] / "src" / "ostinato" / "store"
DIALECTS = ("sqlite", "postgresql")
QUERIES = {"sqlite": lite_queries("origins"), "postgresql": pg_queries("origins")}
T = datetime(2026, 1, 1, tzinfo=UTC)


def test_every_policy_has_its_walks_each_named_once():
    assert sorted(POLICY_WALKS) == sorted(VisitPolicy)
    names = [pick.name for picks in POLICY_WALKS.values() for pick in picks]
    assert len(names) == len(set(names)) == len(PICKS)
    for policy in VisitPolicy:
        assert POLICY_WALKS[policy], policy
        assert [pick.name for pick in policy_picks(policy)] == list(POLICY_PICKS[policy])


@pytest.mark.parametrize("dialect", DIALECTS)
def test_one_template_and_no_written_pick(dialect):
    queries = load_queries(STORE / "origins" / f"{dialect}_scheduling.sql")
    assert "pick" in queries
    assert [name for name in queries if name.startswith("pick_")] == []
    assert queries["pick"].count("{conditions}") == queries["pick"].count("{order}") == 1


@pytest.mark.parametrize("dialect", DIALECTS)
def test_each_declared_index_is_a_partial_index_its_statement_walks_in_order(dialect):
    schema = (STORE / dialect / "schema_origins.sql").read_text()
    for pick in PICKS.values():
        found = re.search(rf"CREATE INDEX {pick.index} ON origin_visit_stats \(visit_type, ([^\n]*)\)\s*\n\s*WHERE ([^;]*);",
                          schema)
        assert found, f"{pick.name}: no partial index {pick.index} in {dialect}'s schema"
        sql = pick_statement(QUERIES[dialect], dialect, pick.name)
        order = re.search(r"\nORDER BY s\.visit_type, ([^\n]*)\n", sql)
        assert order, f"{pick.name}: no ORDER BY by visit type in {dialect}"
        assert order.group(1).replace("s.", "") == found.group(1), f"{pick.name}: not the order of {pick.index}"
        # the index keeps what every walk asks and the pick's conditions, all but the time ones
        kept = [f"s.{c}" for c in ("enabled", "cooldown_until IS NULL")] + re.findall(
            r"\n  AND (s\.[^\n]*)", sql.split("\n  AND (", 1)[0])
        kept = [c for c in kept if "<=" not in c]
        assert " AND ".join(kept).replace("s.", "") == " ".join(found.group(2).split()), pick.name


@pytest.mark.parametrize("dialect", DIALECTS)
def test_the_statements_take_the_grabs_parameters(dialect):
    params = set(moments(T, GrabOptions())) | {"visit_type", "lister_id", "limit"}
    for name in PICKS:
        sql = pick_statement(QUERIES[dialect], dialect, name)
        used = set(re.findall(r"%\((\w+)\)s" if dialect == "postgresql" else r":(\w+)", sql))
        assert used <= params, (name, used - params)
        assert "{" not in sql, name


def test_where_each_dialect_puts_nulls():
    pg, lite = SYNTAX["postgresql"], SYNTAX["sqlite"]
    assert _key(pg, Key("x", nulls=Nulls.FIRST)) == "s.x NULLS FIRST"
    assert _key(pg, Key("x", nulls=Nulls.LAST)) == "s.x"
    assert _key(lite, Key("x", nulls=Nulls.FIRST)) == "s.x"
    assert _key(lite, Key("x", nulls=Nulls.LAST)) == "s.x IS NULL, s.x"
    assert _key(pg, Key("x", descending=True, nulls=Nulls.LAST)) == "s.x DESC NULLS LAST"
    assert _key(lite, Key("x", descending=True, nulls=Nulls.FIRST)) == "s.x IS NOT NULL, s.x DESC"
    assert _key(pg, Key(Lag("a", "b"), descending=True)) == "(s.a - s.b) DESC"
    assert _key(lite, Key(Lag("a", "b"), descending=True)) == "(julianday(s.a) - julianday(s.b)) DESC"


def test_a_template_without_its_placeholders_is_refused():
    with pytest.raises(ValueError, match="once"):
        render_pick("SELECT 1 ORDER BY s.visit_type, {order}", "sqlite", "pick_stop_after_success")


def test_the_python_side_follows_the_declaration():
    stats = VisitStats("u", "git", last_visit=T, successful_visits=1)
    facts = ListingFacts(True, T, None, False, 1)
    options = GrabOptions(minimum_interval=timedelta(days=2))
    pick = Pick("p", "i", (IsNull("last_update"), Eq("successful_visits", 1), AtMost("last_visit", "visited_before")),
                (Key("last_visit"),))
    assert pick.takes(stats, facts)
    assert pick.due(stats, facts, options) == T + timedelta(days=2)
    assert not pick.eligible(stats, facts, T + timedelta(days=1), options)
    assert pick.eligible(stats, facts, T + timedelta(days=2), options)
    assert not pick.takes(VisitStats("u", "git", successful_visits=1), facts)  # a NULL is never due
    never, later = VisitStats("u", "git"), VisitStats("u", "git", last_scheduled=T)
    first = Pick("p", "i", (), (Key("last_scheduled", nulls=Nulls.FIRST),))
    last = Pick("p", "i", (), (Key("last_scheduled", nulls=Nulls.LAST),))
    assert first.sort_key(never, facts) < first.sort_key(later, facts)
    assert last.sort_key(later, facts) < last.sort_key(never, facts)
    lag = Pick("p", "i", (), (Key(Lag("last_update", "last_successful"), descending=True),))
    big = VisitStats("u", "git", last_successful=T - timedelta(days=3))
    small = VisitStats("u", "git", last_successful=T - timedelta(days=1))
    updated = ListingFacts(True, T, T, False, 1)
    assert lag.sort_key(big, updated) < lag.sort_key(small, updated)
