"""A match run with real, sandboxed bot processes (``runs.run_match``), without Celery.

Bots are stored like uploads.  These tests need the sandbox (bubblewrap, seccomp): without it
they skip with the reason, except when ``COW006_REQUIRE_SANDBOX=1`` (CI), where they fail.
Only the fail-closed and missing-files tests run without it.  Limits are short and the bots
trivial, so each match takes about a second.
"""

from __future__ import annotations

import pytest
from helpers import services
from helpers import workers as wt
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from cow006 import sandbox, verify
from cow006_platform import db, results
from cow006_platform.models import (
    AgentVersion,
    Match,
    MatchKind,
    MatchStatus,
    Rating,
    VersionStatus,
)
from cow006_platform.settings import Settings
from cow006_workers import runs, validation

Factory = sessionmaker[Session]

LOW = (
    "import sys\n\n"
    "def play(view):\n"
    "    print('low plays', min(view.hand), file=sys.stderr)\n"
    "    return min(view.hand)\n"
)
HIGH = "def play(view):\n    return max(view.hand)\n"
GREEDY = "from cow006.bots import make\n\nagent = make('greedy')\n"


def upload(factory: Factory, cfg: Settings, source: str) -> int:
    """Store a bot like an upload and make it the active version of a new agent; its id."""
    return wt.active_versions(factory, cfg, 1, source=source)[0]


def failed_challenge(factory: Factory, cfg: Settings, version_ids: list[int]) -> Match:
    """Run a new challenge of ``version_ids``, which must fail; the match, read back."""
    with db.session_scope(factory) as s:
        mid = results.create_match(s, kind=MatchKind.challenge, version_ids=version_ids).id
    assert runs.run_match(factory, cfg, mid, None).status == "failed"
    with db.session_scope(factory) as s:
        m = s.get(Match, mid)
        assert m is not None and m.status is MatchStatus.failed
        return m


@pytest.mark.slow
def test_run_match_plays_uploaded_bots_in_the_sandbox(
    session_factory: Factory, settings: Settings
) -> None:
    services.require_sandbox()
    vids = [upload(session_factory, settings, src) for src in (LOW, HIGH, GREEDY)]
    lid = wt.ladder(session_factory, [], decision_time=1.0, time_bank=5.0)
    with db.session_scope(session_factory) as s:
        mid = results.create_match(
            s, kind=MatchKind.ladder, version_ids=vids, ladder_id=lid, seed=12345
        ).id
    assert runs.run_match(session_factory, settings, mid, None).status == "finished"
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
    assert runs.run_match(session_factory, settings, mid, None).status == "skipped"
    with db.session_scope(session_factory) as s:
        m = s.get(Match, mid)
        assert m is not None and m.attempts == 1


def test_a_missing_sandbox_fails_closed(
    session_factory: Factory, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No bwrap, sandbox required: the match fails with the sandbox's sentence, nothing runs."""
    monkeypatch.setenv("COW006_BWRAP", "cow006-no-such-bwrap")
    monkeypatch.delenv("COW006_SANDBOX", raising=False)
    vids = [upload(session_factory, settings, src) for src in (LOW, HIGH)]
    m = failed_challenge(session_factory, settings, vids)
    assert m.error is not None and "bubblewrap is not installed" in m.error
    with db.session_scope(session_factory) as s:
        assert m.attempts == 0 and s.get(results.MatchLog, m.id) is None
        version = s.get(AgentVersion, vids[0])
        assert version is not None
        version.status = VersionStatus.pending
    with pytest.raises(sandbox.SandboxError):
        validation.validate(session_factory, settings, vids[0])
    with db.session_scope(session_factory) as s:
        v = s.get(AgentVersion, vids[0])
        assert v is not None and v.status is VersionStatus.pending  # to be validated again


def test_missing_files_fail_the_match_with_a_sentence(
    session_factory: Factory, settings: Settings
) -> None:
    cfg = settings.model_copy(update={"sandbox": "off"})  # the files are missing first
    vids = wt.active_versions(session_factory, cfg, 2)  # rows without stored files
    m = failed_challenge(session_factory, cfg, vids)
    assert m.error is not None and "missing from storage" in m.error
    assert "\n" not in m.error
