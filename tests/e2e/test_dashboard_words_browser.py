"""Words on the console's pages break only between words, in a real headless Chromium (Debian's
``chromium``, driven by Playwright): at a desktop's width (1280 px), a narrow window's (800 px, still
the table layout) and a phone's (390 px, tables as cards), no word of a table's header or cell is
split across two lines ("CONDITIO / N", "succee / ded"). A line may break after a hyphen or a slash
(``fetch-mirror``, a path), as text does anywhere; only cells marked as holding a URL or code may
break a long word wherever it must, so that they never widen the page."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from browser_helpers import serve
from test_dashboard_drill import seed_drill
from test_dashboard_helpers import seed, seed_fire_times, tokens

from ostinato.api import create_app
from ostinato.config import Settings

WIDTHS = (1280, 800, 390)

#: the words of every visible table cell split across lines: each run of text between spaces, cut after
#: any hyphen or slash (where a line may break), whose text range covers more than one line box. Cells
#: that may break anywhere (a URL, code, a traceback) are left out.
BROKEN_WORDS = """
() => {
  const broken = [];
  const free = "td.url, .url, code, pre, .frame";
  for (const cell of document.querySelectorAll("th, td")) {
    const hidden = (element) => { const box = element.getBoundingClientRect(); return box.width <= 2 || box.height <= 2; };
    // left out when hidden: a phone's header row is visually hidden (its cards label each cell)
    if (hidden(cell) || (cell.closest("thead") && hidden(cell.closest("thead")))) continue;
    const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      if (node.parentElement.closest(free)) continue;
      const text = node.textContent;
      const piece = /[^\\s\\-\\/]+[\\-\\/]*/g;
      for (let match = piece.exec(text); match; match = piece.exec(text)) {
        const range = document.createRange();
        range.setStart(node, match.index);
        range.setEnd(node, match.index + match[0].length);
        const lines = new Set(Array.from(range.getClientRects()).filter(r => r.width > 0).map(r => Math.round(r.top)));
        if (lines.size > 1) broken.push(`${cell.tagName.toLowerCase()}: ${match[0]}`);
      }
    }
  }
  return broken;
}
"""


@pytest.fixture
def served(sqlite_store, clock) -> Iterator[tuple[str, str, dict[str, int]]]:
    seed(sqlite_store, clock)
    seed_fire_times(sqlite_store, clock)
    ids = seed_drill(sqlite_store, clock)
    secret = tokens(sqlite_store, clock)["read"]
    with serve(create_app(sqlite_store, Settings(), clock), "dashboard-words-uvicorn") as base:
        yield base, secret, ids


def test_table_words_break_only_between_words(served, chromium):
    base, secret, ids = served
    pages = ["/", "/dashboard/schedules/flaky-sync", "/dashboard/schedules/beat-minutely",
             "/dashboard/task-types/fetch-mirror", f"/dashboard/tasks/{ids['mirror']}", f"/dashboard/tasks/{ids['gone']}",
             "/dashboard/visit-types/git", f"/dashboard/listers/{ids['lister']}?visit_type=git",
             "/dashboard/origins?url=https%3A%2F%2Fforge.example%2Frated&visit_type=git",
             "/dashboard/origins?url=https%3A%2F%2Fforge.example%2Fbroken&visit_type=git"]
    broken: dict[str, list[str]] = {}
    wide: dict[str, int] = {}  # the pages that scroll sideways: their width
    for width in WIDTHS:
        context = chromium.new_context(viewport={"width": width, "height": 900},
                                       extra_http_headers={"Authorization": f"Bearer {secret}"})
        try:
            page = context.new_page()
            for path in pages:
                answer = page.goto(f"{base}{path}")
                assert answer.status == 200, path
                assert page.locator("th, td").count() > 0, path
                found = page.evaluate(BROKEN_WORDS)
                if found:
                    broken[f"{path} at {width} px"] = found
                scroll_width = page.evaluate("document.documentElement.scrollWidth")
                if scroll_width > width:
                    wide[f"{path} at {width} px"] = scroll_width
        finally:
            context.close()
    said = [f"{where}: {', '.join(words)}" for where, words in broken.items()]
    said += [f"{where}: the page is {scroll_width} px wide" for where, scroll_width in wide.items()]
    assert not said, "\n".join(said)


def test_the_check_sees_a_broken_word(served, chromium):
    """The measure finds a word that a too narrow column does split."""
    base, secret, _ = served
    context = chromium.new_context(viewport={"width": 1280, "height": 900},
                                   extra_http_headers={"Authorization": f"Bearer {secret}"})
    try:
        page = context.new_page()
        page.goto(f"{base}/")
        page.evaluate("""() => { const cell = document.querySelector("#schedule-table td");
                                 cell.innerHTML = "succeeded"; cell.style.display = "block";
                                 cell.style.width = "3em"; cell.style.overflowWrap = "anywhere"; }""")
        assert "td: succeeded" in page.evaluate(BROKEN_WORDS)
    finally:
        context.close()
