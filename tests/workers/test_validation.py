"""A version's validation with real, sandboxed bot processes (``validation``), run by the
``SynchronousExecutor`` as the API's executor would.

These tests need the sandbox: without it they skip with the reason, except when
``COW006_REQUIRE_SANDBOX=1`` (CI), where they fail.  The validation limits are short and the
bots trivial.
"""

from __future__ import annotations

import pytest
from helpers import services
from helpers import workers as wt
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from cow006 import log as cow_log
from cow006_platform import db, results
from cow006_platform.models import (
    AgentVersion,
    Match,
    MatchKind,
    MatchSeat,
    MatchStatus,
    VersionStatus,
)
from cow006_platform.settings import Settings
from cow006_workers.embedded import SynchronousExecutor

Factory = sessionmaker[Session]

HIGH = "def play(view):\n    return max(view.hand)\n"
IMPORT_ERROR = "import os\nimport no_such_module_for_cow006\n\ndef play(view):\n    return 1\n"
SLOW = "import time\n\ndef play(view):\n    time.sleep(30)\n    return min(view.hand)\n"
ILLEGAL = "def play(view):\n    return 105  # never in a hand\n"


@pytest.fixture
def cfg(settings: Settings) -> Settings:
    return settings.model_copy(update={"validation_decision": 0.3, "validation_bank": 0.3})


def pending(factory: Factory, cfg: Settings, source: str) -> int:
    """Store a bot like an upload as the pending version of a new agent; its id."""
    vid = wt.active_versions(factory, cfg, 1, source=source)[0]
    with db.session_scope(factory) as s:
        version = s.get(AgentVersion, vid)
        assert version is not None
        version.status = VersionStatus.pending
    return vid


@pytest.mark.slow
def test_validation_accepts_good_bots_and_explains_bad_ones(
    session_factory: Factory, cfg: Settings
) -> None:
    services.require_sandbox()
    cases = {
        "good": pending(session_factory, cfg, HIGH),
        "import": pending(session_factory, cfg, IMPORT_ERROR),
        "slow": pending(session_factory, cfg, SLOW),
        "illegal": pending(session_factory, cfg, ILLEGAL),
    }
    executor = SynchronousExecutor(cfg)
    try:
        for vid in cases.values():
            executor.submit_validation(vid)
    finally:
        executor.close()
    with db.session_scope(session_factory) as s:
        got = {k: s.get(AgentVersion, v) for k, v in cases.items()}
        out = {k: (v.status, v.reason, v.validated_at) for k, v in got.items() if v is not None}
    status, reason, when = out["good"]
    assert status is VersionStatus.active and reason is None and when is not None
    status, reason, _ = out["import"]
    assert status is VersionStatus.rejected and reason is not None
    assert reason.startswith("The bot did not start")
    # The traceback's exception line, as the bot's stderr has it.
    assert "ModuleNotFoundError: No module named 'no_such_module_for_cow006'" in reason
    assert "Traceback (most recent call last)" in reason
    status, reason, _ = out["slow"]
    assert status is VersionStatus.rejected and reason is not None
    assert reason.startswith("The bot timed out") and "timeout" in reason
    status, reason, _ = out["illegal"]
    assert status is VersionStatus.rejected and reason is not None
    assert reason.startswith("The bot played illegal moves") and "105" in reason
    # Each run's match is kept for its owner to watch: unrated, finished, one seat (the
    # version's; the built-ins are no versions), its log replays, its seat's stderr kept.
    with db.session_scope(session_factory) as s:
        kept = {
            k: s.scalars(select(Match).join(MatchSeat).where(MatchSeat.version_id == v)).all()
            for k, v in cases.items()
        }
        for name, matches in kept.items():
            assert len(matches) == 1, name
            (match,) = matches
            assert match.kind is MatchKind.validation and not match.rated
            assert match.status is MatchStatus.finished and match.started_at is not None
            (seat,) = match.seats
            log = results.read_log(s, match.id)
            assert log is not None
            cow_log.verify(log)
            assert log["players"][seat.seat]["agent"].endswith("@1")
            if name == "good":
                assert seat.faults == 0 and not seat.forfeited
        (imported,) = kept["import"]
        assert "no_such_module_for_cow006" in (imported.seats[0].stderr or "")
        assert kept["illegal"][0].seats[0].faults > 0
