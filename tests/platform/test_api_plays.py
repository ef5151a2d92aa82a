"""/api/plays: starting a match against the bots, reading the decision asked, answering it.

The worker's side (``HumanSeat``) is stood in for by writing the decision to the ``plays`` row
as it does; tests/workers/test_human.py plays whole matches through the real worker code.
"""

from __future__ import annotations

from typing import Any

import pytest
from helpers.api import Api
from helpers.plays import ask as _ask
from sqlalchemy import select

from cow006_platform import db
from cow006_platform.models import (
    Agent,
    AgentVersion,
    Match,
    MatchKind,
    MatchSeat,
    MatchStatus,
    Play,
    VersionStatus,
)
from cow006_platform.tasknames import PLAY_QUEUE, queue_for_match

HOSTILE_NAMES = [
    "builtin:../../etc",
    "builtin:<script>",
    "0",
    "-1",
    "1" * 40,
    "9" * 10,
    "2147483648",
    "builtin:",
    "x",
]


def _start(api: Api, headers: dict[str, str], **body: Any) -> dict[str, Any]:
    r = api.client.post(
        "/api/plays",
        json={"opponents": ["builtin:greedy", "builtin:safe"], **body},
        headers=headers,
    )
    assert r.status_code == 201, r.text
    return dict(r.json())


def test_a_play_is_a_queued_unrated_match_with_the_person_at_one_seat(api: Api) -> None:
    alice = api.user("alice")
    play = _start(api, alice)
    assert play["status"] == "queued" and play["asked"] is None and play["view"] is None
    assert len(play["names"]) == 3 and play["names"][play["seat"]] == "alice"
    bots = [n for i, n in enumerate(play["names"]) if i != play["seat"]]
    assert bots == ["builtin-greedy@1", "builtin-safe@1"]
    assert api.executor.matches == [play["match_id"]]
    assert queue_for_match(MatchKind.play) == PLAY_QUEUE
    with db.session_scope(api.session_factory) as s:
        match = s.get(Match, play["match_id"])
        assert match is not None and match.kind is MatchKind.play and not match.rated
        assert match.requested_by is not None
        person = s.scalar(
            select(AgentVersion)
            .join(MatchSeat, MatchSeat.version_id == AgentVersion.id)
            .where(MatchSeat.match_id == match.id, MatchSeat.seat == play["seat"])
        )
        # The person's seat is a version that never plays anywhere else.
        assert person is not None and person.status is VersionStatus.rejected
    # The match is a normal match for everyone.
    r = api.client.get(f"/api/matches/{play['match_id']}")
    assert r.status_code == 200 and r.json()["kind"] == "play"


def test_players_fill_the_table_with_the_opponents_in_order(api: Api) -> None:
    play = _start(api, api.user(), opponents=["builtin:random"], players=4)
    assert len(play["names"]) == 4
    assert [n for i, n in enumerate(play["names"]) if i != play["seat"]] == ["builtin-random@1"] * 3
    r = api.client.post(
        "/api/plays",
        json={"opponents": ["builtin:random", "builtin:safe"], "players": 2},
        headers=api.user(),
    )
    assert r.status_code == 400 or r.status_code == 422, r.text


def test_an_active_public_version_may_be_an_opponent(api: Api) -> None:
    bob = api.user("bob")
    version = api.upload(bob, api.agent(bob, "bee"))["id"]
    alice = api.user("alice")
    play = _start(api, alice, opponents=[str(version), "builtin:greedy"])
    assert "bee@1" in play["names"]
    # An owner who refuses unrated matches with others is refused here too.
    with db.session_scope(api.session_factory) as s:
        agent = s.scalar(select(Agent).where(Agent.name == "bee"))
        assert agent is not None
        agent.accepts_challenges = False
    r = api.client.post("/api/plays", json={"opponents": [str(version)]}, headers=api.user())
    assert r.status_code == 409 and "accept" in r.json()["detail"]


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_hostile_opponents_are_refused_with_a_sentence(api: Api, name: str) -> None:
    r = api.client.post("/api/plays", json={"opponents": [name]}, headers=api.user())
    assert r.status_code in (400, 404, 422), r.text
    assert r.headers["content-type"].startswith("application/json") and len(r.text) < 2000


def test_an_unknown_builtin_or_the_persons_version_is_refused(api: Api) -> None:
    headers = api.user()
    r = api.client.post("/api/plays", json={"opponents": ["builtin:nosuch"]}, headers=headers)
    assert r.status_code == 400 and "no built-in bot" in r.json()["detail"]
    play = _start(api, headers)
    with db.session_scope(api.session_factory) as s:
        person = s.scalar(select(Agent).where(Agent.name == "(person)"))
        assert person is not None
        vid = s.scalar(select(AgentVersion.id).where(AgentVersion.agent_id == person.id))
    assert play["id"]
    r = api.client.post("/api/plays", json={"opponents": [str(vid)]}, headers=api.user())
    assert r.status_code == 404


def test_one_unfinished_play_per_user_and_a_daily_cap(api: Api) -> None:
    alice = api.user("alice")
    first = _start(api, alice)
    r = api.client.post("/api/plays", json={"opponents": ["builtin:random"]}, headers=alice)
    assert r.status_code == 429 and int(r.headers["retry-after"]) > 0
    assert r.json()["detail"].endswith(".")
    with db.session_scope(api.session_factory) as s:
        match = s.get(Match, first["match_id"])
        assert match is not None
        match.status = MatchStatus.finished
    settings = api.client.app.state.settings
    for _ in range(settings.plays_per_day - 1):
        play = _start(api, alice)
        with db.session_scope(api.session_factory) as s:
            match = s.get(Match, play["match_id"])
            assert match is not None
            match.status = MatchStatus.failed
    r = api.client.post("/api/plays", json={"opponents": ["builtin:random"]}, headers=alice)
    assert r.status_code == 429 and "a day" in r.json()["detail"]


def test_a_play_is_its_players_alone(api: Api) -> None:
    play = _start(api, api.user("alice"))
    other = api.user("mallory")
    assert api.client.get(f"/api/plays/{play['id']}", headers=other).status_code == 404
    r = api.client.post(f"/api/plays/{play['id']}/move", json={"card": 5}, headers=other)
    assert r.status_code == 404
    assert api.client.get(f"/api/plays/{play['id']}").status_code == 401


def test_the_person_answers_the_decision_asked_once(api: Api) -> None:
    alice = api.user("alice")
    play = _start(api, alice)
    url = f"/api/plays/{play['id']}"
    r = api.client.post(f"{url}/move", json={"card": 7}, headers=alice)
    assert r.status_code == 409 and "not waiting" in r.json()["detail"]
    number = _ask(api.session_factory, play["id"], "card", [7, 30, 99])
    state = api.client.get(url, headers=alice).json()
    assert state["asked"] == "card" and state["view"]["hand"] == [7, 30, 99]
    assert state["decision"] == number and 0 < state["seconds_left"] <= 120
    r = api.client.post(f"{url}/move", json={"card": 8}, headers=alice)
    assert r.status_code == 400 and r.json()["detail"] == "Card 8 is not in your hand."
    r = api.client.post(f"{url}/move", json={"row": 1}, headers=alice)
    assert r.status_code == 400
    r = api.client.post(f"{url}/move", json={"card": 30, "decision": number + 1}, headers=alice)
    assert r.status_code == 409 and "over" in r.json()["detail"]
    r = api.client.post(f"{url}/move", json={"card": 30, "decision": number}, headers=alice)
    assert r.status_code == 200 and r.json()["asked"] is None
    r = api.client.post(f"{url}/move", json={"card": 7}, headers=alice)
    assert r.status_code == 409
    with db.session_scope(api.session_factory) as s:
        stored = s.get(Play, play["id"])
        assert stored is not None and stored.answer == 30
    _ask(api.session_factory, play["id"], "row", [7, 99])
    r = api.client.post(f"{url}/move", json={"card": 7}, headers=alice)
    assert r.status_code == 400 and "row" in r.json()["detail"]
    assert api.client.post(f"{url}/move", json={"row": 2}, headers=alice).status_code == 200


@pytest.mark.parametrize(
    "body",
    [{}, {"card": 5, "row": 1}, {"card": 0}, {"card": 105}, {"row": 4}, {"row": -1},
     {"card": "5"}, {"card": 2**70}, {"card": 5, "extra": 1}],
)  # fmt: skip
def test_hostile_moves_are_422(api: Api, body: dict[str, Any]) -> None:
    alice = api.user("alice")
    play = _start(api, alice)
    _ask(api.session_factory, play["id"], "card", [5])
    r = api.client.post(f"/api/plays/{play['id']}/move", json=body, headers=alice)
    assert r.status_code == 422, r.text


def test_the_builtins_offered_are_the_sdks() -> None:
    from cow006 import bots
    from cow006_platform.settings import Settings

    assert set(Settings().play_builtins) <= set(bots.names())


def test_the_tables_in_all_are_capped(api: Api) -> None:
    settings = api.client.app.state.settings
    for _ in range(settings.plays_unfinished):
        _start(api, api.user())
    r = api.client.post("/api/plays", json={"opponents": ["builtin:random"]}, headers=api.user())
    assert r.status_code == 429 and "tables" in r.json()["detail"]
