"""The starter kit download (``/starter/python.zip``): examples/starters/python (``bot.py``
and its README: the quick start, the local test command) as a zip.

The files ship inside the package (``web/starter/python/``, a copy that ``make docs``
refreshes; a test fails when the two differ): an installed arena never reads a repository
checkout.  The zip is built once per process, byte for byte the same each time (fixed
timestamps), so its ETag is stable.
"""

from __future__ import annotations

import functools
import hashlib
import io
import zipfile
from pathlib import Path

from fastapi import APIRouter, Request, Response, status

from .routes import STARTER_URL

STARTER = Path(__file__).parent / "starter" / "python"
FILES = ("bot.py", "README.md")  # the kit, in the zip's order
FOLDER = "cow006-python-starter"  # the folder the zip unpacks to
_STAMP = (2025, 1, 1, 0, 0, 0)

router = APIRouter(include_in_schema=False)


@functools.cache
def python_zip() -> bytes:
    """The Python starter kit as a zip (``FOLDER/bot.py``, ``FOLDER/README.md``)."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as kit:
        for name in FILES:
            entry = zipfile.ZipInfo(f"{FOLDER}/{name}", date_time=_STAMP)
            entry.external_attr = 0o644 << 16
            entry.compress_type = zipfile.ZIP_DEFLATED
            kit.writestr(entry, (STARTER / name).read_bytes())
    return out.getvalue()


@router.get(STARTER_URL)
def python_starter(request: Request) -> Response:
    """Download the Python starter kit."""
    body = python_zip()
    etag = '"' + hashlib.sha256(body).hexdigest()[:16] + '"'
    headers = {
        "Content-Disposition": f'attachment; filename="{FOLDER}.zip"',
        "Cache-Control": "public, max-age=3600",
        "ETag": etag,
        "X-Content-Type-Options": "nosniff",
    }
    if request.headers.get("if-none-match") == etag:
        return Response(status_code=status.HTTP_304_NOT_MODIFIED, headers=headers)
    return Response(body, media_type="application/zip", headers=headers)
