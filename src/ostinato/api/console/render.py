"""The console's templates: the Jinja environment its pages are rendered with (the pages and their
style sheets in ``templates/``, beside this module), the headers every page is served with, and the
formatting the templates share (durations, times relative to now, counts, percentages).

Each page is server-rendered, with no script at all: it is served with ``Cache-Control: no-store``
and a content security policy that allows no script, nor any style but the style sheets this server
serves (``/dashboard/static/*.css``, :data:`STYLE_SHEETS`): no ``style`` element or attribute is
obeyed, so a text slipped into a page cannot restyle it.

The modules that give the templates a function of their own add it to :data:`templates` when they
are imported: the links of the drill-down pages (:mod:`.routes_drill`), the run grids
(:mod:`.gather_grid`), the admin's forms and the audit trail (:mod:`.actions`).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

from fastapi.templating import Jinja2Templates

from ...domain.run_outcomes import outcome_of
from ..read_source import read_note
from .gather_main import STATE_SYMBOL
from .render_lag import lag_svg

#: the main page refreshes itself this often
REFRESH_SECONDS = 30
HEADERS = {
    "Cache-Control": "no-store",
    "Content-Security-Policy": "default-src 'none'; style-src 'self'; form-action 'self'; "
                               "frame-ancestors 'none'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",  # the admin forms' Origin is this site's (no-referrer: null)
}
TEMPLATES = Path(__file__).parent / "templates"
#: the style sheets the pages link, ``/dashboard/static/NAME`` (in templates/, beside the pages)
STYLE_SHEETS = ("dashboard.css", "drill.css", "actions.css")

templates = Jinja2Templates(directory=str(TEMPLATES))


def human_duration(span: timedelta | None) -> str:
    """``45 s``, ``12 min``, ``3 h 5 min``, ``2 d 4 h``, ``3.2 y``; an empty string for None."""
    if span is None:
        return ""
    seconds = abs(span.total_seconds())
    if seconds < 60:
        return f"{seconds:.0f} s"
    minutes = int(seconds // 60)
    if minutes < 60:
        return f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    days, hours = divmod(hours, 24)
    if days < 730:
        return f"{days} d {hours} h" if hours else f"{days} d"
    return f"{days / 365.25:.1f} y"


def relative(moment: datetime | None, now: datetime) -> str:
    """``12 min ago`` or ``in 3 h``; ``never`` for None."""
    if moment is None:
        return "never"
    if abs((moment - now).total_seconds()) < 1:
        return "now"
    return f"{human_duration(now - moment)} ago" if moment <= now else f"in {human_duration(moment - now)}"


def count(value: int | None, cap: int | None = None) -> str:
    """``12,345``; ``≥10,000`` when a capped count reached its cap."""
    if value is None:
        return "–"
    text = f"{value:,}"
    return f"≥{text}" if cap is not None and value >= cap else text


def percent(ratio: float | None) -> str:
    return "–" if ratio is None else f"{100 * ratio:.0f} %"


templates.env.filters.update(duration=human_duration, count=count, percent=percent)
templates.env.globals.update(relative=relative, lag_svg=lag_svg, read_note=read_note, STATE_SYMBOL=STATE_SYMBOL,
                             REFRESH_SECONDS=REFRESH_SECONDS, outcome=outcome_of)
