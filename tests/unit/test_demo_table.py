"""The demo's live table: its title and its rows count the same sources (the forge grows as it runs)."""

from __future__ import annotations

from rich.console import Console

from ostinato.cli.demo import _table
from ostinato.sim.demo_forge import Figures


def render(table) -> str:
    console = Console(width=140, record=True, file=open("/dev/null", "w"))
    console.print(table)
    return console.export_text()


def test_the_title_says_where_the_forge_started_and_what_the_table_counts():
    text = render(_table(Figures(day=180.2, sources=4399, freshness=0.5, mean_age_days=1.0, visits=10, eventful=5,
                                 never_visited=3), "optimal", 3000))
    assert "3,000 sources at the start, 4,399 live on day 180, policy optimal" in text
    assert "live sources" in text and "4,399" in text.split("live sources", 1)[1]


def test_before_the_first_figures_the_title_says_only_the_start():
    assert "3,000 sources at the start, policy seed" in render(_table(None, "seed", 3000))
