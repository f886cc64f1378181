"""Every suppression carries its code and its reason, on the line it silences: the project's rule for
the comments that silence a checker (ruff's ``noqa``, mypy's ``type: ignore``), in the Python files of
src/, tests/, bench/ and test_servers/.

- ``# noqa: CODE[,CODE] - reason`` (or ``# noqa: CODE (reason)``): a bare ``# noqa``, one without a
  code, or one without a reason is refused.
- ``# type: ignore[code]  # reason``: a code in brackets, then a second ``#`` with the reason; a bare
  ``# type: ignore``, or one without a reason, is refused.

Only real comments count (the ``tokenize`` module finds them): a string that spells a suppression, as
the snippets below do, is not one."""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Iterable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: the folders whose Python files are checked, from the repository's root
CHECKED = ("src", "tests", "bench", "test_servers")

#: where a suppression starts inside a comment (a comment may hold several)
_DIRECTIVE = re.compile(r"#\s*(?:(?P<noqa>noqa)\b|(?P<ignore>type:\s*ignore)\b)", re.IGNORECASE)
#: what follows ``noqa``: a colon, codes (F401, B023, RUF100...), then a reason after a dash or in parentheses
_NOQA = re.compile(r":\s*[A-Z]+[0-9]+(?:\s*,\s*[A-Z]+[0-9]+)*"
                   r"(?:\s+[-\u2013\u2014]\s*(?P<dashed>.*)|\s*\((?P<bracketed>.*)\)\s*)$")
#: what follows ``type: ignore``: codes in brackets, then ``#`` and the reason
_IGNORE = re.compile(r"\[\s*[a-z0-9-]+(?:\s*,\s*[a-z0-9-]+)*\s*\]\s*#\s*(?P<reason>.*)$")
#: the forms a failure asks for
NOQA_FORM = "# noqa: CODE - reason"
IGNORE_FORM = "# type: ignore[code]  # reason"


def _has_words(text: str | None) -> bool:
    return text is not None and re.search(r"[^\W\d_]{2,}", text) is not None


def _directives(comment: str) -> Iterator[tuple[str, str]]:
    """Each suppression in ``comment``: its kind (``noqa`` or ``ignore``) and the text after its keyword,
    up to the next suppression."""
    found = list(_DIRECTIVE.finditer(comment))
    for index, match in enumerate(found):
        end = found[index + 1].start() if index + 1 < len(found) else len(comment)
        yield ("noqa" if match.group("noqa") else "ignore"), comment[match.end():end].rstrip()


def comment_problems(comment: str) -> list[str]:
    """The forms the suppressions of one comment (``#`` and all) should have and do not: none if each
    has its code(s) and its reason."""
    problems = []
    for kind, rest in _directives(comment):
        if kind == "noqa":
            match = _NOQA.match(rest)
            if match is None or not _has_words(match.group("dashed") or match.group("bracketed")):
                problems.append(NOQA_FORM)
        else:
            match = _IGNORE.match(rest)
            if match is None or not _has_words(match.group("reason")):
                problems.append(IGNORE_FORM)
    return problems


def source_problems(source: str, name: str) -> list[str]:
    """``name:line: comment  <- wants FORM`` for each suppression of ``source`` without its code(s) and
    its reason."""
    problems = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type == tokenize.COMMENT:
                for form in comment_problems(token.string):
                    problems.append(f"{name}:{token.start[0]}: {token.string}  <- wants {form}")
    except (tokenize.TokenError, SyntaxError) as exc:
        problems.append(f"{name}: not read as Python ({exc})")
    return problems


def python_files(folders: Iterable[str]) -> list[Path]:
    """The Python files under these folders of the repository, hidden folders and caches left out."""
    files = []
    for folder in folders:
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = path.relative_to(ROOT).parts
            if not any(part.startswith(".") or part == "__pycache__" for part in parts):
                files.append(path)
    return files


def suppression_problems(folders: Iterable[str] = CHECKED) -> list[str]:
    """Every suppression without its code and reason in the Python files under ``folders``."""
    problems = []
    for path in python_files(folders):
        name = path.relative_to(ROOT).as_posix()
        problems += source_problems(path.read_text(encoding="utf-8"), name)
    return problems


def test_every_suppression_has_a_code_and_a_reason():
    assert len(python_files(CHECKED)) > 100  # the folders were found
    problems = suppression_problems()
    assert not problems, f"{len(problems)} suppressions without a code and a reason:\n" + "\n".join(problems)


GOOD = [
    "import x  # noqa: F401 - registers its commands",
    "import x  # noqa: F401,E402 - registers its commands, after the path is set",
    "import x  # noqa: F401, E402 - registers its commands",
    "import x  # noqa: F401 (registers its commands)",
    "import x  # NOQA: F401 - the case does not matter",
    "x = f()  # type: ignore[attr-defined]  # the stub does not know it",
    "x = f()  # type: ignore[attr-defined, arg-type]  # the stub is older than the library",
    "x = f()  # type: ignore[misc]  # the stub is older  # noqa: B009 - each with its reason",
    "x = 'a string # noqa, not a comment'",
    'x = """# type: ignore in a docstring is text"""',
    "x = 1  # a comment that says noqa in passing is no suppression",
]

BAD = [
    ("import x  # noqa", NOQA_FORM),
    ("import x  # noqa: F401", NOQA_FORM),
    ("import x  # noqa:F401", NOQA_FORM),
    ("import x  # noqa: F401 -", NOQA_FORM),
    ("import x  # noqa - registers its commands", NOQA_FORM),
    ("import x  # noqa: registers its commands", NOQA_FORM),
    ("import x  # noqa: F401 registers its commands", NOQA_FORM),
    ("x = f()  # type: ignore", IGNORE_FORM),
    ("x = f()  # type: ignore  # the stub does not know it", IGNORE_FORM),
    ("x = f()  # type: ignore[attr-defined]", IGNORE_FORM),
    ("x = f()  # type: ignore[attr-defined] - the stub does not know it", IGNORE_FORM),
    ("x = f()  # type: ignore[attr-defined]  (the stub does not know it)", IGNORE_FORM),
    ("x = f()  # type: ignore[attr-defined]  #", IGNORE_FORM),
    ("x = f()  # type: ignore[misc]  # noqa: B009 - only the second has its reason", IGNORE_FORM),
    ("x = f()  # type: ignore[misc]  # the first has its reason  # noqa: B009", NOQA_FORM),
]


def test_the_checker_tells_good_suppressions_from_bad_ones():
    for line in GOOD:
        assert source_problems(line + "\n", "snippet.py") == [], line
    for line, form in BAD:
        comment = line[line.index("#"):]
        assert source_problems(line + "\n", "snippet.py") == [f"snippet.py:1: {comment}  <- wants {form}"], line
    # the place and the comment, for each one, in a file of several lines
    source = "import a  # noqa\n\ndef f():\n    return g()  # type: ignore\n"
    assert source_problems(source, "m.py") == [
        "m.py:1: # noqa  <- wants # noqa: CODE - reason",
        "m.py:4: # type: ignore  <- wants # type: ignore[code]  # reason",
    ]
