"""Helpers of the hostile tests that go through the platform (test_hostile_fairness,
test_hostile_text): the app on a fresh database with an executor that only records (the tests
run the work themselves, as a worker would), and data made the way the API makes it, on the
worker tests' own helpers (``helpers.workers``).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from cow006_platform import db, security
from cow006_platform.settings import Settings
from helpers import workers as wt

Factory = sessionmaker[Session]
# The hostile bots, a folder per subject.
BOTS = Path(__file__).resolve().parents[1] / "hostile" / "bots"

# Fair bots, each of its own kind.
GOOD_HIGH = "def play(view):\n    return max(view.hand)\n"
GOOD_LOW = "def play(view):\n    return min(view.hand)\n"
GOOD_MID = "def play(view):\n    return sorted(view.hand)[len(view.hand) // 2]\n"


class Recorder:
    """An executor that only records what the API submitted."""

    def __init__(self) -> None:
        self.matches: list[int] = []
        self.validations: list[int] = []

    def submit_match(self, match_id: int, kind: Any = None) -> None:
        self.matches.append(match_id)

    def submit_validation(self, version_id: int) -> None:
        self.validations.append(version_id)

    def close(self) -> None:
        pass


@dataclass
class Arena:
    client: Any
    factory: Factory
    cfg: Settings
    db_url: str


def settings(db_url: str, tmp_path: Path, **overrides: Any) -> Settings:
    """Bots sandboxed, short validation limits (``overrides``: more settings)."""
    values: dict[str, Any] = {"validation_decision": 0.5, "validation_bank": 1.0, **overrides}
    return Settings(database_url=db_url, data_dir=tmp_path / "data", sandbox="on", **values)


def arena(db_url: str, tmp_path: Path, **overrides: Any) -> Iterator[Arena]:
    """The platform's app (page cache on; its migrations make the schema at startup) on
    ``db_url``, with a ``Recorder``, until the generator is closed."""
    from fastapi.testclient import TestClient

    from cow006_platform.app import create_app

    cfg = settings(db_url, tmp_path, **overrides)
    app = create_app(cfg, Recorder())
    with TestClient(app) as client:
        yield Arena(client, app.state.session_factory, cfg, db_url)


def user(a: Arena, name: str, *, admin: bool = False) -> tuple[int, dict[str, str]]:
    """A user with a token (an admin with ``admin``): its id and its Authorization header."""
    with db.session_scope(a.factory) as s:
        row, token = security.create_user(s, name)
        row.is_admin = admin
        return row.id, {"Authorization": f"Bearer {token}"}


def version(a: Arena, owner: int, name: str, source: str) -> tuple[int, int]:
    """Store ``source`` as an upload and make it the active version 1 of a new agent:
    (agent, version)."""
    with db.session_scope(a.factory) as s:
        row = wt.add_version(s, a.cfg, owner, name, source)
        return row.agent_id, row.id


def ladder(a: Arena, players: int, entries: list[tuple[int, int]], **kwargs: Any) -> int:
    """A ladder of ``players`` seats with the (agent, version) ``entries`` entered."""
    return wt.ladder(a.factory, [vid for _agent, vid in entries], players=players, **kwargs)
