"""The embedded executors run the workers' own code in this process: a league played to its
end by the ``InProcessExecutor``, each round started by the run that settled the last.

Needs the sandbox: without it the test skips with the reason, except when
``COW006_REQUIRE_SANDBOX=1`` (CI), where it fails.
"""

from __future__ import annotations

import pytest
from helpers import services
from helpers import workers as wt
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from cow006_platform import db, leagues
from cow006_platform.models import League, LeagueEntrant, LeagueState, Match, MatchStatus
from cow006_platform.settings import Settings
from cow006_workers.embedded import InProcessExecutor

Factory = sessionmaker[Session]

LOW = "def play(view):\n    return min(view.hand)\n"
HIGH = "def play(view):\n    return max(view.hand)\n"
GREEDY = "from cow006.bots import make\n\nagent = make('greedy')\n"
BOTS = (LOW, HIGH, GREEDY)


@pytest.mark.slow
def test_in_process_executor_plays_a_league_to_the_end(
    session_factory: Factory, settings: Settings
) -> None:
    services.require_sandbox()
    vids = [
        wt.active_versions(session_factory, settings, 1, source=s)[0] for s in (LOW, HIGH, GREEDY)
    ]
    with db.session_scope(session_factory) as s:
        lg = League(name="spring", table_size=3, rounds=2, decision_time=1.0, time_bank=5.0)
        s.add(lg)
        s.flush()
        s.add_all(LeagueEntrant(league_id=lg.id, version_id=vid) for vid in vids)
        s.flush()
        s.refresh(lg)
        lid = lg.id
        first = [m.id for m in leagues.start_league(s, lg)]
    executor = InProcessExecutor(settings, threads=2)
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
