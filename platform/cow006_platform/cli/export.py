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

    from cow006 import log as cow_log

    from .. import crud, exports
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
                rows = crud.matches.ladder_logs(
                    session, ladder_id, last, EXPORT_BATCH, settled=False
                )
            if not rows:
                break
            for row in rows:
                last = row.id
                text = exports.log_text(row.body)
                try:
                    cow_log.verify(json.loads(text))
                except Exception as exc:
                    fail(f"the log of match {row.id} does not replay ({exc})")
                entry = exports.index_entry(row)
                put(entry["file"], text, exports.mtime(row))
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
