"""``bench/results/`` keeps the JSON behind the figures the project cites, and only that: every JSON file
there is cited by a doc or the code (docs/, the READMEs, bench/'s one per room and the files beside them
among them, CHANGELOG.md, mkdocs.yml, the Makefile, src/, tests/, bench/, scripts/, test_servers/, deploy/),
and every bench/results file they cite exists.

How a citation is read (``CITATION`` finds the words; ``patterns`` resolves one):

- **A path**: anything after ``results/`` (``bench/results/x.json``, ``results/x.json`` from bench/,
  ``../results/x/age.png`` from docs/), or after ``…/`` (the folder left out: ``…/swh-diff-….json``).
- **A name alone** that ends in ``.json`` (``limits-2026-11-26-534822a-1000000.json``) cites the file of
  that name under bench/results if there is one; a name that matches none is another JSON file
  (``report.json``), not a citation.
- **Shell forms** are expanded: braces (``x-{a,b}{,-run2}.json``), ``*``, and a variable (``c$c``) as
  ``*``. A path that ends with no suffix cites what starts with it (a folder, ``sim-2026-11-25-*``).
- **An ellipsis inside a name** (``limits-…-1000000.json``) stands for any text, as ``*`` does.
- **An ellipsis or a dash that opens a name** (``…-1000000.json``, ``-2.json``) continues a name cited
  before it in the same paragraph: some start of that name, then the given tail. ``…-side-by-side.json`` after
  ``…-c1112ec-grabs-1000000.json`` and ``…-8ee22d9-grabs-1000000.json`` cites both side-by-side files.
  With none there that it continues, the nearest name cited before it in the file that it does.
- **"The same for" a commit** (``…/swh-diff-2026-11-28-0910a90.json``, and the same for 6f55c9f; also
  "the same at"): the names cited before it in the paragraph, with that commit in place of theirs.
- **A template** names what a harness writes, not a file: ``<date>``, a Python field (``{commit}``: braces
  with no comma), or a placeholder in capitals (``sim-DATE-COMMIT-WORKLOAD.json``). It cites nothing.

A figure's JSON is kept as long as a doc cites it; a run nobody cites is removed (git keeps it). Only
``.json`` files must be cited: the plots, printed tables and ``.jsonl`` journals beside them are not checked,
though a citation of one of them must still name a file that exists. This file's own examples are not read.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from fnmatch import fnmatchcase
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "bench" / "results"
#: where citations are looked for, from the repository's root (bench/results itself left out)
CITING = ("README.md", "CHANGELOG.md", "mkdocs.yml", "Makefile", "docs", "src", "tests", "bench", "scripts",
          "test_servers", "deploy")
TEXT_SUFFIXES = {"", ".md", ".py", ".yml", ".yaml", ".toml", ".txt", ".cfg", ".ini", ".sh"}

_NAME = r"[\w.*{},…<>$/-]"
#: a word that names a file under bench/results, or may: after ``results/``, or ending in ``.json``
CITATION = re.compile(rf"{_NAME}*results/{_NAME}*|{_NAME}*\.json\b|the same (?:for|at) (?P<commit>[0-9a-f]{{7,40}})\b")
_COMMIT = re.compile(r"(?<![0-9a-f])[0-9a-f]{7}(?![0-9a-f])")
_TEMPLATE = re.compile(r"[<>{}]|[A-Z]{3,}")
_BRACES = re.compile(r"\{([^{}]*,[^{}]*)\}")


def expand(text: str) -> list[str]:
    """A shell's brace expansion: ``a{b,c}{,d}`` → ``ab``, ``abd``, ``ac``, ``acd``."""
    found = _BRACES.search(text)
    if not found:
        return [text]
    return [expanded for choice in found[1].split(",")
            for expanded in expand(text[:found.start()] + choice + text[found.end():])]


def files(results: Path = RESULTS) -> list[str]:
    """Every file under ``results``, by its path there."""
    return sorted(path.relative_to(results).as_posix() for path in results.rglob("*") if path.is_file())


def patterns(word: str, before: list[str]) -> tuple[str, list[str]] | None:
    """What ``word`` cites, as its kind (``path``, ``name`` or ``continued``) and the patterns (of
    ``fnmatch``, on a path under bench/results) it stands for; ``before``: the paths cited before it in
    its paragraph, which an opening ellipsis continues. None: not a citation (a template, a bare folder)."""
    word = word.rstrip(".,")
    if "results/" in word:
        kind, rest = "path", word.rsplit("results/", 1)[1]
    elif word.startswith("…/"):
        kind, rest = "path", word[2:]
    elif word.startswith("…"):
        kind, rest = "continued", word[1:]
    elif word.startswith("-"):
        kind, rest = "continued", word
    else:
        kind, rest = "name", word
    names = [re.sub(r"\$\w+", "*", name).replace("…", "*") for name in expand(rest)]
    if not rest or any(_TEMPLATE.search(name) for name in names):
        return None
    if kind == "continued":
        names = [earlier[:end] + name for earlier in before for end in range(len(earlier)) for name in names]
    return kind, [name if re.search(r"\.\w+$", name) else name.rstrip("/") + "*" for name in names]


def citations(text: str, present: list[str]) -> Iterator[tuple[int, str, str, list[str]]]:
    """Each citation of ``text``: its line, its word, its kind and the files of ``present`` it cites."""

    def matching(wanted: list[str]) -> list[str]:
        return [path for path in present if any(fnmatchcase(path, pattern) for pattern in wanted)]

    earlier: list[list[str]] = []  # what each citation of the file cited, in order
    line = 1
    for paragraph in re.split(r"(\n[ \t]*\n)", text):
        before: list[str] = []
        for found in CITATION.finditer(paragraph):
            if found["commit"]:  # "the same at" with no name before it is prose, not a citation
                resolved = ("same", [_COMMIT.sub(found["commit"][:7], name) for name in before]) if before else None
            else:
                resolved = patterns(found[0], before)
            if resolved is None:
                continue
            kind, wanted = resolved
            cited = matching(wanted)
            for group in reversed(earlier) if kind == "continued" and not cited else ():
                if cited := matching(patterns(found[0], group)[1]):  # the nearest name before it that it continues
                    break
            if kind == "name" and not cited:
                continue  # another JSON file, not one of bench/results
            if cited:
                before, earlier = before + cited, [*earlier, cited]
            yield line + paragraph.count("\n", 0, found.start()), found[0], kind, cited
        line += paragraph.count("\n")


def citing_files(root: Path = ROOT) -> Iterator[Path]:
    for name in CITING:
        top = root / name
        for path in sorted([top] if top.is_file() else top.rglob("*")):
            if (path.is_file() and path.suffix in TEXT_SUFFIXES and "__pycache__" not in path.parts
                    and root / "bench" / "results" not in path.parents and path != Path(__file__).resolve()):
                yield path


def survey(root: Path = ROOT) -> tuple[dict[str, list[str]], list[str]]:
    """The files under bench/results cited, each with where; and the citations that cite no file."""
    present = files(root / "bench" / "results")
    cited: dict[str, list[str]] = {}
    missing = []
    for path in citing_files(root):
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        for line, word, _kind, found in citations(text, present):
            where = f"{path.relative_to(root)}:{line}"
            if not found:
                missing.append(f"{where}: {word}")
            for file in found:
                cited.setdefault(file, []).append(where)
    return cited, missing


def test_every_json_under_bench_results_is_cited():
    cited, _ = survey()
    uncited = [path for path in files() if path.endswith(".json") and path not in cited]
    assert len(cited) >= 50, "so few citations found: the reading of them is broken"
    assert not uncited, "JSON under bench/results that no doc or code cites (remove it, or cite it):\n" + "\n".join(uncited)


def test_the_rooms_docs_are_read():
    """Each room's README, and the files its sections are split into, are among the files read."""
    read = set(citing_files())
    bench_docs = sorted(path for path in (ROOT / "bench").rglob("*.md") if RESULTS not in path.parents)
    assert len(bench_docs) >= 8, bench_docs
    assert [path for path in bench_docs if path not in read] == []


def test_every_cited_bench_results_file_exists():
    _, missing = survey()
    assert not missing, "citations of bench/results that name no file there:\n" + "\n".join(missing)


def test_the_reading_of_citations(tmp_path):
    results = tmp_path / "bench" / "results"
    (results / "cost").mkdir(parents=True)
    for name in ("a-1-100.json", "a-1-1000.json", "a-1-100-run2.json", "b-x-grabs.json", "b-y-grabs.json",
                 "b-x-grabs-side.json", "b-y-grabs-side.json", "c-2-hints.json", "c-3-hints.json", "cost/p-1.json",
                 "sim-9-e.json", "sim-9-f.json", "lone.json", "old-7-c2.json", "never.json", "d-abc1234.json",
                 "d-def5678.json", "e-1.json", "e-2.json"):
        (results / name).write_text("{}")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "page.md").write_text(
        "Runs: `bench/results/a-1-100.json` and `…-1000.json`; see `…-100-run2.json`.\n\n"
        "`results/b-x-grabs.json`, then `results/b-y-grabs.json`; side by side `…-side.json`.\n"
        "`bench/results/c-{2,3}-hints.json` and `sim-9-*.json` and `results/cost/` and `lone.json`, `report.json`.\n"
        "Written to `bench/results/old-$n-c$c.json`, `bench/results/tmp-<date>.json`, `sim-DATE-X.json`.\n\n"
        "Gone: `bench/results/gone.json`, `…/a-1-100.json`.\n\n"
        "At abc1234 (`…/d-abc1234.json`, and the same for def5678), twice (`bench/results/e-1.json` and `-2.json`).\n")
    cited, missing = survey(tmp_path)
    assert sorted(cited) == sorted(set(files(results)) - {"never.json"})
    assert cited["b-x-grabs-side.json"] == cited["b-y-grabs-side.json"] == ["docs/page.md:3"]
    assert cited["d-def5678.json"] == cited["e-2.json"] == ["docs/page.md:9"]
    assert missing == ["docs/page.md:7: bench/results/gone.json"]
