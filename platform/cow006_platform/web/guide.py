"""The bot guide as a page (``/guide``): docs/bot-guide.md, rendered by a small Markdown subset.

The guide ships inside the package (``web/guide/bot-guide.md``, a copy of docs/bot-guide.md that
``make docs`` refreshes; a test fails when the two differ), so an installed arena serves it too.
The subset is what the guide uses: ``#`` headings, paragraphs, fenced code, ``-`` and ``1.``
lists, pipe tables, and inline code, bold and links.  Every character of the source is escaped
before any markup is added; a link's target must be a path or an http(s) URL.
"""

from __future__ import annotations

import functools
import re
from html import escape
from pathlib import Path

from markupsafe import Markup

GUIDE = Path(__file__).parent / "guide" / "bot-guide.md"

_INLINE = re.compile(r"`([^`]+)`|\*\*([^*]+)\*\*|\[([^\]]+)\]\(([^)\s]+)\)")
_HEADING = re.compile(r"^(#{1,4})\s+(.*)$")
_ITEM = re.compile(r"^(\s*)(?:[-*]|\d+\.)\s+(.*)$")


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "section"


def _href(target: str) -> str | None:
    if target.startswith(("http://", "https://", "#")):
        return target
    if target.endswith(".md"):  # another doc of the repository: not served, left as text
        return None
    return target if target.startswith("/") else None


def inline(text: str) -> str:
    """One line's inline markup: code spans, bold, links; everything else escaped."""
    out: list[str] = []
    last = 0
    for m in _INLINE.finditer(text):
        out.append(escape(text[last : m.start()]))
        code, bold, label, target = m.groups()
        if code is not None:
            out.append(f"<code>{escape(code)}</code>")
        elif bold is not None:
            out.append(f"<strong>{escape(bold)}</strong>")
        else:
            href = _href(target)
            shown = inline(label)
            out.append(f'<a href="{escape(href)}">{shown}</a>' if href else shown)
        last = m.end()
    out.append(escape(text[last:]))
    return "".join(out)


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def render(source: str) -> tuple[str, Markup]:
    """The guide's title (its first heading) and its body as HTML (the first heading left
    out: the page has its own h1)."""
    lines = source.splitlines()
    html: list[str] = []
    title = "The bot guide"
    paragraph: list[str] = []
    i = 0

    def flush() -> None:
        if paragraph:
            html.append(f"<p>{inline(' '.join(paragraph))}</p>")
            paragraph.clear()

    while i < len(lines):
        line = lines[i]
        if line.startswith("```"):
            flush()
            i += 1
            code = []
            while i < len(lines) and not lines[i].startswith("```"):
                code.append(lines[i])
                i += 1
            # Focusable: a wide block scrolls sideways on a phone, and keys must reach it.
            html.append(f'<pre tabindex="0"><code>{escape(chr(10).join(code))}</code></pre>')
        elif m := _HEADING.match(line):
            flush()
            level = len(m.group(1))
            if level == 1 and title == "The bot guide" and not html:
                title = m.group(2).strip()
            else:
                text = m.group(2).strip()
                level = max(2, level)
                html.append(f'<h{level} id="{slug(text)}">{inline(text)}</h{level}>')
        elif line.lstrip().startswith("|") and i + 1 < len(lines) and "---" in lines[i + 1]:
            flush()
            head = "".join(f"<th scope=col>{inline(c)}</th>" for c in _cells(line))
            rows = []
            i += 2
            while i < len(lines) and lines[i].lstrip().startswith("|"):
                rows.append("".join(f"<td>{inline(c)}</td>" for c in _cells(lines[i])))
                i += 1
            body = "".join(f"<tr>{r}</tr>" for r in rows)
            html.append(
                f'<div class="scroll"><table><thead><tr>{head}</tr></thead>'
                f"<tbody>{body}</tbody></table></div>"
            )
            continue
        elif m := _ITEM.match(line):
            flush()
            ordered = line.lstrip()[0].isdigit()
            items = []
            while i < len(lines) and (m := _ITEM.match(lines[i])):
                text = [m.group(2)]
                i += 1
                # A list item's continuation lines are indented.
                while i < len(lines) and lines[i].startswith("  ") and not _ITEM.match(lines[i]):
                    text.append(lines[i].strip())
                    i += 1
                items.append(f"<li>{inline(' '.join(text))}</li>")
            tag = "ol" if ordered else "ul"
            html.append(f"<{tag}>{''.join(items)}</{tag}>")
            continue
        elif not line.strip():
            flush()
        else:
            paragraph.append(line.strip())
        i += 1
    flush()
    # Markup of text escaped above, piece by piece.
    return title, Markup("\n".join(html))


@functools.cache
def page() -> tuple[str, Markup]:
    """The packaged guide, rendered once per process."""
    return render(GUIDE.read_text(encoding="utf-8"))
