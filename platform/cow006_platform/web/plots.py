"""Server-rendered SVG plots for the web pages (no charting library, no JavaScript).

``rating_history_svg`` draws an agent's rating in one ladder after each rated match: the
conservative rating mu - 3 sigma (what ranks it) as the main line with its markers, mu dashed,
inside a band of mu ± 3 sigma, with the version changes marked.  The SVG scales with its
container (``viewBox``) and carries a title and description for screen readers; it uses
presentation attributes only (no inline styles), so the pages' Content-Security-Policy holds.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

from markupsafe import Markup

from .. import ratings

WIDTH, HEIGHT = 480, 220
LEFT, RIGHT, TOP, BOTTOM = 44, 12, 12, 34
MAX_MARKERS = 60  # points get a marker (with a tooltip) up to this many


@dataclass(frozen=True)
class RatingPoint:
    """One rating after one match: the version playing, and mu and sigma after the match."""

    match_id: int
    version: int
    mu: float
    sigma: float


def nice_step(span: float, target: int = 5) -> float:
    """A round tick step (1, 2 or 5 times a power of ten) giving about ``target`` ticks."""
    if span <= 0 or not math.isfinite(span):
        return 1.0
    raw = span / target
    power = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 5, 10):
        if raw <= m * power:
            return m * power
    return 10 * power


def _num(value: float) -> str:
    """A coordinate with two decimals at most (short SVG, stable output)."""
    text = f"{value:.2f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


def _label(value: float, step: float) -> str:
    decimals = max(0, -math.floor(math.log10(step))) if step < 1 else 0
    return f"{value:.{decimals}f}"


def rating_history_svg(points: Sequence[RatingPoint], title: str, ident: str) -> Markup:
    """The plot of ``points`` (oldest first) as an inline ``<svg>``; ``ident`` makes its ids
    unique in the page.  An empty list gives an empty string."""
    if not points:
        return Markup("")
    n = len(points)
    uppers = [p.mu + ratings.SPREAD * p.sigma for p in points]
    lowers = [ratings.conservative(p.mu, p.sigma) for p in points]
    lo, hi = min(lowers), max(uppers)
    if hi - lo < 1e-9:
        lo, hi = lo - 1, hi + 1
    step = nice_step(hi - lo)
    lo = math.floor(lo / step) * step
    hi = math.ceil(hi / step) * step
    plot_w = WIDTH - LEFT - RIGHT
    plot_h = HEIGHT - TOP - BOTTOM

    def x(i: int) -> float:
        return LEFT + (plot_w / 2 if n == 1 else i * plot_w / (n - 1))

    def y(v: float) -> float:
        return TOP + (hi - v) * plot_h / (hi - lo)

    last = points[-1]
    desc = (
        f"{n} rated match{'es' if n != 1 else ''}; latest: mu {last.mu:.2f}, "
        f"sigma {last.sigma:.2f}, mu - 3 sigma {lowers[-1]:.2f} "
        f"(version {last.version})."
    )
    tid, did = f"{ident}-title", f"{ident}-desc"
    out = [
        f'<svg class="plot" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
        f'aria-labelledby="{tid} {did}" xmlns="http://www.w3.org/2000/svg" '
        f'font-size="13" font-family="system-ui, sans-serif">',
        f'<title id="{tid}">{escape(title)}</title>',
        f'<desc id="{did}">{escape(desc)}</desc>',
    ]
    # Horizontal grid with the y labels.
    ticks = round((hi - lo) / step)
    for k in range(ticks + 1):
        v = lo + k * step
        yy = _num(y(v))
        out.append(
            f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{yy}" y2="{yy}" stroke="#d6d9de" '
            'stroke-width="1"/>'
        )
        out.append(
            f'<text x="{LEFT - 6}" y="{yy}" text-anchor="end" dominant-baseline="middle" '
            f'fill="#555">{_label(v, step)}</text>'
        )
    # Version changes: a dashed line and the new version's number.
    for i in range(1, n):
        if points[i].version != points[i - 1].version:
            xx = _num((x(i - 1) + x(i)) / 2)
            out.append(
                f'<line class="version-change" x1="{xx}" x2="{xx}" y1="{TOP}" '
                f'y2="{HEIGHT - BOTTOM}" stroke="#8a8f98" stroke-dasharray="4 3"/>'
            )
            out.append(
                f'<text x="{xx}" y="{TOP + 10}" dx="3" fill="#555">v{points[i].version}</text>'
            )
    # The band of mu ± 3 sigma, then the mu line (dashed) and the mu - 3 sigma line on top.
    if n == 1:
        xx = _num(x(0))
        out.append(
            f'<line class="band" x1="{xx}" x2="{xx}" y1="{_num(y(uppers[0]))}" '
            f'y2="{_num(y(lowers[0]))}" stroke="#7fb0e6" stroke-width="10" '
            'stroke-opacity="0.5"/>'
        )
    else:
        edge = [f"{_num(x(i))},{_num(y(v))}" for i, v in enumerate(uppers)]
        edge += [f"{_num(x(i))},{_num(y(v))}" for i, v in reversed(list(enumerate(lowers)))]
        out.append(
            f'<polygon class="band" points="{" ".join(edge)}" fill="#7fb0e6" '
            'fill-opacity="0.35" stroke="none"/>'
        )
        line = " ".join(f"{_num(x(i))},{_num(y(p.mu))}" for i, p in enumerate(points))
        out.append(
            f'<polyline class="mu" points="{line}" fill="none" stroke="#1b5fa6" '
            'stroke-width="1.5" stroke-dasharray="5 3" stroke-linejoin="round"/>'
        )
        line = " ".join(f"{_num(x(i))},{_num(y(v))}" for i, v in enumerate(lowers))
        out.append(
            f'<polyline class="conservative" points="{line}" fill="none" stroke="#0d3d70" '
            'stroke-width="2.5" stroke-linejoin="round"/>'
        )
    if n <= MAX_MARKERS:
        for i, p in enumerate(points):
            out.append(
                f'<circle class="point" cx="{_num(x(i))}" cy="{_num(y(lowers[i]))}" r="3" '
                f'fill="#0d3d70"><title>match {p.match_id} (v{p.version}): mu - 3 sigma '
                f"{lowers[i]:.2f} (mu {p.mu:.2f}, sigma {p.sigma:.2f})</title></circle>"
            )
    # The x axis: first and last match numbers.
    base = HEIGHT - BOTTOM
    out.append(f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{base}" y2="{base}" stroke="#8a8f98"/>')
    out.append(f'<text x="{_num(x(0))}" y="{base + 14}" text-anchor="middle" fill="#555">1</text>')
    if n > 1:
        out.append(
            f'<text x="{_num(x(n - 1))}" y="{base + 14}" text-anchor="middle" '
            f'fill="#555">{n}</text>'
        )
    out.append(
        f'<text x="{LEFT + plot_w / 2:.0f}" y="{HEIGHT - 4}" text-anchor="middle" '
        'fill="#555">rated matches (line: μ − 3σ; dashed: μ; band: μ ± 3σ)</text>'
    )
    out.append("</svg>")
    return Markup("".join(out))
