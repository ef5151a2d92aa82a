"""Fair tables and secret seeds: a bot cannot rebuild the deal, recognise its validation, or sit
with a friend; a spectator cannot compute the hands of a match being played.

The bots in ``bots/fairness/``:

* ``seed_spy`` knows the match seed people type (``cow006 match --seed 3``) and searches for
  the match seed whose published formula gives its own seed, then deals the match with the
  engine's ``deal()``: the runner used to derive every bot's seed from the match seed;
* ``validation_probe`` reports everything it is told (seat labels, players, settings, its
  time), its seat and hand, and whether its upload's digest (the old validation seed, also
  its storage folder's name) deals its hand;
* ``dodger`` plays well when ``hello`` names a built-in (validation) and faults elsewhere;
* ``raw_hello`` is a raw protocol bot that echoes every host message, ``hello`` included.

The platform half runs on SQLite and on PostgreSQL (``db_url``): the seed of a queued, running
or failed match, and a running league's seed, reach admins only, in the API and in the pages,
cached or not; validation looks like a ladder match; matchmaking keeps one owner's versions
apart unless the ladder allows them together.

The sandboxed tests and the PostgreSQL half need the sandbox and the server at
127.0.0.1:5432: they skip without them, with the reason, unless COW006_REQUIRE_SANDBOX=1 /
COW006_REQUIRE_SERVICES=1.
"""

from __future__ import annotations

import json
import random
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import hostile_api as pt
from helpers import services
from helpers.hostile_api import GOOD_HIGH, GOOD_LOW, GOOD_MID, Arena, ladder, user, version
from sqlalchemy import select
from typer.testing import CliRunner

from cow006 import MatchInfo, bots, launch, play_match, verify
from cow006.cli import app as sdk_app
from cow006.host import Limits, RemoteAgent
from cow006_platform import db, results
from cow006_platform.models import (
    AgentVersion,
    Ladder,
    LadderState,
    Match,
    MatchKind,
    MatchStatus,
    VersionStatus,
)
from cow006_workers import runs, scheduler, validation

# Attacks in the sandbox: slow (make test-fast leaves it out).
pytestmark = pytest.mark.slow

FAIR_BOTS = pt.BOTS / "fairness"

# Seeds long enough never to turn up by chance in a page (ids, times, ETags).
CHALLENGE_SEED = 7_345_812_990_123_456_789
LEAGUE_SEED = 6_123_456_789_012_345_678
HELLO_KEYS = {"type", "protocol", "seat", "n_players", "seed", "names", "limits", "settings"}

sdk_cli = CliRunner()


def old_formula(seed: int, n: int) -> list[int]:
    """How the runner derived the agents' seeds from the match seed before (the hole)."""
    rng = random.Random(f"cow006-agents/{seed}")
    return [rng.getrandbits(63) for _ in range(n)]


@pytest.fixture
def arena(db_url: str, tmp_path: Path) -> Iterator[Arena]:
    """The platform's app (page cache on) on a fresh database of either kind."""
    # These tests validate one version again and again.
    yield from pt.arena(db_url, tmp_path, max_validations=100)


@pytest.fixture
def sandboxed_arena(tmp_path: Path) -> Iterator[Arena]:
    """The app on a fresh SQLite file, for the tests that play sandboxed matches (the database
    plays no part in what a bot is told)."""
    services.require_sandbox()
    yield from pt.arena(f"sqlite:///{tmp_path / 'arena.db'}", tmp_path, max_validations=100)


# -- local matches: the bots' own seeds are secret -------------------------------------------------


def test_a_bot_that_knows_the_match_seed_cannot_rebuild_the_hands_from_its_own_seed(
    tmp_path: Path,
) -> None:
    services.require_sandbox()
    spy = str(FAIR_BOTS / "seed_spy.py")
    logs, outputs = [], []
    for name in ("a", "b"):
        path = tmp_path / f"{name}.json"
        argv = ["match", spy, "builtin:random", "builtin:greedy", "--seed", "3"]
        result = sdk_cli.invoke(sdk_app, [*argv, "--log", str(path)])
        assert result.exit_code == 0, result.output
        assert "ATTACK seed_spy" in result.output
        assert "seed_spy: no hand rebuilt from my seed" in result.output
        assert "ESCAPED" not in result.output
        logs.append(json.loads(path.read_text()))
        outputs.append(result.output)
    a, b = logs
    # --seed 3 fixes the deal, and only the deal.
    assert a["seed"] == b["seed"] == 3
    assert a["rounds"][0]["hands"] == b["rounds"][0]["hands"]
    assert a["rounds"][0]["hands"][0] == sorted(a["rounds"][0]["hands"][0])
    # The bots' seeds: fresh for every seat and match, none the formula's result; the log
    # records the one each seat was told.
    seeds = a["agent_seeds"] + b["agent_seeds"]
    assert len(set(seeds)) == len(seeds) == 6
    assert not set(seeds) & set(old_formula(3, 3))
    for log, out in zip(logs, outputs, strict=True):
        assert f"SEED {log['agent_seeds'][0]}" in out
        assert "NAMES p0,p1,p2" in out
        verify(log)
    # The recorded seeds replay the match exactly.
    again = tmp_path / "again.json"
    replay = ["--agent-seeds", ",".join(map(str, a["agent_seeds"])), "--log", str(again)]
    argv = ["match", spy, "builtin:random", "builtin:greedy", "--seed", "3", *replay]
    result = sdk_cli.invoke(sdk_app, argv)
    assert result.exit_code == 0, result.output
    c = json.loads(again.read_text())
    assert {k: v for k, v in c.items() if k != "sandbox"} == {
        k: v for k, v in a.items() if k != "sandbox"
    }


def test_agent_seeds_reach_the_log_only_when_the_match_is_over() -> None:
    from cow006 import Agent, View
    from cow006.host import MatchRunner

    class Peek(Agent):
        """An in-process agent holding the match itself: the most a seat could see."""

        seen: list[bool]
        runner: MatchRunner

        def on_round_start(self, view: View) -> None:
            self.seen.append("agent_seeds" in self.runner.log)

        def play(self, view: View) -> int:
            self.seen.append("agent_seeds" in self.runner.log)
            return min(view.hand)

    peek = Peek()
    peek.seen = []
    runner = MatchRunner([peek, bots.make("random")], seed=3)
    peek.runner = runner
    log = runner.run()
    assert peek.seen and not any(peek.seen)
    assert len(log["agent_seeds"]) == 2


def test_hello_tells_seat_labels_never_agent_names_or_owners() -> None:
    # A raw protocol bot (this test's own, benign) run by a plain launcher: it sees the exact
    # lines the host writes.
    raw = RemoteAgent(
        FAIR_BOTS / "raw_hello.py",
        limits=Limits(startup=20.0, decision=10.0, bank=30.0),
        launcher=lambda p: launch.spawn([sys.executable, "-I", str(p)], FAIR_BOTS),
    )
    names = ["alice-secret@3", "builtin:random", "bob-the-owner@1"]
    try:
        log = play_match([raw, bots.make("random"), bots.make("greedy")], seed=5, names=names)
    finally:
        raw.close()
    lines = [json.loads(x[5:]) for x in raw.stderr.splitlines() if x.startswith("HOST ")]
    hello = lines[0]
    assert hello["type"] == "hello" and set(hello) == HELLO_KEYS
    assert hello["names"] == ["p0", "p1", "p2"] and hello["seat"] == 0
    assert hello["n_players"] == 3
    assert hello["seed"] == log["agent_seeds"][0]
    # Nothing the bot was sent names anyone, or holds another seat's seed.
    for word in ("alice", "secret", "builtin", "bob", "owner", "random", "greedy"):
        assert word not in raw.stderr
    for other in log["agent_seeds"][1:]:
        assert str(other) not in raw.stderr
    # The log keeps the names for the owners.
    assert [p["agent"] for p in log["players"]] == names
    # Whatever names a caller hands the host, a bot process is told labels.
    direct = RemoteAgent(FAIR_BOTS / "raw_hello.py", limits=raw.limits, launcher=raw.launcher)
    try:
        direct.on_match_start(MatchInfo(1, 2, 9, ("alice-secret@3", "bob-the-owner@1")))
    finally:
        direct.close()
    first = json.loads(direct.stderr.splitlines()[0][5:])
    assert first["type"] == "hello" and first["names"] == ["p0", "p1"] and first["seat"] == 1
    assert "secret" not in direct.stderr and "owner" not in direct.stderr


# -- the platform: a match's seed is for admins until it is over -----------------------------------


def _finish(a: Arena, match_id: int) -> None:
    """Play match ``match_id`` in-process with built-ins (its seed) and store the result."""
    with db.session_scope(a.factory) as s:
        m = s.get(Match, match_id)
        assert m is not None
        seed, n = m.seed, len(m.seats)
    log = play_match([bots.make("random") for _ in range(n)], seed=seed)
    with db.session_scope(a.factory) as s:
        assert results.finish_match(s, match_id, log, [None] * n)


def test_the_seed_of_a_match_in_play_is_for_admins_only(arena: Arena) -> None:
    c = arena.client
    _root, admin = user(arena, "root", admin=True)
    alice, alice_h = user(arena, "alice")
    bob, _bob_h = user(arena, "bob")
    _carol, carol_h = user(arena, "carol")
    ant = version(arena, alice, "ant", GOOD_HIGH)
    bee = version(arena, bob, "bee", GOOD_LOW)
    lid = ladder(arena, 2, [ant, bee])
    vids = [ant[1], bee[1]]
    with db.session_scope(arena.factory) as s:
        queued = results.create_match(s, kind=MatchKind.ladder, version_ids=vids, ladder_id=lid)
        running = results.create_match(s, kind=MatchKind.ladder, version_ids=vids, ladder_id=lid)
        failed = results.create_match(s, kind=MatchKind.ladder, version_ids=vids, ladder_id=lid)
        done = results.create_match(s, kind=MatchKind.ladder, version_ids=vids, ladder_id=lid)
        running.status = MatchStatus.running
        s.flush()
        results.fail_match(s, failed.id, "it broke")
        ids = {"queued": queued.id, "running": running.id, "failed": failed.id}
        seeds = {"queued": queued.seed, "running": running.seed, "failed": failed.seed}
        done_id, done_seed = done.id, done.seed
    _finish(arena, done_id)
    # A challenge may ask for a seed (to replay a deal); it is not shown back before the end.
    r = c.post(
        "/api/challenges",
        json={"version_ids": vids, "seed": CHALLENGE_SEED},
        headers=carol_h,
    )
    assert r.status_code == 201 and r.json()["seed"] is None
    ids["challenge"], seeds["challenge"] = r.json()["id"], CHALLENGE_SEED
    # A league: every match seed derives from its seed.
    league = c.post(
        "/api/leagues",
        json={"name": "spring", "entrants": vids, "table_size": 2, "seed": LEAGUE_SEED},
        headers=admin,
    ).json()
    assert league["seed"] == LEAGUE_SEED  # its creator is an admin
    assert c.post(f"/api/leagues/{league['id']}/start", headers=admin).status_code == 200
    with db.session_scope(arena.factory) as s:
        lm = s.scalars(select(Match).where(Match.league_id == league["id"])).one()
        ids["league"], seeds["league"] = lm.id, lm.seed
    hidden = [str(v) for v in seeds.values()] + [str(LEAGUE_SEED)]

    public = [
        "/api/matches",
        "/api/matches?status=queued",
        "/api/matches?status=running",
        "/api/matches?kind=challenge",
        f"/api/matches?agent_id={ant[0]}",
        f"/api/matches?ladder_id={lid}",
        f"/api/leagues/{league['id']}",
        "/api/leagues",
        f"/api/leagues/{league['id']}/schedule",
        "/",
        f"/ladders/{lid}",
        f"/agents/{ant[0]}",
        f"/leagues/{league['id']}",
        *(f"/api/matches/{i}" for i in ids.values()),
        *(f"/matches/{i}" for i in ids.values()),
    ]

    def check_hidden(headers: dict[str, str] | None) -> None:
        for path in public:
            r = c.get(path, headers=headers)
            assert r.status_code == 200, (path, r.status_code)
            for seed in hidden:
                assert seed not in r.text, (path, seed)

    check_hidden(None)
    check_hidden(None)  # again: answered from the page cache now
    check_hidden(alice_h)  # an owner of the seats
    check_hidden(carol_h)  # the challenger who chose a seed
    for name, mid in ids.items():
        assert c.get(f"/api/matches/{mid}").json()["seed"] is None, name
        assert c.get(f"/api/matches/{mid}", headers=admin).json()["seed"] == seeds[name], name
        assert c.get(f"/api/matches/{mid}/log").status_code == 404
    listed = {m["id"]: m["seed"] for m in c.get("/api/matches", headers=admin).json()["items"]}
    assert all(listed[mid] == seeds[name] for name, mid in ids.items())
    assert c.get(f"/api/leagues/{league['id']}", headers=admin).json()["seed"] == LEAGUE_SEED
    schedule = c.get(f"/api/leagues/{league['id']}/schedule", headers=admin).json()["items"]
    assert [m["seed"] for m in schedule] == [seeds["league"]]
    check_hidden(None)  # the admins' answers never reach the anonymous cache
    # Once a match is over its deals are public in its log, and so is its seed.
    finished = c.get(f"/api/matches/{done_id}").json()
    assert finished["status"] == "finished" and finished["seed"] == done_seed
    assert c.get(f"/api/matches/{done_id}/log").json()["seed"] == done_seed
    assert str(done_seed) in c.get(f"/matches/{done_id}").text


def test_a_finished_league_shows_its_seed(arena: Arena) -> None:
    c = arena.client
    _root, admin = user(arena, "root", admin=True)
    alice, _ = user(arena, "alice")
    bob, _ = user(arena, "bob")
    vids = [version(arena, alice, "ant", GOOD_HIGH)[1], version(arena, bob, "bee", GOOD_LOW)[1]]
    body = {"name": "autumn", "entrants": vids, "table_size": 2, "seed": LEAGUE_SEED}
    league = c.post("/api/leagues", json=body, headers=admin).json()
    assert c.post(f"/api/leagues/{league['id']}/start", headers=admin).status_code == 200
    assert c.get(f"/api/leagues/{league['id']}").json()["seed"] is None
    with db.session_scope(arena.factory) as s:
        mid = s.scalars(select(Match.id).where(Match.league_id == league["id"])).one()
    _finish(arena, mid)
    scheduler.advance_league(arena.factory, league["id"])
    got = c.get(f"/api/leagues/{league['id']}").json()
    assert got["state"] == "finished" and got["seed"] == LEAGUE_SEED


# -- validation looks like a ladder match ----------------------------------------------------------

PROBE = re.compile(r"PROBE (\{.*?\})(?:\n|$)")


def _probe(text: str) -> dict[str, Any]:
    m = PROBE.search(text)
    assert m is not None, text
    found: dict[str, Any] = json.loads(m.group(1))
    return found


# A bot process that cannot start within the 5 s start-up limit is the machine's load (these
# bots start at once), not what these tests are about: such a run is played again.
ATTEMPTS = 3


def _validate(a: Arena, vid: int) -> AgentVersion:
    for _ in range(ATTEMPTS):
        with db.session_scope(a.factory) as s:
            v = s.get(AgentVersion, vid)
            assert v is not None
            v.status = VersionStatus.pending
        validation.validate(a.factory, a.cfg, vid)
        with db.session_scope(a.factory) as s:
            v = s.get(AgentVersion, vid)
            assert v is not None
            s.expunge(v)
        if not (v.reason or "").startswith("The bot did not start"):
            break
    return v


def test_validation_looks_like_a_ladder_match_and_its_seed_is_random(
    sandboxed_arena: Arena,
) -> None:
    a = sandboxed_arena
    probe_source = (FAIR_BOTS / "validation_probe.py").read_text()
    owners = [user(a, f"owner{i}")[0] for i in range(12)]
    # A closed ladder first (not the one a version would play in), then the open one.
    ladder(a, 5, [], state=LadderState.closed)
    others = [
        version(a, owners[i], f"other{i}", src)
        for i, src in enumerate((GOOD_HIGH, GOOD_LOW, GOOD_MID))
    ]
    # The same upload, as several agents: each validation is a new match.
    probes = [version(a, owners[3 + i], f"probe{i}", probe_source) for i in range(8)]
    lid = ladder(a, 4, [*others, probes[0]], decision_time=0.7, time_bank=1.6)
    seen = []
    for _agent_id, vid in probes:
        v = _validate(a, vid)
        assert v.status is VersionStatus.rejected and v.reason is not None
        assert "ESCAPED" not in v.reason
        seen.append(_probe(v.reason))
    assert not any(p["rebuilt"] for p in seen)  # the seed is not the upload's digest
    assert len({json.dumps(p["hand"]) for p in seen}) == len(seen)  # random seeds
    assert len({p["seat"] for p in seen}) > 1  # a random seat, as ladder tables shuffle
    # The same table as the ladder's to the bot: players, labels, settings, time.
    for _ in range(ATTEMPTS):
        with db.session_scope(a.factory) as s:
            mid = results.create_match(
                s,
                kind=MatchKind.ladder,
                version_ids=[others[0][1], probes[0][1], others[1][1], others[2][1]],
                ladder_id=lid,
            ).id
        runs.run_match(a.factory, a.cfg, mid, None)
        with db.session_scope(a.factory) as s:
            m = s.get(Match, mid)
            assert m is not None and m.status is MatchStatus.finished, m and m.error
            log = results.read_log(s, mid)
        assert log is not None
        if not any(f["kind"] == "startup" for f in log["faults"]):
            break
    ladder_probe = _probe("\n".join(f["detail"] for f in log["faults"] if f["seat"] == 1))
    assert ladder_probe["seat"] == 1

    def shape(p: dict[str, Any]) -> tuple[Any, ...]:
        return (p["n"], p["names"], p["settings"], p["time_left"])

    # 4 seats, opaque labels, no settings, the ladder's 0.7 s + 1.6 s (not the platform's
    # validation limits, 0.5 s + 1.0 s here).
    assert shape(ladder_probe) == (4, ["p0", "p1", "p2", "p3"], {}, 2.3)
    for p in seen:
        assert shape(p) == shape(ladder_probe), p


def test_a_bot_that_behaves_only_in_validation_is_rejected(sandboxed_arena: Arena) -> None:
    a = sandboxed_arena
    owner, _ = user(a, "dodgy")
    _agent, vid = version(a, owner, "dodger", (FAIR_BOTS / "dodger.py").read_text())
    v = _validate(a, vid)
    # It cannot tell its validation from the arena, so it faults where it would fault later.
    assert v.status is VersionStatus.rejected, v.reason
    assert v.reason is not None and "illegal" in v.reason
    assert "validating=False" in v.reason


# -- ladder tables: one owner's versions apart -----------------------------------------------------


def test_one_owners_versions_never_share_a_ladder_table_unless_allowed(arena: Arena) -> None:
    owners = [user(arena, f"o{i}")[0] for i in range(3)]
    # Three owners with two agents each: plenty of tables with a pair of one owner's bots.
    entries = [version(arena, owners[i % 3], f"bot{i}", f"# {i}\n{GOOD_HIGH}") for i in range(6)]
    owner_of = {vid: owners[i % 3] for i, (_aid, vid) in enumerate(entries)}

    def tables(lid: int) -> list[list[int]]:
        scheduler.refill_ladder(arena.factory, lid, 40, random.Random(7))
        with db.session_scope(arena.factory) as s:
            matches = s.scalars(select(Match).where(Match.ladder_id == lid)).all()
            return [[seat.version_id for seat in m.seats] for m in matches]

    apart = tables(ladder(arena, 3, entries))
    assert len(apart) == 40
    for table in apart:
        assert len({owner_of[v] for v in table}) == 3, table
    together = tables(ladder(arena, 3, entries, allow_same_owner=True))
    assert len(together) == 40
    assert any(len({owner_of[v] for v in table}) < 3 for table in together)
    # Two seats of one owner only: a ladder of 3 seats cannot seat 2 owners apart.
    two = [e for i, e in enumerate(entries) if i % 3 != 2]
    assert tables(ladder(arena, 3, two)) == []


def test_admins_create_ladders_that_allow_one_owner_at_a_table(arena: Arena) -> None:
    c = arena.client
    _root, admin = user(arena, "root", admin=True)
    r = c.post("/api/ladders", json={"name": "friends"}, headers=admin)
    assert r.status_code == 201 and r.json()["allow_same_owner"] is False
    body = {"name": "house", "allow_same_owner": True}
    r = c.post("/api/ladders", json=body, headers=admin)
    assert r.status_code == 201 and r.json()["allow_same_owner"] is True
    assert c.get(f"/api/ladders/{r.json()['id']}").json()["allow_same_owner"] is True
    with db.session_scope(arena.factory) as s:
        row = s.get(Ladder, r.json()["id"])
        assert row is not None and row.allow_same_owner is True
