"""The bot guide page (``cow006_platform.web.guide``): the packaged copy, rendered safely."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path
from typing import Any

from helpers.api import Api
from helpers.web import parse_html

from cow006 import bots, play_match
from cow006_platform.web import guide, kit

ROOT = Path(__file__).resolve().parents[3]


def test_the_packaged_guide_is_docs_bot_guide() -> None:
    docs = (ROOT / "docs" / "bot-guide.md").read_text(encoding="utf-8")
    assert guide.GUIDE.read_text(encoding="utf-8") == docs, "stale copy: run `make docs`"


def test_the_guide_page_and_the_links_to_it(api: Api) -> None:
    client: Any = api.client
    r = client.get("/guide")
    assert r.status_code == 200
    doc = parse_html(r.text)
    assert doc.find("h1").text() == "Writing a bot"
    assert doc.find("h2", id="the-smallest-bot")
    assert "class Bot(Agent):" in doc.find("pre").text()
    assert doc.find("table").find("th").text() == "attribute"
    for path in ("/upload", "/login", "/nope"):
        links = parse_html(client.get(path).text).find("main").find_all("a", href="/guide")
        assert links, path


def test_markup_in_the_source_is_text() -> None:
    title, body = guide.render(
        "# T <b>\n\nHi <script>alert(1)</script> [x](javascript:alert(1)) [y](/ok) "
        "[z](other.md) **b<i>**\n\n| a | b |\n|---|---|\n| `<c>` | d |\n\n- one\n  two\n- <x>\n"
    )
    assert title == "T <b>"
    html = str(body)
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert "javascript:" not in html.replace("&lt;", "")  # the link is dropped, its text kept
    assert '<a href="/ok">y</a>' in html and ">z<" not in html and "z" in html
    assert "<strong>b&lt;i&gt;</strong>" in html
    assert "<td><code>&lt;c&gt;</code></td>" in html
    assert "<li>one two</li>" in html and "<li>&lt;x&gt;</li>" in html


def test_the_packaged_starter_kit_is_examples_starters_python() -> None:
    source = ROOT / "examples" / "starters" / "python"
    for name in kit.FILES:
        packaged = (kit.STARTER / name).read_bytes()
        assert packaged == (source / name).read_bytes(), f"stale {name}: run `make docs`"
    assert sorted(p.name for p in source.iterdir()) == sorted(kit.FILES)


def test_the_starter_kit_downloads_from_the_guide_and_the_upload_page(api: Api) -> None:
    client: Any = api.client
    for path in ("/guide", "/upload"):
        links = parse_html(client.get(path).text).find("main").find_all("a", href=kit.STARTER_URL)
        assert links and "download" in links[0].attrs, path
    r = client.get(kit.STARTER_URL)
    assert r.status_code == 200 and r.headers["content-type"] == "application/zip"
    assert r.headers["content-disposition"] == 'attachment; filename="cow006-python-starter.zip"'
    with zipfile.ZipFile(io.BytesIO(r.content)) as z:
        names = z.namelist()
        assert names == ["cow006-python-starter/bot.py", "cow006-python-starter/README.md"]
        readme = z.read("cow006-python-starter/README.md").decode()
        bot = z.read("cow006-python-starter/bot.py").decode()
    assert "cow006 match bot.py builtin:greedy" in readme and "class Bot(Agent)" in bot
    assert client.get(kit.STARTER_URL).content == r.content  # the same bytes every time
    again = client.get(kit.STARTER_URL, headers={"If-None-Match": r.headers["etag"]})
    assert again.status_code == 304 and not again.content
    # The kit's bot plays: a match in-process against two built-ins.
    namespace: dict[str, Any] = {}
    exec(compile(bot, "bot.py", "exec"), namespace)
    log = play_match([namespace["Bot"](), bots.make("greedy"), bots.make("safe")], seed=1)
    assert len(log["players"]) == 3
