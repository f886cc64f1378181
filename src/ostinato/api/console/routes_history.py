"""The console's history: ``/dashboard/history`` (charts) and ``GET /api/v1/history`` (the samples as JSON).

Both read the samples the history pass keeps (``services.history``, ``domain.history``) at the
resolution of the window asked for (``1h``: every minute, ``6h`` and ``24h``: every five minutes,
``7d``: every hour, ``30d``: every six hours). The page draws, per visit type, its fresh share, lag (median and 90th percentile), queue depth,
visits per hour and eventful share; per schedule and per task type, its runs and failures, its
lateness and its durations (mean and longest). Every visit type is shown; of the schedules and the
task types, the :data:`SERIES_SHOWN` with the most failures, then the latest, then the most runs
(``?series=`` shows one, and each series links to its page).

The charts share one time axis: the window's, or, when the window holds no sample before some
moment (a history begun in the last hour, a pass started lately), from its first sample (at least
:data:`AXIS_STEPS` samples' span before now), so that a young history spreads across the charts
instead of sitting in their last pixels. The page says where the axis starts, and why.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import quote

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import HTMLResponse, Response
from fastapi.security import HTTPAuthorizationCredentials

from ...domain.errors import ValidationError
from ...domain.history import SERIES_KINDS, WINDOWS, HistorySample, Window, mean_duration, window
from ...domain.limits import check_stored_text
from ..request_handling import READ, ApiContext, bearer, context, iso
from .render import HEADERS, templates
from .render_charts import Chart, Line, chart_svg, line_values
from .signin import signed_in

#: schedules and task types drawn at once (visit types are all drawn)
SERIES_SHOWN = 30
#: the shortest axis of a young history, in samples
AXIS_STEPS = 2

router = APIRouter(include_in_schema=False)
api_router = APIRouter(prefix="/api/v1", tags=["history"])


def _percent(value: float) -> str:
    return f"{100 * value:.0f} %"


def _count(value: float) -> str:
    return f"{value:,.0f}" if value >= 10 or value == int(value) else f"{value:.1f}"


def _seconds(value: float) -> str:
    """A duration short enough for an axis: ``45 s``, ``12 min``, ``3.5 h``, ``12 d``."""
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if value >= 2 * size:
            amount = value / size
            return f"{amount:.0f} {unit}" if amount >= 10 or unit == "min" else f"{amount:.1f} {unit}"
    return f"{value:.0f} s"


def _line(samples: Sequence[HistorySample], label: str, figure: str) -> Line:
    return Line(label, [(s.at, float(s.figures[figure])) for s in samples if figure in s.figures])


def _mean_durations(samples: Sequence[HistorySample]) -> Line:
    points = [(s.at, mean) for s in samples if (mean := mean_duration(s.figures)) is not None]
    return Line("mean", points)


def charts_of(series: str, samples: Sequence[HistorySample]) -> list[Chart]:
    """The charts of one series (module docstring)."""
    if series.startswith("visit_type:"):
        return [Chart("Fresh share: enabled origins without pending changes", _percent,
                      [_line(samples, "fresh", "fresh")], floor_top=1.0),
                Chart("Lag of the origins with pending changes", _seconds,
                      [_line(samples, "median", "lag_p50"), _line(samples, "90th percentile", "lag_p90")]),
                Chart("Queue depth: visits in flight", _count, [_line(samples, "in flight", "in_flight")]),
                Chart("Visits in the hour before each sample", _count, [_line(samples, "visits", "visits_per_hour")]),
                Chart("Eventful share of the successful visits", _percent,
                      [_line(samples, "eventful", "eventful_share")], floor_top=1.0)]
    return [Chart("Runs ended per interval, and the failures among them", _count,
                  [_line(samples, "runs", "runs"), _line(samples, "failures", "failures")], bars=True),
            Chart("Lateness: past its latest start" if series.startswith("schedule:") else
                  "Lateness: its oldest ready task's wait", _seconds, [_line(samples, "late", "late")]),
            Chart("Run durations", _seconds, [_mean_durations(samples), _line(samples, "longest", "duration_max")])]


@dataclass(frozen=True, slots=True)
class SeriesView:
    series: str
    kind: str
    name: str
    link: str
    charts: list[Chart]
    failures: float
    late: float
    runs: float


_LINKS = {"visit_type": "/dashboard/visit-types/", "schedule": "/dashboard/schedules/",
          "task_type": "/dashboard/task-types/"}


def _view(series: str, samples: Sequence[HistorySample]) -> SeriesView:
    kind, _, name = series.partition(":")
    total = lambda figure: sum(float(s.figures.get(figure, 0)) for s in samples)
    late = max((float(s.figures.get("late", 0)) for s in samples), default=0.0)
    return SeriesView(series, kind, name, _LINKS[kind] + quote(name, safe=""), charts_of(series, samples),
                      total("failures"), late, total("runs"))


def axis_start(since: datetime, until: datetime, step: timedelta, grouped: Mapping[str, Sequence[HistorySample]]) -> datetime:
    """Where the charts' time axis starts (module docstring): ``since``, or the first sample when the
    window holds none in its first step."""
    first = min((samples[0].at for samples in grouped.values() if samples), default=None)
    if first is None or first <= since + step:
        return since
    return max(since, min(first, until - AXIS_STEPS * step))


def _checked_series(series: str | None) -> str | None:
    if series is None:
        return None
    check_stored_text(series, "series")
    kind, sep, name = series.partition(":")
    if not sep or kind not in SERIES_KINDS or not name:
        raise ValidationError("series", f"kind:name, the kind one of {', '.join(SERIES_KINDS)}", series)
    return series


def _read(ctx: ApiContext, shown: Window, series: str | None) -> tuple[datetime, datetime, dict[str, list]]:
    until = ctx.clock.now()
    since = until - shown.span
    samples = ctx.store.read_history(shown.seconds, since, until, series=None if series is None else [series])
    grouped: dict[str, list[HistorySample]] = {}
    for sample in samples:
        grouped.setdefault(sample.series, []).append(sample)
    return since, until, grouped


@router.get("/dashboard/history", response_class=HTMLResponse)
def history_page(request: Request, window_name: str = Query("24h", alias="window"), series: str | None = Query(None),
                 credentials: HTTPAuthorizationCredentials | None = Depends(bearer),
                 ctx: ApiContext = Depends(context)) -> Response:
    token = signed_in(request, credentials)
    if isinstance(token, Response):
        return token
    try:
        shown, chosen = window(window_name), _checked_series(series)
    except ValidationError as refused:
        return templates.TemplateResponse(request, "history.html", {"error": str(refused), "token_name": token["name"]},
                                          status_code=400, headers=HEADERS)
    since, until, grouped = _read(ctx, shown, chosen)
    drawn_from = axis_start(since, until, shown.step, grouped)
    views = [_view(name, samples) for name, samples in sorted(grouped.items())]
    ranked = lambda kind: sorted((v for v in views if v.kind == kind),
                                 key=lambda v: (-v.failures, -v.late, -v.runs, v.name))
    sections = [("visit_type", "Visit types", [v for v in views if v.kind == "visit_type"]),
                ("schedule", "Schedules", ranked("schedule")[:SERIES_SHOWN]),
                ("task_type", "Task types", ranked("task_type")[:SERIES_SHOWN])]
    hidden = {kind: sum(v.kind == kind for v in views) - len(shown) for kind, _, shown in sections}
    return templates.TemplateResponse(request, "history.html", {
        "error": None, "token_name": token["name"], "window": shown.name, "series": chosen,
        "windows": list(WINDOWS), "sections": sections, "hidden": hidden, "since": since, "until": until,
        "step": shown.step, "chart_svg": chart_svg, "line_values": line_values, "now": until, "drawn_from": drawn_from,
    }, headers=HEADERS)


@api_router.get("/history", dependencies=READ, summary="The console's samples over a window (1h, 6h, 24h, 7d or 30d)")
def history_samples(window_name: str = Query("24h", alias="window", description=", ".join(WINDOWS)),
                    series: str | None = Query(None, description="One series, e.g. visit_type:git, schedule:bills"),
                    ctx: ApiContext = Depends(context)) -> dict[str, Any]:
    """Each series' samples, oldest first: its start (``at``) and its figures (see the history's reference)."""
    shown = window(window_name)
    since, until, grouped = _read(ctx, shown, _checked_series(series))
    return {"window": shown.name, "resolution": shown.seconds, "since": iso(since), "until": iso(until),
            "series": {name: [{"at": iso(s.at), **s.figures} for s in samples] for name, samples in grouped.items()}}
