"""``cow006 logs --ladder L --out DIR``: a ladder's finished matches downloaded as a dataset.

Pages of ``GET /api/ladders/{id}/logs`` (JSON lines) are written into DIR as one
``matches/{match_id}.json`` per match (the ``cow006-match-1`` log, ready for ``cow006
verify``) and one line per match appended to ``DIR/index.jsonl`` (the arena's index entry:
``match_id``, ``file``, ``seed``, ``rated``, ``finished_at``, ``participants``, ``scores``,
``ranks``; the layout of ``cow006 admin export``), the log files first, so the index never
names a file that is not there.  The download resumes by itself: without ``since`` it goes
on after the highest ``match_id`` the index holds.  A 429 is waited out (its
``Retry-After``), a few times.

What the arena sends is checked before it touches the disk: a match id is a positive
integer (it names a file), and a line that is not an object with a log is refused.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import _client as client

INDEX = "index.jsonl"
MAX_ID = 2**31 - 1
RETRIES = 5  # 429s waited out in a row before giving up
MAX_WAIT = 120.0  # seconds: a longer Retry-After is not waited for


@dataclass
class Downloaded:
    """What one download did: logs written, the first and last match ids, pages asked for."""

    count: int = 0
    first: int | None = None
    last: int | None = None
    pages: int = 0
    since: int = 0


def resume_point(folder: Path) -> int:
    """The highest match id ``folder``'s index holds (0 for none)."""
    index = folder / INDEX
    if not index.exists():
        return 0
    best = 0
    with index.open(encoding="utf-8") as f:
        for line in f:
            try:
                entry = json.loads(line)
            except ValueError:
                continue  # a line cut short by an interrupted run: its match comes again
            mid = entry.get("match_id") if isinstance(entry, dict) else None
            if type(mid) is int and 0 < mid <= MAX_ID:
                best = max(best, mid)
    return best


_DECODER = json.JSONDecoder()
_LOG_KEY = ', "log": '


def _split(line: str) -> tuple[dict[str, Any], str] | None:
    """The line as the arena writes it (``exports``: the head's keys, then the log last),
    as (the entry, the log's own text), or None if it is written otherwise.

    The log's text is kept as it came, so writing it costs no second serialization."""
    head_end = line.find(_LOG_KEY)
    if head_end < 0 or not line.endswith("}"):
        return None
    try:
        head = json.loads(line[:head_end] + "}")
        log, end = _DECODER.raw_decode(line, head_end + len(_LOG_KEY))
    except ValueError:
        return None
    if end != len(line) - 1 or not isinstance(head, dict) or "log" in head:
        return None
    head["log"] = log
    return head, line[head_end + len(_LOG_KEY) : end]


def parse_page(body: bytes) -> Iterator[tuple[int, dict[str, Any], dict[str, Any], str]]:
    """(match id, log, its index entry, the log as JSON text) of each line of an export
    page; ClientError if a line is not what the arena promises.  The entry's ``file`` is
    where this client writes the log, whatever the arena said."""
    for n, raw in enumerate(body.splitlines(), 1):
        try:
            line = raw.decode("utf-8").strip()
        except UnicodeDecodeError:
            raise client.ClientError(f"line {n} of the export is not UTF-8") from None
        if not line:
            continue
        split = _split(line)
        if split is not None:
            entry, text = split
        else:
            try:
                entry = json.loads(line)
            except ValueError:
                raise client.ClientError(f"line {n} of the export is not JSON") from None
            text = ""
        mid = entry.get("match_id") if isinstance(entry, dict) else None
        if type(mid) is not int or not 0 < mid <= MAX_ID:
            raise client.ClientError(f"line {n} of the export has no valid match_id")
        log = entry.get("log")
        if not isinstance(log, dict):
            raise client.ClientError(f"line {n} of the export (match {mid}) has no log")
        text = text or json.dumps(log, separators=(",", ":"))
        index_entry = {k: v for k, v in entry.items() if k != "log"}
        index_entry["file"] = file_of(mid)
        yield mid, log, index_entry, text


def file_of(match_id: int) -> str:
    return f"matches/{match_id}.json"


def _page(arena: client.Client, ladder_id: int, since: int) -> tuple[bytes, int, bool]:
    path = f"/ladders/{ladder_id}/logs"
    for attempt in range(RETRIES + 1):
        try:
            _, headers, body = arena.raw(
                "GET", path, params={"since": since, "format": "jsonl"}, accept="application/jsonl"
            )
        except client.ClientError as exc:
            wait = exc.retry_after
            if exc.status != 429 or wait is None or wait > MAX_WAIT or attempt == RETRIES:
                raise
            time.sleep(wait)
            continue
        next_text = str(headers.get("Cow006-Next-Since") or "")
        if not next_text.isdigit() or int(next_text) < since:
            raise client.ClientError(f"{arena.url} sent no valid Cow006-Next-Since header")
        more = str(headers.get("Cow006-More") or "").lower() == "true"
        return body, int(next_text), more
    raise AssertionError("unreachable")  # the loop returns or raises


def download(
    arena: client.Client,
    ladder_id: int,
    folder: Path,
    since: int | None = None,
    progress: Callable[[Downloaded], None] | None = None,
) -> Downloaded:
    """Download the ladder's finished matches after ``since`` (default: where ``folder``'s
    index ends) into ``folder``, page after page until the arena has no more."""
    (folder / "matches").mkdir(parents=True, exist_ok=True)
    start = resume_point(folder) if since is None else since
    done = Downloaded(since=start)
    cursor = start
    # The next page is asked for while this one is written: the arena's time and ours overlap.
    with (
        (folder / INDEX).open("a", encoding="utf-8") as index,
        ThreadPoolExecutor(1, thread_name_prefix="cow006-export") as pool,
    ):
        ahead = pool.submit(_page, arena, ladder_id, cursor)
        while True:
            body, next_since, more = ahead.result()
            last_page = not more or next_since == cursor
            if not last_page:
                ahead = pool.submit(_page, arena, ladder_id, next_since)
            done.pages += 1
            lines = []
            for mid, _log, entry, text in parse_page(body):
                (folder / entry["file"]).write_text(text + "\n", encoding="utf-8")
                lines.append(json.dumps(entry, separators=(",", ":")) + "\n")
                done.count += 1
                done.first = mid if done.first is None else done.first
                done.last = mid
            index.writelines(lines)
            index.flush()
            os.fsync(index.fileno())
            if progress is not None:
                progress(done)
            if last_page:
                return done
            cursor = next_since
