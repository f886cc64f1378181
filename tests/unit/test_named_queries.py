"""Each role of the store keeps its SQL as named queries per dialect (``store/<role>/sqlite.sql`` and
``postgresql.sql``, or one file per subject, ``sqlite_<subject>.sql`` and ``postgresql_<subject>.sql``):
the same files and the same names in both, each one used by the role's code; and the loader reads a
role's files together, refusing a name defined in two of them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ostinato.store.queries import Queries, load_queries, load_query_files, role_query_files

STORE = Path(__file__).resolve().parents[2] / "src" / "ostinato" / "store"
ROLES = sorted({p.parent.name for p in [*STORE.glob("*/sqlite.sql"), *STORE.glob("*/sqlite_*.sql")]})


def _subjects(role: str, dialect: str) -> dict[str, set[str]]:
    """The role's query files in a dialect by what follows the dialect in their name, and their names."""
    return {path.name.removeprefix(dialect): set(load_queries(path))
            for path in role_query_files(STORE / role, dialect)}


def test_every_role_has_both_dialects():
    assert ROLES, "no role keeps named queries"
    pg_roles = {p.parent.name for p in [*STORE.glob("*/postgresql.sql"), *STORE.glob("*/postgresql_*.sql")]}
    assert sorted(pg_roles) == ROLES, "a role keeps named queries in one dialect only"


@pytest.mark.parametrize("role", ROLES)
def test_same_files_and_names_in_both_dialects(role):
    lite, pg = _subjects(role, "sqlite"), _subjects(role, "postgresql")
    assert sorted(lite) == sorted(pg), f"store/{role}: the dialects' files differ"
    for subject in lite:
        assert sorted(lite[subject] - pg[subject]) == [], f"store/{role}: only in sqlite{subject}"
        assert sorted(pg[subject] - lite[subject]) == [], f"store/{role}: only in postgresql{subject}"


@pytest.mark.parametrize("role", ROLES)
def test_every_query_is_used(role):
    code = "\n".join(p.read_text(encoding="utf-8") for p in STORE.rglob("*.py"))
    unused = [name for name in load_query_files(role_query_files(STORE / role, "sqlite"))
              if not re.search(rf"\.{name}\b", code)]
    assert unused == [], f"store/{role}: named queries no code uses"


def test_a_role_reads_its_files_together_in_name_order(tmp_path):
    (tmp_path / "sqlite_b.sql").write_text("-- name: second\nSELECT 2;\n", encoding="utf-8")
    (tmp_path / "sqlite_a.sql").write_text("-- name: first\nSELECT 1;\n", encoding="utf-8")
    (tmp_path / "postgresql_a.sql").write_text("-- name: other\nSELECT 3;\n", encoding="utf-8")
    paths = role_query_files(tmp_path, "sqlite")
    assert [p.name for p in paths] == ["sqlite_a.sql", "sqlite_b.sql"]
    queries = Queries(*paths)
    assert (queries.first, queries.second) == ("SELECT 1;", "SELECT 2;")
    with pytest.raises(AttributeError, match="sqlite_a.sql \\+ sqlite_b.sql has no query 'other'"):
        _ = queries.other


def test_a_name_defined_in_two_files_is_refused(tmp_path):
    (tmp_path / "sqlite_a.sql").write_text("-- name: same\nSELECT 1;\n", encoding="utf-8")
    (tmp_path / "sqlite_b.sql").write_text("-- name: same\nSELECT 1;\n", encoding="utf-8")
    with pytest.raises(ValueError, match="query 'same' defined in both .*sqlite_a.sql and .*sqlite_b.sql"):
        Queries(*role_query_files(tmp_path, "sqlite"))


def test_a_role_without_query_files_is_refused(tmp_path):
    with pytest.raises(ValueError, match="no sqlite.sql nor sqlite_<subject>.sql"):
        role_query_files(tmp_path, "sqlite")
