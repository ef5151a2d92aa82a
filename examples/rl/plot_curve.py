"""Draw train.py's learning curve (curve.csv) as an SVG, with the standard library only.

    python examples/rl/plot_curve.py examples/rl/curve.csv docs/rl-curve.svg

Two panels over the training matches played: the win rate of the trained bot against three
``builtin:greedy`` (a shared first place counts; the dashed line is parity, 25 %), and the
heads per deal of the bot and of the greedy seats.  The shaded part is the imitation phase.
"""

from __future__ import annotations

import csv
import sys
from xml.sax.saxutils import escape

W, H = 720, 520
LEFT, RIGHT = 70, 20
PANELS = ((40, 220), (300, 480))  # (top, bottom) of each panel, in pixels


def _axes(
    out: list[str], top: int, bottom: int, x_max: float, y_lo: float, y_hi: float, ticks, label
):
    """A panel's frame, ticks and y label; returns the (x, y) -> pixel mapping."""

    def px(x: float, y: float) -> tuple[float, float]:
        return (
            LEFT + (W - LEFT - RIGHT) * x / x_max,
            bottom - (bottom - top) * (y - y_lo) / (y_hi - y_lo),
        )

    out.append(
        f'<rect x="{LEFT}" y="{top}" width="{W - LEFT - RIGHT}" height="{bottom - top}" '
        'fill="none" stroke="#444"/>'
    )
    for y, text in ticks:
        _, py = px(0, y)
        out.append(f'<line x1="{LEFT - 4}" y1="{py:.1f}" x2="{LEFT}" y2="{py:.1f}" stroke="#444"/>')
        out.append(f'<text x="{LEFT - 7}" y="{py + 4:.1f}" text-anchor="end">{text}</text>')
    mid = (top + bottom) / 2
    out.append(
        f'<text x="16" y="{mid}" transform="rotate(-90 16 {mid})" text-anchor="middle">'
        f"{escape(label)}</text>"
    )
    return px


def _line(out: list[str], points, colour: str, dash: str = "") -> None:
    path = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
    extra = f' stroke-dasharray="{dash}"' if dash else ""
    out.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"{extra}/>')


def _ticks(x_max: float) -> list[int]:
    """Round tick values from 0 to x_max: a step of 1, 2 or 5 times a power of ten."""
    step = 1
    while x_max / step > 6:
        for m in (2, 5 / 2, 2):  # 1 -> 2 -> 5 -> 10 -> 20 ...
            step = round(step * m)
            if x_max / step <= 6:
                break
    return list(range(0, int(x_max) + 1, step))


def svg(rows: list[dict[str, str]]) -> str:
    xs = [float(r["matches"]) for r in rows]
    win = [float(r["win_rate"]) for r in rows]
    bot = [float(r["bot_heads_per_deal"]) for r in rows]
    greedy = [float(r["greedy_heads_per_deal"]) for r in rows]
    x_max = max(xs) or 1.0
    imitation_end = max((float(r["matches"]) for r in rows if r["phase"] == "imitate"), default=0)
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
        f'viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="12">',
        f'<rect width="{W}" height="{H}" fill="white"/>',
    ]
    (t1, b1), (t2, b2) = PANELS
    w_hi = max(0.5, max(win) + 0.05)
    px = _axes(
        out,
        t1,
        b1,
        x_max,
        0,
        w_hi,
        [(v / 10, f"{v * 10} %") for v in range(0, 11) if v / 10 <= w_hi],
        "win rate vs 3 greedy",
    )
    if imitation_end:
        x0, _ = px(0, 0)
        x1, _ = px(imitation_end, 0)
        for top, bottom in PANELS:  # under everything else: right after the background
            out.insert(
                2,
                f'<rect x="{x0}" y="{top}" width="{x1 - x0:.1f}" height="{bottom - top}" '
                'fill="#e8eef8"/>',
            )
        out.append(
            f'<text x="{x1 + 6}" y="{t1 + 16}" fill="#557">'
            "shaded: imitation of builtin:safe; then policy gradient</text>"
        )
    _line(out, [px(0, 0.25), px(x_max, 0.25)], "#999", "6 4")
    _line(out, [px(x, y) for x, y in zip(xs, win, strict=True)], "#1f5fbf")
    h_lo = min(bot + greedy) - 1
    h_hi = max(bot + greedy) + 1
    step = 2 if h_hi - h_lo <= 16 else 5
    ticks = [(v, str(v)) for v in range(int(h_lo) + 1, int(h_hi) + 1) if v % step == 0]
    px = _axes(out, t2, b2, x_max, h_lo, h_hi, ticks, "heads per deal")
    _line(out, [px(x, y) for x, y in zip(xs, greedy, strict=True)], "#c0392b", "6 4")
    _line(out, [px(x, y) for x, y in zip(xs, bot, strict=True)], "#1f5fbf")
    for x in _ticks(x_max):
        gx, _ = px(x, h_lo)
        out.append(f'<line x1="{gx:.1f}" y1="{b2}" x2="{gx:.1f}" y2="{b2 + 4}" stroke="#444"/>')
        out.append(f'<text x="{gx:.1f}" y="{b2 + 17}" text-anchor="middle">{x:,}</text>')
    out.append(f'<text x="{W / 2}" y="{H - 6}" text-anchor="middle">training matches</text>')
    out.append(
        f'<text x="{W / 2}" y="22" text-anchor="middle" font-size="14">'
        "examples/rl: the trained bot against three builtin:greedy</text>"
    )
    legend = [("#1f5fbf", "", "trained bot"), ("#c0392b", "6 4", "greedy seats (mean)")]
    for i, (colour, dash, text) in enumerate(legend):
        y = t2 + 16 + 16 * i
        _line(out, [(W - 190, y - 4), (W - 160, y - 4)], colour, dash)
        out.append(f'<text x="{W - 154}" y="{y}">{text}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: plot_curve.py CURVE.csv OUT.svg", file=sys.stderr)
        return 2
    with open(argv[0], newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        print(f"{argv[0]} has no rows", file=sys.stderr)
        return 1
    with open(argv[1], "w") as f:
        f.write(svg(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
