"""Hostile JSON bodies: lone surrogates and invalid UTF-8 in every field of every JSON route.

``json.loads`` accepts ``"\\ud800"`` (and decodes invalid UTF-8 bytes to surrogates), but no
UTF-8 encoder writes one: FastAPI's 422, which echoes the input, then failed to encode and
the caller got a 500.  Every route must answer such a body with a 4xx that is valid JSON and
store nothing of it.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from helpers.api import Api
from sqlalchemy import func, select

from cow006_platform import models

# A lone surrogate as JSON escapes, and as the raw bytes of an encoded surrogate (CESU-8).
HOSTILE = ("\\ud800", "\\udfff\\ud800x", "ok\xed\xa0\x80")


def _operations(api: Api) -> list[tuple[str, str, dict[str, Any]]]:
    """Every (method, path, body schema) of the API that takes a JSON body."""
    spec = api.client.get("/openapi.json").json()
    out = []
    for path, item in spec["paths"].items():
        for method, op in item.items():
            content = op.get("requestBody", {}).get("content", {})
            if "application/json" in content:
                schema = content["application/json"]["schema"]
                if "$ref" in schema:
                    name = schema["$ref"].rsplit("/", 1)[1]
                    schema = spec["components"]["schemas"][name]
                out.append((method.upper(), path.replace("{", "").replace("}", ""), schema))
    return out


def _bodies(schema: dict[str, Any]) -> list[bytes]:
    """Raw JSON bodies: each property in turn holding a hostile string, and hostile keys."""
    names = list(schema.get("properties", {})) or ["name"]
    bodies = []
    for bad in HOSTILE:
        for name in names:
            bodies.append(_raw('{"' + name + '": "' + bad + '"}'))
        bodies.append(_raw('{"' + names[0] + bad + '": 1}'))
    return bodies


def _raw(text: str) -> bytes:
    """The body's bytes, with the characters U+0080..U+00FF standing for raw bytes."""
    return text.encode("latin-1")


@pytest.mark.slow
def test_every_json_route_answers_hostile_text_with_json(api: Api) -> None:
    admin = api.user("root", admin=True)
    agent = api.agent(admin, "mine")
    api.ladder(admin, "main")
    with api.session_factory() as session:
        before = session.scalar(select(func.count(models.User.id)))
    operations = _operations(api)
    assert len(operations) >= 6  # users, agents, tokens, ladders, entries, leagues, ...
    for method, template, schema in operations:
        # Path parameters point at rows that exist (or at 1): the body is what is checked.
        path = template.replace("agent_id", str(agent)).replace("ladder_id", "1")
        path = path.replace("league_id", "1").replace("token_id", "1").replace("user_id", "1")
        for body in _bodies(schema):
            for headers in ({}, admin):
                r = api.client.request(
                    method,
                    path,
                    content=body,
                    headers={**headers, "Content-Type": "application/json"},
                )
                assert r.status_code < 500, (method, path, body, r.text)
                json.loads(r.content.decode("utf-8"))  # valid UTF-8 and valid JSON
                assert "\\ud800" not in r.text and "\\udfff" not in r.text
    with api.session_factory() as session:
        assert session.scalar(select(func.count(models.User.id))) == before


@pytest.mark.slow
def test_the_echoed_input_is_cleaned_and_bounded(api: Api) -> None:
    as_json = {"Content-Type": "application/json"}
    body = b'{"name": "\\ud800' + b"a" * 30_000 + b'"}'
    r = api.client.post("/api/users", content=body, headers=as_json)
    assert r.status_code == 422
    echoed = r.json()["detail"][0]["input"]
    assert echoed.startswith("\ufffdaaa") and len(echoed) <= 200
    r = api.client.post("/api/users", content=b'{"name": "\\ud800bob"}', headers=as_json)
    assert r.status_code == 422
    detail = r.json()["detail"]
    assert detail[0]["loc"] == ["body", "name"]
    assert detail[0]["input"] == "\ufffdbob"
