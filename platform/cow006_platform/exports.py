"""Bulk export of a ladder's match logs: the bodies of ``GET /api/ladders/{id}/logs``, and
the index lines ``cow006 admin export`` writes too.

A match's index entry (``index_entry``) is ``match_id``, ``file`` (``matches/{id}.json``),
``seed``, ``rated``, ``finished_at``, ``participants`` (seat, agent, agent_id, version,
version_id, score, rank, faults) and ``scores``, ``ranks``.  A page of finished matches
(``crud.matches.ladder_logs``) becomes one of two bodies:

* ``jsonl``: one JSON object a line, the index entry with the log last, ``"log": {...}``,
  the ``cow006-match-1`` log as ``GET /api/matches/{id}/log`` gives it;
* ``tar``: ``index.jsonl`` first (the index entries), then ``matches/{id}.json`` for each log:
  the layout of ``cow006 admin export``.

The logs are stored compact (``results``: no newline in them, non-ASCII escaped), so a line
is built from the stored bytes without parsing them.  Logs hold no stderr (a seat's stderr
is its owner's, ``GET /api/matches/{id}/seats/{seat}/stderr``), so the export is public.

The cursor: ``next`` is the last match id of the page (``since`` itself for an empty page),
and asking again with ``since=next`` goes on where the page ended, without skipping a match
that finished meanwhile (the page stops below the ladder's oldest unfinished match).
"""

from __future__ import annotations

import gzip
import io
import json
import tarfile
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from .crud.matches import LogRow
from .schemas import as_utc

Format = Literal["jsonl", "tar"]
MEDIA_TYPES: dict[str, str] = {"jsonl": "application/jsonl", "tar": "application/x-tar"}


@dataclass(frozen=True)
class Export:
    """One page of the export: its body, its media type, the cursor to go on from, and
    whether more may follow (the page was full)."""

    body: bytes
    media_type: str
    count: int
    next_since: int
    more: bool


def _stamp(when: datetime | None) -> str | None:
    return as_utc(when).isoformat() if when is not None else None


def log_text(body: bytes) -> bytes:
    """A stored log (gzip-compressed JSON) as the JSON of one line."""
    raw = gzip.decompress(body)
    if b"\n" in raw:  # never written so (results.compress_log), but a line must stay a line
        raw = json.dumps(json.loads(raw), separators=(",", ":")).encode()
    return raw


def file_of(match_id: int) -> str:
    return f"matches/{match_id}.json"


def index_entry(row: LogRow) -> dict[str, Any]:
    """The index line of an exported match (the module's docstring)."""
    return {
        "match_id": row.id,
        "file": file_of(row.id),
        "seed": row.seed,
        "rated": row.rated,
        "finished_at": _stamp(row.finished_at),
        "participants": row.participants,
        "scores": row.scores,
        "ranks": row.ranks,
    }


def _jsonl(rows: Sequence[LogRow]) -> bytes:
    out = io.BytesIO()
    for row in rows:
        head = json.dumps(index_entry(row), separators=(",", ":"))
        out.write(head[:-1].encode())  # the object without its closing brace
        out.write(b', "log": ')
        out.write(log_text(row.body))
        out.write(b"}\n")
    return out.getvalue()


def _member(tar: tarfile.TarFile, name: str, data: bytes, mtime: float) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mtime = int(mtime)
    info.mode = 0o644
    tar.addfile(info, io.BytesIO(data))


def mtime(row: LogRow) -> float:
    """The time of a match's file in an archive: when it finished."""
    return as_utc(row.finished_at).timestamp() if row.finished_at is not None else 0.0


def _tar(rows: Sequence[LogRow]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        index = b"".join(
            json.dumps(index_entry(row), separators=(",", ":")).encode() + b"\n" for row in rows
        )
        _member(tar, "index.jsonl", index, max(map(mtime, rows), default=0.0))
        for row in rows:
            _member(tar, file_of(row.id), log_text(row.body), mtime(row))
    return out.getvalue()


def build(rows: Sequence[LogRow], since: int, limit: int, fmt: Format) -> Export:
    """The page of ``rows`` (``crud.matches.ladder_logs`` asked for ``limit``) as ``fmt``."""
    body = _tar(rows) if fmt == "tar" else _jsonl(rows)
    next_since = rows[-1].id if rows else since
    return Export(body, MEDIA_TYPES[fmt], len(rows), next_since, len(rows) == limit)
