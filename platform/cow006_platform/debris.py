"""What a crash leaves on disk, and its removal: ``cow006 admin gc``, and each API start.

A process killed mid-upload (kill -9, a power loss) leaves:

* a temporary folder ``data_dir/tmp/upload-*`` it was writing (or ``broken-*``, ``gc-*``:
  folders being replaced or removed);
* a folder ``data_dir/bots/<sha256>/`` renamed into place whose version row was never
  committed: no version refers to it.

``collect`` removes both, and only those: a folder is removed only if it is older than
``settings.gc_grace_seconds`` (an upload in flight in another process is younger) and, for
``bots/``, only if no version row names its digest.  Anything else under ``data_dir`` (names
that are not digests, other files) is left alone.  A bot folder is removed in two steps: renamed
into ``tmp/`` first, then checked again (an upload reusing it meanwhile touched its mtime: it
is put back), then deleted; ``storage`` writes a folder again if it went missing under it.
Reused folders get their mtime touched by ``storage``, so a folder in use is never old.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from . import storage
from .models import AgentVersion
from .settings import Settings

logger = logging.getLogger(__name__)

_DIGEST = re.compile(r"[0-9a-f]{64}")
_TEMPORARY = ("upload-", "broken-", "gc-")


@dataclass
class Report:
    """What one pass removed (paths relative to ``data_dir``) and what it kept."""

    removed: list[str] = field(default_factory=list)
    kept_young: int = 0  # unreferenced or temporary, but within the grace period
    referenced: int = 0  # bot folders a version refers to


def referenced_digests(session: Session) -> set[str]:
    return set(session.scalars(select(AgentVersion.sha256).distinct()))


def _age(path: Path, now: float) -> float:
    try:
        return now - path.lstat().st_mtime
    except FileNotFoundError:
        return 0.0


def collect(
    settings: Settings, factory: sessionmaker[Session], grace: float | None = None
) -> Report:
    """Remove the debris of crashed uploads under ``settings.data_dir`` (see the module)."""
    grace = settings.gc_grace_seconds if grace is None else grace
    root = Path(settings.data_dir)
    tmp_root = root / "tmp"
    bots = storage.bots_dir(settings)
    report = Report()
    now = time.time()
    if tmp_root.is_dir():
        for entry in sorted(tmp_root.iterdir()):
            if not entry.name.startswith(_TEMPORARY) or entry.is_symlink():
                continue
            if _age(entry, now) <= grace:
                report.kept_young += 1
                continue
            shutil.rmtree(entry, ignore_errors=True)
            report.removed.append(f"tmp/{entry.name}")
    if not bots.is_dir():
        return report
    # Listed before the references are read: a folder renamed in after the listing is not
    # looked at, and one committed after the query is young.
    candidates = [e for e in sorted(bots.iterdir()) if _DIGEST.fullmatch(e.name)]
    with factory() as session:
        referenced = referenced_digests(session)
    for entry in candidates:
        if entry.name in referenced:
            report.referenced += 1
            continue
        if entry.is_symlink() or not entry.is_dir() or _age(entry, now) <= grace:
            report.kept_young += 1
            continue
        tmp_root.mkdir(parents=True, exist_ok=True)
        doomed = Path(tempfile.mkdtemp(prefix="gc-", dir=tmp_root)) / entry.name
        try:
            os.rename(entry, doomed)
        except FileNotFoundError:
            continue
        if _age(doomed, time.time()) <= grace:  # reused meanwhile (storage touched it)
            try:
                os.rename(doomed, entry)
            except OSError:  # written again meanwhile: that copy is as good
                pass
            report.kept_young += 1
            shutil.rmtree(doomed.parent, ignore_errors=True)
            continue
        shutil.rmtree(doomed.parent, ignore_errors=True)
        report.removed.append(f"bots/{entry.name}")
    storage.fsync_dir(bots)
    if report.removed:
        logger.info("removed %d crash leftovers under %s", len(report.removed), root)
    return report
