"""No file of ``src/`` is over 600 lines, whatever it holds: Python, SQL (named queries, schemas,
migrations), templates and styles. A file that grows past it is split by subject, each part one kind
of thing that says so in its header (as the origins role's queries and the canonical schemas are)."""

from __future__ import annotations

from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"
MAX_LINES = 600


def _lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def _too_long(root: Path) -> list[str]:
    files = [p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"]
    return sorted(f"{p.relative_to(root)}: {_lines(p)} lines" for p in files if _lines(p) > MAX_LINES)


def test_no_file_in_src_is_over_600_lines():
    assert _too_long(SRC) == [], f"over {MAX_LINES} lines: split by subject"


def test_the_check_sees_every_kind_of_file(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "short.py").write_text("x = 1\n" * MAX_LINES, encoding="utf-8")
    (tmp_path / "pkg" / "long.sql").write_text("SELECT 1;\n" * (MAX_LINES + 1), encoding="utf-8")
    (tmp_path / "pkg" / "long.html").write_text("<p>\n" * (MAX_LINES + 1), encoding="utf-8")
    assert _too_long(tmp_path) == [f"pkg/long.html: {MAX_LINES + 1} lines", f"pkg/long.sql: {MAX_LINES + 1} lines"]
