"""Execution with real, sandboxed bot processes: matches, validation, the executors.

Bots are uploaded through ``storage.store_upload`` like any user's.  These tests need the
sandbox (bubblewrap, seccomp): without it they skip with the reason, except when
``COW006_REQUIRE_SANDBOX=1`` (CI), where they fail.  Only the fail-closed test runs without
it.  Limits are short and the bots trivial, so each match takes about a second.
"""

from __future__ import annotations

import os

import datatools as dt
import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from cow006 import sandbox, verify
from cow006_platform import db, execution, leagues, results, storage
from cow006_platform.executor import InProcessExecutor, SynchronousExecutor
from cow006_platform.models import (
    AgentVersion,
    League,
    LeagueState,
    Match,
    MatchKind,
    MatchStatus,
    Rating,
    VersionStatus,
)
from cow006_platform.settings import Settings

Factory = sessionmaker[Session]

LOW = (
    "import sys\n\n"
    "def play(view):\n"
    "    print('low plays', min(view.hand), file=sys.stderr)\n"
    "    return min(view.hand)\n"
)
HIGH = "def play(view):\n    return max(view.hand)\n"
GREEDY = "from cow006.bots import make\n\nagent = make('greedy')\n"
IMPORT_ERROR = "import os\nimport no_such_module_for_cow006\n\ndef play(view):\n    return 1\n"
SLOW = "import time\n\ndef play(view):\n    time.sleep(30)\n    return min(view.hand)\n"
ILLEGAL = "def play(view):\n    return 105  # never in a hand\n"


def _require_sandbox() -> None:
    status = sandbox.probe()
    if status.ok:
        return
    reason = f"these tests need the sandbox, which does not work here: {status.reason}"
    if os.environ.get("COW006_REQUIRE_SANDBOX") == "1":
        pytest.fail(reason + " (COW006_REQUIRE_SANDBOX=1)", pytrace=False)
    pytest.skip(reason)


@pytest.fixture
def cfg(settings: Settings) -> Settings:
    return settings.model_copy(
        update={"sandbox": "on", "validation_decision": 0.3, "validation_bank": 0.3}
    )


def upload(factory: Factory, cfg: Settings, source: str) -> int:
    """Store a bot like an upload and make it a version of a new agent; its id."""
    stored = storage.store_upload(cfg, "bot.py", source.encode())
    with db.session_scope(factory) as s:
        v = dt.version(s, sha256=stored.sha256)
        return v.id


def test_run_match_plays_uploaded_bots_in_the_sandbox(
    session_factory: Factory, cfg: Settings
) -> None:
    _require_sandbox()
    vids = [upload(session_factory, cfg, src) for src in (LOW, HIGH, GREEDY)]
    with db.session_scope(session_factory) as s:
        lid = dt.ladder(s, decision_time=1.0, time_bank=5.0).id
        mid = results.create_match(
            s, kind=MatchKind.ladder, version_ids=vids, ladder_id=lid, seed=12345
        ).id
    execution.run_match(session_factory, cfg, mid)
    with db.session_scope(session_factory) as s:
        m = s.get(Match, mid)
        assert m is not None
        assert m.status is MatchStatus.finished, m.error
        assert m.attempts == 1 and m.started_at is not None and m.worker
        assert m.rating_applied and len(s.scalars(select(Rating)).all()) == 3
        log = results.read_log(s, mid)
        seats = sorted(m.seats, key=lambda x: x.seat)
        labels = [x.version.label for x in seats]
        stderr = [x.stderr for x in seats]
        faults = [x.faults for x in seats]
    assert log is not None
    verify(log)
    assert log["seed"] == 12345
    assert [p["agent"] for p in log["players"]] == labels
    assert isinstance(log["sandbox"], dict) and log["sandbox"]["kind"] == "bwrap"
    assert faults == [0, 0, 0] and log["faults"] == []
    assert stderr[0] is not None and "low plays" in stderr[0]
    # Done is done: running it again changes nothing.
    execution.run_match(session_factory, cfg, mid)
    with db.session_scope(session_factory) as s:
        m = s.get(Match, mid)
        assert m is not None and m.attempts == 1


def test_validation_accepts_good_bots_and_explains_bad_ones(
    session_factory: Factory, cfg: Settings
) -> None:
    _require_sandbox()
    cases = {
        "good": upload(session_factory, cfg, HIGH),
        "import": upload(session_factory, cfg, IMPORT_ERROR),
        "slow": upload(session_factory, cfg, SLOW),
        "illegal": upload(session_factory, cfg, ILLEGAL),
    }
    executor = SynchronousExecutor(session_factory, cfg)
    for vid in cases.values():
        executor.submit_validation(vid)
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


def test_a_missing_sandbox_fails_closed(
    session_factory: Factory, cfg: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No bwrap, sandbox required: the match fails with the sandbox's sentence, nothing runs."""
    monkeypatch.setenv("COW006_BWRAP", "cow006-no-such-bwrap")
    monkeypatch.delenv("COW006_SANDBOX", raising=False)
    vids = [upload(session_factory, cfg, src) for src in (LOW, HIGH)]
    with db.session_scope(session_factory) as s:
        mid = results.create_match(s, kind=MatchKind.challenge, version_ids=vids).id
    execution.run_match(session_factory, cfg, mid)
    with db.session_scope(session_factory) as s:
        m = s.get(Match, mid)
        assert m is not None and m.status is MatchStatus.failed
        assert m.error is not None and "bubblewrap is not installed" in m.error
        assert m.attempts == 0 and s.get(results.MatchLog, mid) is None
    with pytest.raises(sandbox.SandboxError):
        execution.validate_version(session_factory, cfg, vids[0])
    with db.session_scope(session_factory) as s:
        v = s.get(AgentVersion, vids[0])
        assert v is not None and v.status is VersionStatus.pending  # to be validated again


def test_missing_files_fail_the_match_with_a_sentence(
    session_factory: Factory, cfg: Settings
) -> None:
    vids = dt.versions(session_factory, 2)  # rows without stored files
    with db.session_scope(session_factory) as s:
        mid = results.create_match(s, kind=MatchKind.challenge, version_ids=vids).id
    execution.run_match(session_factory, cfg, mid)
    with db.session_scope(session_factory) as s:
        m = s.get(Match, mid)
        assert m is not None and m.status is MatchStatus.failed
        assert m.error is not None and "missing from storage" in m.error
        assert "\n" not in m.error


def test_in_process_executor_plays_a_league_to_the_end(
    session_factory: Factory, cfg: Settings
) -> None:
    _require_sandbox()
    vids = [upload(session_factory, cfg, src) for src in (LOW, HIGH, GREEDY)]
    with db.session_scope(session_factory) as s:
        lg = dt.league(s, vids, table_size=3, rounds=2, decision_time=1.0, time_bank=5.0)
        lid = lg.id
        first = [m.id for m in leagues.start_league(s, lg)]
    executor = InProcessExecutor(session_factory, cfg, threads=2)
    try:
        for mid in first:
            executor.submit_match(mid)
        assert executor.wait_idle(120)
    finally:
        executor.close()
    with db.session_scope(session_factory) as s:
        lg2 = s.get(League, lid)
        assert lg2 is not None and lg2.state is LeagueState.finished
        matches = s.scalars(select(Match).where(Match.league_id == lid)).all()
        assert [(m.league_round, m.status) for m in matches] == [
            (1, MatchStatus.finished),
            (2, MatchStatus.finished),
        ]
    with pytest.raises(RuntimeError):
        executor.submit_match(first[0])
