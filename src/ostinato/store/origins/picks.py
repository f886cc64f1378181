"""The policies' index walks as statements: each dialect's one pick template (the named query ``pick``
of its ``*_scheduling.sql``) filled with a pick's conditions and order as ``domain.policy_picks``
declares them, in place of the braced words conditions and order.

What differs between the dialects is said here once: how a parameter is written, how a lag between
two times is computed (as each schema's lag index computes it), and where each sorts NULLs unless
told: PostgreSQL sorts NULLs last ascending unless told ``NULLS FIRST``; SQLite first, and its indexes
put them last by a key of ``x IS NULL`` first (as ``visit_optimal_due_idx`` does). A pick's ORDER BY
is its partial index's columns, in their order, written as that dialect's index writes them:
PostgreSQL walks an index only for the very order it keeps. Each statement is rendered once per
process (cached), not per grab.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from ...domain.policy_picks import MOMENTS, PICKS, AtMost, Condition, Eq, Gt, IsNull, Key, Lag, Later, NotNull, Nulls
from ..queries import Queries

CONDITIONS, ORDER = "{conditions}", "{order}"


@dataclass(frozen=True, slots=True)
class PickSyntax:
    """How a dialect writes what a pick declares."""

    #: a named parameter, ``{name}`` in place of its name
    parameter: str
    #: the time from one column to another, ``{newer}`` and ``{older}`` in place of the columns
    lag: str
    #: whether NULLs come first ascending unless told (and so last descending)
    nulls_first_ascending: bool
    #: how NULLs are put first or last against the dialect's habit: after the key (PostgreSQL's
    #: ``NULLS FIRST``), or as a key of ``x IS NULL`` before it (SQLite's indexes)
    nulls_clause: bool


SYNTAX = {
    "postgresql": PickSyntax("%({name})s", "(s.{newer} - s.{older})", nulls_first_ascending=False, nulls_clause=True),
    "sqlite": PickSyntax(":{name}", "(julianday(s.{newer}) - julianday(s.{older}))", nulls_first_ascending=True,
                         nulls_clause=False),
}


def _field(name: str) -> str:
    if not name.isidentifier():
        raise ValueError(f"a pick names a field {name!r}")
    return name


def _column(name: str) -> str:
    return f"s.{_field(name)}"


def _condition(syntax: PickSyntax, condition: Condition) -> str:
    if isinstance(condition, IsNull):
        return f"{_column(condition.field)} IS NULL"
    if isinstance(condition, NotNull):
        return f"{_column(condition.field)} IS NOT NULL"
    if isinstance(condition, Eq | Gt):
        if isinstance(condition.value, bool) or not isinstance(condition.value, int):
            raise ValueError(f"a pick compares {condition.field} with {condition.value!r}, not a whole number")
        return f"{_column(condition.field)} {'=' if isinstance(condition, Eq) else '>'} {condition.value}"
    if isinstance(condition, Later):
        return f"{_column(condition.field)} > {_column(condition.than)}"
    if isinstance(condition, AtMost):
        if condition.moment not in MOMENTS:
            raise ValueError(f"a pick compares {condition.field} with no moment of the grab: {condition.moment!r}")
        return f"{_column(condition.field)} <= {syntax.parameter.format(name=condition.moment)}"
    raise TypeError(f"no SQL for the condition {condition!r}")


def _key(syntax: PickSyntax, key: Key) -> str:
    if isinstance(key.of, Lag):
        expression = syntax.lag.format(newer=_field(key.of.newer), older=_field(key.of.older))
    else:
        expression = _column(key.of)
    written = expression + (" DESC" if key.descending else "")
    first_by_habit = syntax.nulls_first_ascending != key.descending
    if key.nulls is None or (key.nulls is Nulls.FIRST) == first_by_habit:
        return written
    if syntax.nulls_clause:
        return f"{written} NULLS {key.nulls.name}"
    return f"{expression} IS {'NOT ' if key.nulls is Nulls.FIRST else ''}NULL, {written}"


def render_pick(template: str, dialect: str, name: str) -> str:
    """The statement of the pick ``name`` (``domain.policy_picks.PICKS``) from ``template``, the
    dialect's pick template."""
    pick, syntax = PICKS[name], SYNTAX[dialect]
    for placeholder in (CONDITIONS, ORDER):
        if template.count(placeholder) != 1:
            raise ValueError(f"the pick template holds {placeholder} {template.count(placeholder)} times, not once")
    if not pick.order:
        raise ValueError(f"{name}: a pick walks its index in an order")
    conditions = "".join(f"\n  AND {_condition(syntax, condition)}" for condition in pick.where)
    order = ", ".join(_key(syntax, key) for key in pick.order)
    return template.replace(CONDITIONS, conditions).replace(ORDER, order)


@lru_cache(maxsize=64)
def _rendered(template: str, dialect: str, name: str) -> str:
    return render_pick(template, dialect, name)


def pick_statement(q: Queries, dialect: str, name: str) -> str:
    """The pick ``name`` in ``dialect`` from the role's queries ``q``, rendered once per process."""
    return _rendered(q.pick, dialect, name)
