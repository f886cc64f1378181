"""Comments in src/ cite the project's own documentation pages, never the outside documents it
was built from ("seed 00N") nor tracker numbers ("issue N"); every docs/….md page they cite exists."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"
TEXT_SUFFIXES = {".py", ".sql", ".html", ".css", ".toml", ".md", ".txt", ".cfg"}

# "seed 001", "seeds 000 and 003", "Seed 004's"; not identifiers such as seed003_vcs_mix
OUTSIDE_CITATION = re.compile(r"\bseeds? 0\d\d\b|\bissue \d+\b", re.IGNORECASE)
DOCS_PATH = re.compile(r"\bdocs/[A-Za-z0-9_./-]+?\.md\b")


def _source_files() -> list[Path]:
    return sorted(p for p in SRC.rglob("*") if p.is_file() and p.suffix in TEXT_SUFFIXES
                  and not any(part.endswith(".egg-info") or part == "__pycache__" for part in p.parts))


def test_src_cites_no_outside_document():
    found = [f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
             for path in _source_files()
             for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if OUTSIDE_CITATION.search(line)]
    assert not found, "cite the design pages (docs/design/*.md) instead:\n" + "\n".join(found)


def test_cited_docs_pages_exist():
    cited: dict[str, list[str]] = {}
    for path in _source_files():
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for page in DOCS_PATH.findall(line):
                cited.setdefault(page, []).append(f"{path.relative_to(ROOT)}:{number}")
    assert cited, "no comment in src/ cites a docs/ page; this check would prove nothing"
    missing = {page: where for page, where in cited.items() if not (ROOT / page).is_file()}
    assert not missing, f"cited pages that do not exist: {missing}"


def test_the_patterns_catch_what_they_should():
    assert OUTSIDE_CITATION.search("the rules of seed 004")
    assert OUTSIDE_CITATION.search("(seeds 000, 001 and 003)")
    assert OUTSIDE_CITATION.search("Seed 003's table")
    assert OUTSIDE_CITATION.search("the API (issue 8)")
    assert not OUTSIDE_CITATION.search('StorePolicy("seed003_vcs_mix", …)')
    assert not OUTSIDE_CITATION.search("every random stream is seeded from the seed")
    assert DOCS_PATH.findall("(see docs/design/deadline-greedy.md).") == ["docs/design/deadline-greedy.md"]


def test_the_readme_links_to_pages_that_exist():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    links = [target.split("#")[0] for target in re.findall(r"\]\(([^)\s]+)\)", readme)
             if not target.startswith(("http://", "https://", "#"))]
    assert len(links) >= 10, links
    assert [link for link in links if not (ROOT / link).exists()] == []
