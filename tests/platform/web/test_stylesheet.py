"""The stylesheet's structure: every section starts at the top level.

Each feature's rules are one section of ``app.css`` (``/* --- name ... --- */``); a merge that
drops a media query's closing brace nests every later section inside that query, which breaks
those pages only at other widths.  Comments are left out before counting: a brace in one is
not a rule's.
"""

from __future__ import annotations

import re
from pathlib import Path

import cow006_platform.web as web

CSS = Path(web.__file__).parent / "static" / "app.css"


def test_every_section_of_the_stylesheet_starts_at_the_top_level() -> None:
    text = CSS.read_text(encoding="utf-8")
    depth = 0
    sections = 0
    for part in re.split(r"(/\*.*?\*/)", text, flags=re.S):
        if part.startswith("/*"):
            if part.startswith("/* ---"):
                sections += 1
                assert depth == 0, f"section {part[:60]!r} opens inside a block"
            continue
        for ch in part:
            depth += {"{": 1, "}": -1}.get(ch, 0)
            assert depth >= 0, "a closing brace without its opening one"
    assert sections >= 5
    assert depth == 0, "the stylesheet ends inside a block"
