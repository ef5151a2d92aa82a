"""Helpers of the web tests: a seeded arena, a tiny HTML tree, and placements replayed with
the reference engine (the SDK's replay stepper).

``seed`` fills a database the way the platform does: users with real tokens, agents with an
active and a rejected version, a ladder whose matches are played by built-in bots and stored
through ``results.create_match`` / ``results.finish_match`` (so ratings, rating history and
seats are all consistent), a league started with ``leagues.start_league`` with one match
played, a queued ladder match and a failed challenge.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from cow006 import bots, play_match
from cow006.replay import Placement, Reveal, steps
from cow006_platform import db, results, security
from cow006_platform import leagues as league_service
from cow006_platform.models import (
    Agent,
    AgentVersion,
    Ladder,
    LadderEntry,
    League,
    LeagueEntrant,
    Match,
    MatchKind,
    VersionStatus,
    utcnow,
)

BUILTINS = ["greedy", "random", "safe", "random"]
REJECTION = "ImportError: no module named 'numpy'\n  File \"bot.py\", line 1"


@dataclass
class Seeded:
    """What ``seed`` made, by id."""

    ladder_id: int
    league_id: int
    agent_ids: list[int]  # alpha, beta (alice's), gamma, delta (bob's)
    version_ids: list[int]  # the active version of each, in the same order
    match_ids: list[int]  # finished ladder matches, oldest first
    league_match_ids: list[int]  # the league's round-1 matches (the first one finished)
    queued_match_id: int
    failed_match_id: int
    alice_token: str
    bob_token: str
    alice_id: int
    names: dict[int, str] = field(default_factory=dict)  # agent id -> name


def _version(
    session: Session, agent: Agent, number: int, status: VersionStatus, reason: str | None = None
) -> AgentVersion:
    row = AgentVersion(
        agent_id=agent.id,
        number=number,
        sha256=hashlib.sha256(f"{agent.name}{number}".encode()).hexdigest(),
        filename="bot.py",
        size=120 + number,
        unpacked_size=120 + number,
        files=1,
        status=status,
        reason=reason,
        validated_at=utcnow(),
    )
    session.add(row)
    session.flush()
    return row


def finish_stored(
    factory: sessionmaker[Session], match_id: int, builtins: list[str], *, stderr: bool = True
) -> dict[str, Any]:
    """Play a queued match with ``builtins`` at its seats (its seed) and store the result as
    a worker would; each seat's stderr says hello unless ``stderr`` is False."""
    with db.session_scope(factory) as session:
        match = session.get(Match, match_id)
        assert match is not None
        labels = [s.version.label for s in sorted(match.seats, key=lambda s: s.seat)]
        seed = match.seed
    log = play_match([bots.make(b) for b in builtins], seed=seed, names=labels)
    said: list[str | None] = [
        f"{label} says hello in match {match_id}\n" if stderr else None for label in labels
    ]
    with db.session_scope(factory) as session:
        assert results.finish_match(session, match_id, log, said)
    return log


def play_stored(
    factory: sessionmaker[Session],
    version_ids: list[int],
    seed: int,
    builtins: list[str],
    **fields: Any,
) -> int:
    """Create a match of ``version_ids``, play it with ``builtins`` and store its result."""
    with db.session_scope(factory) as session:
        match_id = results.create_match(session, version_ids=version_ids, seed=seed, **fields).id
    finish_stored(factory, match_id, builtins)
    return match_id


def seed(factory: sessionmaker[Session], matches: int = 5) -> Seeded:
    """Fill an empty database (see the module docstring); ``matches`` rated ladder matches."""
    with db.session_scope(factory) as session:
        alice, alice_token = security.create_user(session, "alice")
        bob, bob_token = security.create_user(session, "bob")
        agents = [
            Agent(owner_id=owner.id, name=name)
            for owner, name in ((alice, "alpha"), (alice, "beta"), (bob, "gamma"), (bob, "delta"))
        ]
        session.add_all(agents)
        session.flush()
        _version(session, agents[0], 1, VersionStatus.rejected, REJECTION)
        versions = [
            _version(session, a, 2 if i == 0 else 1, VersionStatus.active)
            for i, a in enumerate(agents)
        ]
        ladder = Ladder(name="main", players=4)
        session.add(ladder)
        session.flush()
        session.add_all(
            LadderEntry(ladder_id=ladder.id, agent_id=a.id, version_id=v.id)
            for a, v in zip(agents, versions, strict=True)
        )
        league = League(name="spring", table_size=2, rounds=3, seed=7)
        session.add(league)
        session.flush()
        session.add_all(LeagueEntrant(league_id=league.id, version_id=v.id) for v in versions)
        ids = [v.id for v in versions]
        agent_ids = [a.id for a in agents]
        names = {a.id: a.name for a in agents}
        ladder_id, league_id, alice_id = ladder.id, league.id, alice.id
    match_ids = []
    for i in range(matches):
        order = ids[i % 4 :] + ids[: i % 4]  # rotate the seats
        match_id = play_stored(
            factory, order, 1000 + i, BUILTINS, kind=MatchKind.ladder, ladder_id=ladder_id
        )
        match_ids.append(match_id)
    with db.session_scope(factory) as session:
        queued = results.create_match(
            session, kind=MatchKind.ladder, version_ids=ids, ladder_id=ladder_id, seed=99
        ).id
        failed = results.create_match(
            session, kind=MatchKind.challenge, version_ids=ids[:2], seed=98
        ).id
        results.fail_match(session, failed, "The match could not be run (a test said so).")
        league_row = session.get(League, league_id)
        assert league_row is not None
        round_one = league_service.start_league(session, league_row)
        league_matches = [m.id for m in round_one]
    finish_stored(factory, league_matches[0], ["greedy", "safe"], stderr=False)
    return Seeded(
        ladder_id=ladder_id,
        league_id=league_id,
        agent_ids=agent_ids,
        version_ids=ids,
        match_ids=match_ids,
        league_match_ids=league_matches,
        queued_match_id=queued,
        failed_match_id=failed,
        alice_token=alice_token,
        bob_token=bob_token,
        alice_id=alice_id,
        names=names,
    )


# --- placements, replayed with the reference engine ----------------------------------------


def placement_steps(log: dict[str, Any], round_index: int) -> Iterator[tuple[int, int, list[Any]]]:
    """(turn, step, rows) of every step of one round, as the viewer numbers them: step 0 is
    the reveal (rows before the turn), step k the rows after the k-th lowest card is placed.
    From the SDK's replay (``cow006.replay.steps``)."""
    for step in steps(log):
        if step.round != round_index:
            continue
        if type(step) is Reveal:
            yield step.turn, 0, [list(r) for r in step.rows]
        elif type(step) is Placement:
            rows = [list(r) for r in step.rows]
            if step.nth == len(log["players"]):
                turn = log["rounds"][round_index]["turns"][step.turn]
                assert rows == turn["rows"], "the engine disagrees with the log"
            yield step.turn, step.nth, rows


# --- a tiny HTML tree (the standard library's parser) ----------------------------------------

VOID = frozenset(
    {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "wbr"}
)


class Node:
    """An element: tag, attributes, children (Nodes and strings)."""

    def __init__(self, tag: str, attrs: dict[str, str | None], parent: Node | None) -> None:
        self.tag = tag
        self.attrs = attrs
        self.parent = parent
        self.children: list[Node | str] = []

    def get(self, name: str, default: str | None = None) -> str | None:
        return self.attrs.get(name, default)

    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)

    def iter(self) -> Iterator[Node]:
        for c in self.children:
            if isinstance(c, Node):
                yield c
                yield from c.iter()

    def find_all(self, tag: str | None = None, **attrs: str | bool) -> list[Node]:
        """Descendants with ``tag`` and attributes (True: present; a string: equal);
        ``class_`` matches one class among the element's."""
        out = []
        for node in self.iter():
            if tag is not None and node.tag != tag:
                continue
            ok = True
            for name, want in attrs.items():
                if name == "class_":
                    ok = str(want) in (node.get("class") or "").split()
                else:
                    key = name.rstrip("_").replace("_", "-")
                    ok = key in node.attrs if want is True else node.get(key) == want
                if not ok:
                    break
            if ok:
                out.append(node)
        return out

    def find(self, tag: str | None = None, **attrs: str | bool) -> Node:
        found = self.find_all(tag, **attrs)
        assert found, f"no <{tag}> with {attrs}"
        return found[0]

    def by_id(self, ident: str) -> Node:
        return self.find(id=ident)


class _Builder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#document", {}, None)
        self.current = self.root

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        node = Node(tag, dict(attrs), self.current)
        self.current.children.append(node)
        if tag not in VOID:
            self.current = node

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.current.children.append(Node(tag, dict(attrs), self.current))

    def handle_endtag(self, tag: str) -> None:
        node: Node | None = self.current
        while node is not None and node.tag != tag:
            node = node.parent
        if node is not None and node.parent is not None:
            self.current = node.parent

    def handle_data(self, data: str) -> None:
        self.current.children.append(data)


def parse_html(text: str) -> Node:
    builder = _Builder()
    builder.feed(text)
    builder.close()
    return builder.root


def sign_in(client: Any, headers: dict[str, str]) -> None:
    """Sign ``client`` in with the /login form, as a browser without scripts posts it (the
    token of the API ``headers``): the session cookie."""
    doc = parse_html(client.get("/login").text)
    csrf = doc.by_id("signin-form").find("input", name="csrf").get("value") or ""
    token = headers["Authorization"].removeprefix("Bearer ")
    r = client.post(
        "/login", data={"csrf": csrf, "token": token, "next": "/"}, follow_redirects=False
    )
    assert r.status_code == 303, r.text[:300]


def signed_in_csrf(client: Any, path: str) -> str:
    """The CSRF field of a signed-in user's forms, read from the page at ``path`` (the
    header's sign-out form carries it)."""
    doc = parse_html(client.get(path).text)
    form = doc.find("form", class_="sign-out-form")
    return form.find("input", name="csrf").get("value") or ""
