"""The query layer's agents (cow006_platform.crud.agents): how two agents fared when they met."""

from __future__ import annotations

import pytest
from helpers import data as dt
from sqlalchemy.orm import Session, sessionmaker

from cow006_platform import crud, db, results
from cow006_platform.models import AgentVersion, Match, MatchKind

Factory = sessionmaker[Session]


@pytest.mark.slow
def test_head_to_head(session_factory: Factory) -> None:
    vids = dt.versions(session_factory, 3)
    expected = {"matches": 0, "a_ahead": 0, "b_ahead": 0, "ties": 0}
    scores_a: list[int] = []
    scores_b: list[int] = []
    with db.session_scope(session_factory) as s:
        agents = [s.get(AgentVersion, v).agent_id for v in vids]  # type: ignore[union-attr]
        lid = dt.ladder(s).id
        mids = [
            results.create_match(
                s, kind=MatchKind.ladder, version_ids=order, ladder_id=lid if i % 2 else None
            ).id
            for i, order in enumerate(
                [vids, vids[::-1], [vids[0], vids[2]], [vids[1], vids[0]], vids]
            )
        ]
    for i, mid in enumerate(mids):
        if i == 4:
            continue  # left queued: only finished matches count
        dt.play_and_finish(session_factory, mid, "greedy" if i % 2 else "random")
        with db.session_scope(session_factory) as s:
            m = s.get(Match, mid)
            assert m is not None
            by_agent = {x.agent_id: x.score for x in m.seats}
            if agents[0] in by_agent and agents[1] in by_agent:
                a, b = by_agent[agents[0]], by_agent[agents[1]]
                assert a is not None and b is not None  # a finished match's scores
                expected["matches"] += 1
                expected["a_ahead"] += a < b
                expected["b_ahead"] += a > b
                expected["ties"] += a == b
                scores_a.append(a)
                scores_b.append(b)
    with db.session_scope(session_factory) as s:
        h = crud.agents.head_to_head(s, agents[0], agents[1]).model_dump()
        assert {k: h[k] for k in expected} == expected
        assert h["a_mean_score"] == pytest.approx(sum(scores_a) / len(scores_a))
        assert h["b_mean_score"] == pytest.approx(sum(scores_b) / len(scores_b))
        flipped = crud.agents.head_to_head(s, agents[1], agents[0]).model_dump()
        assert (flipped["a_ahead"], flipped["b_ahead"]) == (h["b_ahead"], h["a_ahead"])
        on_ladder = crud.agents.head_to_head(s, agents[0], agents[1], ladder_id=lid).model_dump()
        assert on_ladder["matches"] == 2 and on_ladder["ladder_id"] == lid
        none = crud.agents.head_to_head(s, agents[0], 10**6).model_dump()
        assert none["matches"] == 0 and none["a_mean_score"] is None
