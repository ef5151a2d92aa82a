"""WCAG AA contrast of the stylesheet's colours, computed from app.css itself.

Text needs 4.5:1 against what it sits on, a focus indicator 3:1 (WCAG 2.1, 1.4.3 and
1.4.11).  The colours are read from the CSS (custom properties resolved), so changing a colour
there is checked here without touching the test.
"""

from __future__ import annotations

import re

import pytest

from cow006_platform.web.routes import STATIC

CSS = (STATIC / "app.css").read_text(encoding="utf-8")


def rules(css: str) -> dict[str, dict[str, str]]:
    """Every selector's declarations (a selector list gives each of its selectors the rule;
    later rules win, as in the cascade for equal specificity; @media blocks are left out)."""
    css = re.sub(r"/\*.*?\*/", "", css, flags=re.S)
    css = re.sub(r"@media[^{]*\{(?:[^{}]*\{[^{}]*\})*[^{}]*\}", "", css)
    out: dict[str, dict[str, str]] = {}
    for selectors, body in re.findall(r"([^{}]+)\{([^{}]*)\}", css):
        decls = {}
        for decl in body.split(";"):
            if ":" in decl:
                name, value = decl.split(":", 1)
                decls[name.strip()] = value.strip()
        for selector in selectors.split(","):
            out.setdefault(" ".join(selector.split()), {}).update(decls)
    return out


RULES = rules(CSS)
VARS = {k: v for k, v in RULES[":root"].items() if k.startswith("--")}


def colour(value: str) -> str:
    """The hex colour in a declaration (``var(--x)`` resolved)."""
    value = re.sub(r"var\((--[\w-]+)\)", lambda m: VARS[m.group(1)], value)
    found = re.search(r"#[0-9a-fA-F]{6}\b|#[0-9a-fA-F]{3}\b", value)
    assert found, value
    hexa = found.group(0)[1:]
    if len(hexa) == 3:
        hexa = "".join(c * 2 for c in hexa)
    return "#" + hexa.lower()


def luminance(hexa: str) -> float:
    channels = [int(hexa[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def ratio(a: str, b: str) -> float:
    hi, lo = sorted((luminance(a), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def test_the_ratio_formula() -> None:
    assert ratio("#000000", "#ffffff") == pytest.approx(21.0)
    assert ratio("#777777", "#ffffff") == pytest.approx(4.48, abs=0.01)
    assert colour("1px solid var(--link)") == "#1b5fa6" and colour("#FFF") == "#ffffff"


# The light backgrounds a focusable control sits on: the page, panels, highlighted rows.
LIGHT = ["--bg", "--panel"]
LIGHT_LITERAL = ["#fbfaf7", "#e3eefb", "#fbe4e1", "#fff8e1", "#e8f1fb"]


def test_the_focus_ring_stands_out_3_to_1_everywhere() -> None:
    ring = colour(RULES["a:focus-visible"]["outline"])
    for selector in ("button:focus-visible", "input:focus-visible", "[tabindex]:focus-visible"):
        assert colour(RULES[selector]["outline"]) == ring
    for background in [VARS[v] for v in LIGHT] + LIGHT_LITERAL:
        assert ratio(ring, background) >= 3.0, (ring, background)
    # In the dark header, its own colour.
    header = colour(RULES["header.site"]["background"])
    for selector in ("header.site a:focus-visible", "header.site button:focus-visible"):
        assert ratio(colour(RULES[selector]["outline-color"]), header) >= 3.0


def card_backgrounds() -> dict[str, str]:
    out = {"card": colour(RULES[".card"]["background"])}
    for heads in (2, 3, 5, 7):
        out[f"h{heads}"] = colour(RULES[f".card.h{heads}"]["background"])
    out["placed"] = colour(RULES[".reveal.done .card"]["background"])
    return out


def test_card_numbers_and_placed_cards_are_4_5_to_1() -> None:
    ink = colour(VARS["--ink"])
    for name, background in card_backgrounds().items():
        assert ratio(ink, background) >= 4.5, (name, background)
    # Nothing fades a card's text with opacity (0.4 of the ink was 1.8:1).
    for selector, decls in RULES.items():
        if ".card" in selector or ".reveal" in selector:
            assert float(decls.get("opacity", "1")) == 1.0, selector
    # The heads on a card are graphics: 3:1 on every card colour.
    dots = colour(RULES[".card .heads i"]["background"])
    for name, background in card_backgrounds().items():
        assert ratio(dots, background) >= 3.0, (name, background)


def test_body_text_and_links_are_4_5_to_1() -> None:
    for text in ("--ink", "--muted", "--link", "--bad", "--ok", "--warn"):
        for background in LIGHT:
            assert ratio(colour(VARS[text]), VARS[background]) >= 4.5, (text, background)


def test_the_replay_s_heads_fault_marks_and_winners_are_4_5_to_1() -> None:
    ink, muted, bad = (colour(VARS[v]) for v in ("--ink", "--muted", "--bad"))
    full = colour(RULES[".row-wrap.full"]["background"])
    rows = [colour(RULES[".row-wrap"]["background"]), colour(RULES[".row-wrap.took"]["background"])]
    for background in [*rows, full]:  # a row's heads, in every state of its row
        assert ratio(colour(RULES[".row-heads"]["color"]), background) >= 4.5, background
        assert ratio(colour(RULES[".row-heads b"]["color"]), background) >= 4.5, background
    assert colour(RULES[".row-heads"]["color"]) == muted
    assert ratio(colour(RULES[".row-wrap.full .row-heads::after"]["color"]), full) >= 4.5
    slot = RULES[".slot.danger"]
    assert ratio(colour(slot["color"]), colour(slot["background"])) >= 4.5
    # A fault's mark, on the panel and on the players' highlighted rows.
    mark = colour(RULES[".fault-mark"]["color"])
    assert mark == bad
    for background in (VARS["--panel"], "#e3eefb", "#fbe4e1"):
        assert ratio(mark, background) >= 4.5, background
    assert ratio(ink, colour(RULES[".outcome"]["background"])) >= 4.5
