"""``bench/``'s docs: ``bench/README.md`` says how the folders are laid out and links to one README per room
(``bench/common/`` and ``bench/results/`` have none), and every relative link in ``bench/``'s Markdown names a file
that exists and, with an anchor, a heading of that file (as GitHub makes a heading's anchor). mkdocs checks the
links of docs/ only; these files are read on GitHub and in the repository."""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"
NO_README = {"common", "results", "__pycache__"}
LINK = re.compile(r"\]\(([^)\s]+)\)")


def anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, only letters, digits, ``-``, ``_`` and spaces kept, spaces as ``-``."""
    kept = "".join(c for c in heading.strip().lower() if c in " -_" or unicodedata.category(c)[0] in "LMN")
    return kept.replace(" ", "-")


def anchors(text: str) -> set[str]:
    """The anchors of a Markdown file's headings, those in code blocks left out; a repeated one gets ``-1``, ``-2``…"""
    found: set[str] = set()
    fenced = False
    for line in text.splitlines():
        fenced ^= line.startswith("```")
        if not fenced and (heading := re.match(r"#{1,6} (.+)", line)):
            base, n = anchor(heading[1]), 0
            while (name := base if n == 0 else f"{base}-{n}") in found:
                n += 1
            found.add(name)
    return found


def broken_links(root: Path) -> list[str]:
    broken = []
    for doc in sorted(root.rglob("*.md")):
        for target in LINK.findall(doc.read_text(encoding="utf-8")):
            if target.startswith(("http://", "https://", "mailto:")):
                continue
            file, _, name = target.partition("#")
            linked = (doc.parent / file).resolve() if file else doc
            if not linked.exists():
                broken.append(f"{doc.relative_to(root)}: {target} (no such file)")
            elif name and linked.suffix == ".md" and name not in anchors(linked.read_text(encoding="utf-8")):
                broken.append(f"{doc.relative_to(root)}: {target} (no such heading)")
    return broken


def test_each_room_has_a_readme_the_index_links_to():
    rooms = sorted(p.name for p in BENCH.iterdir() if p.is_dir() and p.name not in NO_README)
    assert len(rooms) >= 7, rooms
    index = LINK.findall((BENCH / "README.md").read_text(encoding="utf-8"))
    assert [room for room in rooms if not (BENCH / room / "README.md").is_file()] == []
    assert [room for room in rooms if f"{room}/README.md" not in index] == []


def test_every_relative_link_of_bench_docs_lands():
    assert broken_links(BENCH) == []


def test_the_link_check_sees_a_broken_link(tmp_path):
    assert anchor("`bench/limits/tasks.py`: task life-cycle throughput") == "benchlimitstaskspy-task-life-cycle-throughput"
    (tmp_path / "room").mkdir()
    (tmp_path / "room" / "README.md").write_text("# Room\n\n## Running it\n\n```sh\n# not a heading\n```\n\n## Running it\n")
    (tmp_path / "README.md").write_text(
        "[a](room/README.md#running-it) [b](room/README.md#running-it-1) [c](room/README.md#not-a-heading)\n"
        "[d](room/gone.md) [e](https://example.org/x.md) [f](#top)\n")
    assert broken_links(tmp_path) == ["README.md: room/README.md#not-a-heading (no such heading)",
                                      "README.md: room/gone.md (no such file)", "README.md: #top (no such heading)"]
