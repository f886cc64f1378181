"""The dashboard's lag picture: a visit type's lag histogram as an inline SVG bar chart.

Horizontal bars, one row per bucket (``<1h`` … ``>=730d``), each labelled with its
bucket and its count in text, filled with a hatch pattern in the text's colour
(``currentColor``): it reads without colour, at any width (a ``viewBox`` scaled
to the column), and to a screen reader (``role="img"``, ``<title>``, ``<desc>``
and an ``aria-label`` listing the buckets).
"""

from __future__ import annotations

from collections.abc import Sequence

from markupsafe import Markup, escape

from ...domain.origin_metrics import LagBar

WIDTH = 360
LABEL_X = 52        # right edge of the bucket labels
BAR_X = 58          # the y axis; bars start here
BAR_SPAN = 240      # the longest bar
ROW = 18
TOP = 20
BAR_HEIGHT = 12


def lag_svg(visit_type: str, bars: Sequence[LagBar], index: int) -> Markup:
    """The picture of one visit type's histogram; ``index`` keeps its pattern's id unique on the page."""
    total = sum(b.count for b in bars)
    top = max((b.count for b in bars), default=0)
    height = TOP + ROW * len(bars) + 34
    axis_y = TOP + ROW * len(bars) + 2
    pattern = f"hatch-{index}"
    listed = ", ".join(f"{b.label}: {b.count}" for b in bars if b.count) or "none"
    label = f"Lag of the {total} {visit_type} origins with pending changes, by bucket: {listed}"
    parts = [
        f'<svg class="lag" role="img" viewBox="0 0 {WIDTH} {height}" width="100%" preserveAspectRatio="xMinYMin meet" '
        f'aria-label="{escape(label)}" data-visit-type="{escape(visit_type)}" xmlns="http://www.w3.org/2000/svg">',
        f"<title>{escape(f'Lag histogram of {visit_type}')}</title>",
        f"<desc>{escape(label)}</desc>",
        f'<defs><pattern id="{pattern}" patternUnits="userSpaceOnUse" width="5" height="5" patternTransform="rotate(45)">'
        '<line x1="0" y1="0" x2="0" y2="5" stroke="currentColor" stroke-width="2.5"/></pattern></defs>',
        f'<text x="{LABEL_X}" y="12" text-anchor="end" class="axis-title">lag</text>',
        f'<text x="{BAR_X + 4}" y="12" class="axis-title">origins with pending changes</text>',
    ]
    for row, bar in enumerate(bars):
        y = TOP + row * ROW
        width = 0.0 if top == 0 else BAR_SPAN * bar.count / top
        if bar.count and width < 2:
            width = 2.0  # a bucket that is not empty always shows
        parts.append(f'<text x="{LABEL_X}" y="{y + BAR_HEIGHT - 2}" text-anchor="end">{escape(bar.label)}</text>')
        if bar.count:
            parts.append(f'<rect class="bar" x="{BAR_X}" y="{y}" width="{width:.1f}" height="{BAR_HEIGHT}" '
                         f'fill="url(#{pattern})" stroke="currentColor" data-bucket="{escape(bar.label)}" '
                         f'data-count="{bar.count}"><title>{escape(bar.label)}: {bar.count}</title></rect>')
        parts.append(f'<text x="{BAR_X + width + 4:.1f}" y="{y + BAR_HEIGHT - 2}" class="count">{bar.count}</text>')
    parts += [
        f'<line x1="{BAR_X}" y1="{TOP - 4}" x2="{BAR_X}" y2="{axis_y}" stroke="currentColor"/>',
        f'<line x1="{BAR_X}" y1="{axis_y}" x2="{BAR_X + BAR_SPAN}" y2="{axis_y}" stroke="currentColor"/>',
        f'<line x1="{BAR_X + BAR_SPAN}" y1="{axis_y}" x2="{BAR_X + BAR_SPAN}" y2="{axis_y + 4}" stroke="currentColor"/>',
        f'<text x="{BAR_X}" y="{axis_y + 14}" text-anchor="middle">0</text>',
        f'<text x="{BAR_X + BAR_SPAN}" y="{axis_y + 14}" text-anchor="end">{top}</text>',
        f'<text x="{BAR_X + BAR_SPAN / 2:.0f}" y="{axis_y + 28}" text-anchor="middle" class="axis-title">'
        'origins (bar length, linear)</text>',
        "</svg>",
    ]
    return Markup("".join(parts))
