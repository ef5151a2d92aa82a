"""/api/agents: agents, uploads (duplicates, caps, bad files), versions, source, history."""

from __future__ import annotations

import io
import stat
import zipfile

import pytest
from helpers.api import BOT_SOURCE, Api, RecordingExecutor
from sqlalchemy import select

from cow006_platform import models


def _zip(files: dict[str, str]) -> bytes:
    """A zip as the ``zip`` tool makes it (regular files, mode 644)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, text in files.items():
            info = zipfile.ZipInfo(name)
            info.external_attr = (stat.S_IFREG | 0o644) << 16
            zf.writestr(info, text)
    return buf.getvalue()


def test_agents_are_created_listed_and_filtered(api: Api) -> None:
    alice, bob = api.user("alice"), api.user("bob")
    r = api.client.post("/api/agents", json={"name": "cow-1"}, headers=alice)
    assert r.status_code == 201
    agent = r.json()
    assert agent["owner"] == "alice" and agent["versions"] == 0
    assert agent["latest_version"] is None and agent["disabled"] is False
    assert api.client.post("/api/agents", json={"name": "cow-1"}, headers=bob).status_code == 409
    assert api.client.post("/api/agents", json={"name": "cow-1"}).status_code == 401
    assert api.client.post("/api/agents", json={"name": "a b"}, headers=bob).status_code == 422
    api.agent(bob, "cow-2")
    api.agent(alice, "cow-3")
    everyone = api.client.get("/api/agents").json()
    assert everyone["total"] == 3
    mine = api.client.get("/api/agents", params={"owner_id": agent["owner_id"]}).json()
    assert [a["name"] for a in mine["items"]] == ["cow-1", "cow-3"]
    assert api.client.get(f"/api/agents/{agent['id']}").json() == agent
    assert api.client.get("/api/agents/12345").status_code == 404


def test_upload_creates_numbered_versions_and_submits_validation(
    api: Api, executor: RecordingExecutor
) -> None:
    executor.activate = False
    alice = api.user("alice")
    aid = api.agent(alice, "cow")
    v1 = api.upload(alice, aid)
    v2 = api.upload(alice, aid)
    assert (v1["number"], v2["number"]) == (1, 2)
    assert v1["status"] == "pending" and v1["label"] == "cow@1"
    assert v1["filename"] == "bot.py" and v1["files"] == 1
    assert executor.validations == [v1["id"], v2["id"]]
    agent = api.client.get(f"/api/agents/{aid}").json()
    assert agent["versions"] == 2 and agent["latest_version"] == 2
    assert agent["latest_active_version"] is None
    versions = api.client.get(f"/api/agents/{aid}/versions").json()
    assert [v["number"] for v in versions["items"]] == [1, 2]
    assert api.client.get(f"/api/agents/{aid}/versions/2").json()["id"] == v2["id"]
    assert api.client.get(f"/api/agents/{aid}/versions/3").status_code == 404


@pytest.mark.slow
def test_identical_upload_is_a_duplicate(api: Api) -> None:
    alice, bob = api.user("alice"), api.user("bob")
    aid = api.agent(alice)
    first = api.upload(alice, aid, BOT_SOURCE)
    r = api.client.post(
        f"/api/agents/{aid}/versions",
        files={"file": ("bot.py", BOT_SOURCE.encode())},
        headers=alice,
    )
    assert r.status_code == 409
    detail = r.json()["detail"]
    assert detail["version_id"] == first["id"] and detail["number"] == 1
    # The same file is no duplicate for another agent.
    other = api.agent(bob)
    assert api.upload(bob, other, BOT_SOURCE)["number"] == 1


def test_uploads_per_day_are_capped(api: Api) -> None:
    api.client.app.state.settings.uploads_per_day = 2  # type: ignore[attr-defined]
    alice = api.user("alice")
    a1, a2 = api.agent(alice), api.agent(alice)
    api.upload(alice, a1)
    api.upload(alice, a2)
    r = api.client.post(
        f"/api/agents/{a1}/versions", files={"file": ("bot.py", b"x = 1\n")}, headers=alice
    )
    assert r.status_code == 429 and "2 uploads a day" in r.json()["detail"]
    bob = api.user("bob")  # the cap is per user
    api.upload(bob, api.agent(bob))


def test_bad_uploads_are_refused_and_store_nothing(api: Api, executor: RecordingExecutor) -> None:
    api.client.app.state.settings.max_upload_bytes = 1000  # type: ignore[attr-defined]
    alice = api.user("alice")
    aid = api.agent(alice)
    cases = [
        (("bot.exe", b"MZ"), 400),
        (("bot.py", b"\xff\xfe"), 400),
        (("bot.py", b"  \n"), 400),
        (("bot.zip", b"not a zip"), 400),
        (("bot.zip", _zip({"evil/../../x.py": "x"})), 400),
        (("bot.zip", _zip({"other.py": "x = 1\n"})), 400),
        (("bot.py", b"#" * 1001), 413),
    ]
    for file, code in cases:
        r = api.client.post(f"/api/agents/{aid}/versions", files={"file": file}, headers=alice)
        assert r.status_code == code, (file[0], r.text)
        assert isinstance(r.json()["detail"], str)
    r = api.client.post(f"/api/agents/{aid}/versions", headers=alice)
    assert r.status_code == 422  # no file at all
    with api.session_factory() as session:
        assert session.scalars(select(models.AgentVersion)).all() == []
    assert executor.validations == []


@pytest.mark.slow
def test_only_the_owner_uploads(api: Api) -> None:
    alice, bob, admin = api.user("alice"), api.user("bob"), api.user("root", admin=True)
    aid = api.agent(alice)
    for headers, code in [({}, 401), (bob, 403), (admin, 403)]:
        r = api.client.post(
            f"/api/agents/{aid}/versions", files={"file": ("bot.py", b"x=1\n")}, headers=headers
        )
        assert r.status_code == code
    r = api.client.post(
        "/api/agents/999/versions", files={"file": ("bot.py", b"x=1\n")}, headers=alice
    )
    assert r.status_code == 404


def test_reason_and_source_are_the_owners(api: Api) -> None:
    alice, bob, admin = api.user("alice"), api.user("bob"), api.user("root", admin=True)
    aid = api.agent(alice, "cow")
    archive = _zip({"bot.py": "from helper import play\n", "helper.py": BOT_SOURCE})
    r = api.client.post(
        f"/api/agents/{aid}/versions", files={"file": ("cow.zip", archive)}, headers=alice
    )
    assert r.status_code == 201 and r.json()["files"] == 2
    with api.session_factory.begin() as session:
        version = session.scalars(select(models.AgentVersion)).one()
        version.status = models.VersionStatus.rejected
        version.reason = "ImportError: no module named helper"
    for headers, reason in [({}, None), (bob, None), (alice, "ImportError"), (admin, "Import")]:
        got = api.client.get(f"/api/agents/{aid}/versions/1", headers=headers).json()["reason"]
        assert (got is None) if reason is None else got.startswith(reason)
        listed = api.client.get(f"/api/agents/{aid}/versions", headers=headers).json()
        assert listed["items"][0]["reason"] == got
    src = api.client.get(f"/api/agents/{aid}/versions/1/source", headers=alice)
    assert src.status_code == 200
    files = src.json()["files"]
    assert [f["path"] for f in files] == ["bot.py", "helper.py"]
    assert files[1]["text"] == BOT_SOURCE
    assert api.client.get(f"/api/agents/{aid}/versions/1/source", headers=admin).status_code == 200
    assert api.client.get(f"/api/agents/{aid}/versions/1/source", headers=bob).status_code == 403
    assert api.client.get(f"/api/agents/{aid}/versions/1/source").status_code == 401


def test_admins_disable_agents(api: Api) -> None:
    alice, admin = api.user("alice"), api.user("root", admin=True)
    aid = api.agent(alice)
    assert api.client.patch(f"/api/agents/{aid}", json={"disabled": True}).status_code == 401
    r = api.client.patch(f"/api/agents/{aid}", json={"disabled": True}, headers=alice)
    assert r.status_code == 403
    r = api.client.patch(f"/api/agents/{aid}", json={"disabled": True}, headers=admin)
    assert r.status_code == 200 and r.json()["disabled"] is True
    r = api.client.post(
        f"/api/agents/{aid}/versions", files={"file": ("bot.py", b"x=1\n")}, headers=alice
    )
    assert r.status_code == 409
    api.client.patch(f"/api/agents/{aid}", json={"disabled": False}, headers=admin)
    api.upload(alice, aid)
