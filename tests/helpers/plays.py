"""Helpers of the tests of matches against the bots: the worker's side stood in for."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy.orm import Session, sessionmaker

from cow006_platform import db
from cow006_platform.models import Match, MatchStatus, Play, utcnow


def ask(factory: sessionmaker[Session], play_id: int, asked: str, hand: list[int]) -> int:
    """Write a decision to the play as the worker's HumanSeat does; its number."""
    with db.session_scope(factory) as s:
        play = s.get(Play, play_id)
        assert play is not None
        match = s.get(Match, play.match_id)
        assert match is not None
        match.status = MatchStatus.running
        play.decision += 1
        play.asked = asked
        play.answer = None
        play.pending = {
            "seat": play.seat,
            "hand": hand,
            "rows": [[1], [2], [3], [4]],
            "scores": [0, 0, 0],
            "penalties": [0, 0, 0],
            "revealed": [],
            "starters": [1, 2, 3, 4],
            "round": 0,
            "turn": 0,
            "n_players": 3,
            "time_left": None,
            "asked": asked,
        }
        if asked == "row":  # View.to_dict: the card being placed and the turn's cards
            play.pending = {**play.pending, "card": hand[0], "current": [hand[0], 50, 60]}
        play.deadline = utcnow() + timedelta(seconds=120)
        return play.decision
