"""The upload caps, sized for a small network's weights (issue 19), over the API.

``MAX_UPLOAD_BYTES`` (20 MiB) and ``MAX_UNPACKED_BYTES`` (40 MiB): a zip with a 6 MiB weights
``.npz`` (six times the old 1 MiB cap, incompressible) is stored beside its ``bot.py``, byte
for byte; one byte of upload past the cap is refused with one sentence; a zip bomb under the
upload cap that inflates past the unpacked cap still is.  The upload page states the caps
it is served with.  (The body caps before a byte is read: test_limits.py.)
"""

from __future__ import annotations

import hashlib
import io
import os
import zipfile
from pathlib import Path

import numpy as np
import pytest
from helpers.api import BOT_SOURCE, Api

from cow006_platform.settings import Settings

# 20 MiB bodies through the app: slow (make test-fast leaves it out).
pytestmark = pytest.mark.slow


def _zip(files: dict[str, bytes], method: int = zipfile.ZIP_DEFLATED) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", method) as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return buf.getvalue()


def _post(api: Api, who: dict[str, str], agent: int, filename: str, data: bytes) -> tuple[int, str]:
    r = api.client.post(
        f"/api/agents/{agent}/versions",
        files={"file": (filename, data, "application/octet-stream")},
        headers=who,
    )
    body = r.json()
    return r.status_code, str(body.get("detail", "")) if r.status_code >= 400 else ""


def test_the_defaults() -> None:
    s = Settings()
    assert s.max_upload_bytes == 20 * 1024 * 1024
    assert s.max_unpacked_bytes == 2 * s.max_upload_bytes


def test_weights_within_the_caps_are_stored_and_past_them_refused(
    api: Api, settings: Settings
) -> None:
    owner = api.user("trainer")
    agent = api.agent(owner, "trained")
    # Weights six times the old cap, as numpy writes them (random: they do not compress).
    buf = io.BytesIO()
    np.savez(buf, w=np.random.default_rng(5).standard_normal(6 * 1024 * 1024 // 8))
    weights = buf.getvalue()
    data = _zip({"bot.py": BOT_SOURCE.encode(), "weights.npz": weights})
    assert 5 * 1024 * 1024 < len(data) < settings.max_upload_bytes
    assert _post(api, owner, agent, "trained.zip", data) == (201, "")
    stored = Path(settings.data_dir) / "bots" / hashlib.sha256(data).hexdigest()
    assert (stored / "weights.npz").read_bytes() == weights
    assert sorted(p.name for p in stored.iterdir()) == ["bot.py", "weights.npz"]

    # One byte past the upload cap (a stored zip: its size is the files' own).
    pad = settings.max_upload_bytes - len(_zip({"bot.py": b"", "w.npz": b""}, zipfile.ZIP_STORED))
    over = _zip({"bot.py": BOT_SOURCE.encode(), "w.npz": os.urandom(pad)}, zipfile.ZIP_STORED)
    assert len(over) > settings.max_upload_bytes
    code, detail = _post(api, owner, agent, "over.zip", over)
    assert (code, detail) == (413, "an upload is at most 20 MiB (20971520 bytes)")

    # A zip bomb: well under the upload cap, past the unpacked cap once inflated.
    chunk = bytes(settings.max_unpacked_bytes // 4 + 1)
    bomb = _zip({"bot.py": BOT_SOURCE.encode()} | {f"w{i}.npz": chunk for i in range(4)})
    assert len(bomb) < 1024 * 1024
    code, detail = _post(api, owner, agent, "bomb.zip", bomb)
    assert code == 400 and "\n" not in detail
    assert detail == "The archive unpacks to more than 41943040 bytes (the limit for a bot)."
    versions = api.client.get(f"/api/agents/{agent}/versions", headers=owner).json()["items"]
    assert len(versions) == 1  # only the first upload became a version


def test_the_upload_page_states_the_caps(api: Api) -> None:
    page = api.client.get("/upload")
    assert page.status_code == 200
    assert 'data-max-bytes="20971520"' in page.text
    assert "At most 20 MiB per upload (20971520 bytes), and 40 MiB unpacked" in page.text
