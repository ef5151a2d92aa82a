"""``cow006 admin export``: every finished match of a ladder, its log and an index line."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ._app import admin, fail, find, open_database

EXPORT_BATCH = 200  # matches read per query: an export of any size runs in bounded memory


@admin.command("export")
def export_command(
    ladder: Annotated[str, typer.Argument(help="The ladder's name or id.")],
    out: Annotated[
        Path,
        typer.Argument(help="A .tar.gz file, or a directory (new or empty).", show_default=False),
    ],
) -> None:
    """Export every finished match of a ladder: its cow006-match-1 log (matches/ID.json) and
    one line of index.jsonl (id, seed, participants, scores, ranks) per match.

    Every log is replayed (``cow006.log.verify``) before it is written; nothing is left at
    OUT unless the whole export succeeded.
    """
    import json
    import os
    import shutil
    import tarfile
    import tempfile
    from io import BytesIO

    from sqlalchemy import select

    from cow006 import log as cow_log

    from .. import crud, results
    from ..db import aware
    from ..models import Match, MatchStatus
    from ..settings import Settings

    as_tar = out.name.endswith((".tar.gz", ".tgz"))
    if not as_tar and out.exists() and (not out.is_dir() or any(out.iterdir())):
        fail(f"{out} exists and is not an empty directory")
    if not out.parent.is_dir():
        fail(f"the folder {out.parent} does not exist")
    factory = open_database(Settings())
    with factory() as session:
        found = find(session, "ladder", ladder)
        ladder_id, name = found.id, found.name
    work = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    tar: tarfile.TarFile | None = None
    count = 0
    try:
        tmp_tar = work / "export.tar.gz"
        if as_tar:
            tar = tarfile.open(tmp_tar, "w:gz")  # noqa: SIM115 (closed below)
        else:
            (work / "matches").mkdir()
        index = BytesIO()

        def put(path: str, data: bytes, mtime: float) -> None:
            if tar is not None:
                info = tarfile.TarInfo(path)
                info.size, info.mtime, info.mode = len(data), int(mtime), 0o644
                tar.addfile(info, BytesIO(data))
            else:
                (work / path).write_bytes(data)

        last = 0
        while True:
            with factory() as session:
                matches = session.scalars(
                    select(Match)
                    .where(
                        Match.ladder_id == ladder_id,
                        Match.status == MatchStatus.finished,
                        Match.id > last,
                    )
                    .order_by(Match.id)
                    .limit(EXPORT_BATCH)
                ).all()
                if not matches:
                    break
                seats: dict[int, list[dict[str, object]]] = {}
                for seat in session.execute(crud.matches.seats_query([m.id for m in matches])):
                    seats.setdefault(seat.match_id, []).append(
                        {
                            "seat": seat.seat,
                            "agent": seat.agent,
                            "agent_id": seat.agent_id,
                            "version": seat.number,
                            "version_id": seat.version_id,
                            "score": seat.score,
                            "rank": seat.rank,
                            "faults": seat.faults,
                        }
                    )
                for match in matches:
                    last = match.id
                    log = results.read_log(session, match.id)
                    if log is None:
                        fail(f"match {match.id} is finished but has no stored log")
                    try:
                        cow_log.verify(log)
                    except Exception as exc:
                        fail(f"the log of match {match.id} does not replay ({exc})")
                    finished = aware(match.finished_at)
                    mtime = finished.timestamp() if finished is not None else 0.0
                    path = f"matches/{match.id}.json"
                    put(path, json.dumps(log, separators=(",", ":")).encode(), mtime)
                    entry = {
                        "match_id": match.id,
                        "file": path,
                        "seed": match.seed,
                        "rated": match.rated,
                        "finished_at": finished.isoformat() if finished is not None else None,
                        "participants": seats.get(match.id, []),
                        "scores": match.scores,
                        "ranks": match.ranks,
                    }
                    index.write(json.dumps(entry, separators=(",", ":")).encode() + b"\n")
                    count += 1
        put("index.jsonl", index.getvalue(), 0.0)
        if tar is not None:
            tar.close()
            tar = None
            os.replace(tmp_tar, out)
        else:
            if out.exists():
                out.rmdir()  # empty (checked above)
            work.rename(out)
    finally:
        if tar is not None:
            tar.close()
        if work.exists():
            shutil.rmtree(work, ignore_errors=True)
    typer.echo(f"exported {count} matches of ladder {name} to {out}")
