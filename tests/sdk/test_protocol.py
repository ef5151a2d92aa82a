"""The protocol messages: encoding, strict parsing of bot replies, the view on the wire, and
the example exchange in docs/protocol.md (which must stay parseable and consistent)."""

from __future__ import annotations

import json
import random
import re
import time
from pathlib import Path
from typing import Any

import pytest

from cow006 import View, engine, protocol
from cow006._faults import FAULT_KINDS, BotFault
from cow006._view import observe

DOC = Path(__file__).resolve().parents[2] / "docs" / "protocol.md"


def fault_kind(line: bytes, kind: str = "play") -> str | None:
    """The fault a reply line earns (None: it is a well-typed reply)."""
    try:
        protocol.reply_value(protocol.decode_line(line), kind)
    except BotFault as fault:
        assert fault.kind in FAULT_KINDS
        return fault.kind
    return None


# -- encoding --------------------------------------------------------------------------------
def test_messages_encode_as_one_json_line() -> None:
    msgs = [
        protocol.hello(1, 3, 2**63 - 1, ["a", "b", "ü"], {"decision": 1.0}, None),
        protocol.ready("Корова"),
        protocol.error("bot.py failed to import"),
        protocol.request("play", 1, {"hand": [1]}),
        protocol.request("take_row", 2, {"hand": [1], "card": 1}),
        protocol.reply("play", 1, 5),
        protocol.reply("take_row", 2, 3),
        protocol.error_reply(3, "ValueError: x"),
        protocol.round_start({"hand": [1]}),
        protocol.round_end({"penalties": [1, 2]}),
        protocol.match_end([70, 3], [2, 1]),
    ]
    for msg in msgs:
        data = protocol.encode(msg)
        assert data.endswith(b"\n") and data.count(b"\n") == 1
        assert json.loads(data) == msg
    assert msgs[0]["protocol"] == msgs[1]["protocol"] == protocol.VERSION == 1
    assert protocol.reply("play", 4, 9) == {"id": 4, "card": 9}
    assert protocol.reply("take_row", 4, 2) == {"id": 4, "row": 2}
    with pytest.raises(ValueError):
        protocol.encode({"card": float("nan")})
    with pytest.raises(ValueError):
        protocol.request("pass", 1, {})


def test_decode_host_is_plain_json() -> None:
    assert protocol.decode_host(b'{"type":"play","id":1,"view":{}}\n')["id"] == 1
    with pytest.raises(ValueError):
        protocol.decode_host(b"[1]")


# -- strict parsing of replies ---------------------------------------------------------------
@pytest.mark.parametrize(
    ("line", "kind"),
    [
        (b'{"id":1,"card":5}', None),
        (b' {"id": 1, "card": 5, "note": "extra fields are fine"} \r', None),
        (b'{"id":1,"card":5', "malformed_json"),
        (b"", "malformed_json"),
        (b"card 5", "malformed_json"),
        (b"5", "malformed_json"),
        (b"[5]", "malformed_json"),
        (b'"5"', "malformed_json"),
        (b"\xff\xfe{}", "malformed_json"),
        (b'{"id":1,"card":5,"card":6}', "malformed_json"),
        (b'{"id":1,"card":5}{"id":1}', "malformed_json"),
        (b'{"id":1,"card":' + b"[" * 33 + b"]" * 33 + b"}", "nested_json"),
        (b'{"id":1,"card":' + b"[" * 100_000, "nested_json"),
        (b'{"id":1,"card":NaN}', "nan"),
        (b'{"id":1,"card":Infinity}', "nan"),
        (b'{"id":1,"card":-Infinity}', "nan"),
        (b'{"id":1,"card":1e999}', "nan"),
        (b'{"id":1,"card":true}', "bad_type"),
        (b'{"id":1,"card":false}', "bad_type"),
        (b'{"id":1,"card":5.0}', "bad_type"),
        (b'{"id":1,"card":"5"}', "bad_type"),
        (b'{"id":1,"card":null}', "bad_type"),
        (b'{"id":1,"card":[5]}', "bad_type"),
        (b'{"id":1,"row":2}', "bad_type"),
        (b'{"id":1,"card":' + b"9" * 5000 + b"}", "bad_type"),
        (b'{"id":1,"error":"ValueError: boom"}', "exception"),
        (b'{"id":1,"card":5,"error":{"why":1}}', "exception"),
        (b'{"id":1,"card":0}', None),  # legal or not is the runner's call: illegal_card
        (b'{"id":1,"card":-3}', None),
    ],
)
def test_reply_parsing(line: bytes, kind: str | None) -> None:
    assert fault_kind(line) == kind


def test_row_replies_and_bools() -> None:
    assert protocol.reply_value(protocol.decode_line(b'{"id":2,"row":3}'), "take_row") == 3
    assert fault_kind(b'{"id":2,"row":true}', "take_row") == "bad_type"
    assert fault_kind(b'{"id":2,"card":3}', "take_row") == "bad_type"
    # 7 is an int: the host passes it on and the engine records illegal_row.
    assert fault_kind(b'{"id":2,"row":7}', "take_row") is None


def test_nesting_depth_is_counted_outside_strings_only() -> None:
    assert not protocol.too_deep(b"[" * 32 + b"]" * 32)
    assert protocol.too_deep(b"[" * 33 + b"]" * 33)
    assert protocol.too_deep(b"{" * 40)  # unterminated: still refused, before any parse
    in_strings = b'{"id":1,"card":4,"s":"' + b"[{" * 1000 + b'\\"[[["}'
    assert not protocol.too_deep(in_strings)
    assert fault_kind(in_strings) is None
    wide = b"[" + b"[]," * 20_000 + b"[]]"  # many brackets, depth 2
    assert not protocol.too_deep(wide)
    started = time.perf_counter()
    assert protocol.too_deep(b"[" * 65536)
    assert not protocol.too_deep(b'"' + b"\\\\[" * 20_000 + b'"')
    assert time.perf_counter() - started < 0.5


# -- the view on the wire --------------------------------------------------------------------
def _state() -> tuple[engine.State, list[int]]:
    state = engine.new_match(3)
    hands, rows = engine.deal(random.Random(5), 3)
    engine.start_round(state, hands, rows)
    starters = [r[0] for r in rows]
    order = engine.reveal(state, [h[0] for h in hands])
    engine.resolve(state, order, lambda seat, card: 0)
    return state, starters


def test_view_round_trip_through_the_wire() -> None:
    state, starters = _state()
    view = observe(state, 1, starters, time_left=1.5)
    wire = protocol.encode(protocol.request("play", 7, view.to_dict()))
    msg = protocol.decode_host(wire)
    back = View.from_dict(msg["view"])
    assert back.to_dict() == view.to_dict()
    assert (back.hand, back.rows, back.revealed, back.time_left) == (
        view.hand,
        view.rows,
        view.revealed,
        1.5,
    )
    assert back.card is None and "card" not in msg["view"]


def test_take_row_view_round_trip() -> None:
    state, starters = _state()
    engine.reveal(state, [h[0] for h in state.hands])  # a turn being resolved
    view = observe(state, 2, starters, card=state.revealed[-1][2], time_left=0.25)
    msg = protocol.decode_host(protocol.encode(protocol.request("take_row", 9, view.to_dict())))
    back = View.from_dict(msg["view"])
    assert back.to_dict() == view.to_dict()
    assert back.card == view.card and back.current == view.current
    assert msg["view"]["current"] == list(state.revealed[-1])


# -- the documented example ------------------------------------------------------------------
def doc_exchange() -> list[tuple[str, bytes]]:
    text = DOC.read_text(encoding="utf-8")
    block = re.search(r"## Example exchange.*?```jsonl\n(.*?)```", text, re.DOTALL)
    assert block, "docs/protocol.md has no jsonl example exchange"
    lines = []
    for raw in block.group(1).splitlines():
        if raw.startswith("#") or not raw.strip():
            continue
        direction, _, payload = raw.partition(" ")
        assert direction in (">", "<"), raw
        lines.append((direction, payload.encode()))
    return lines


def test_the_documented_exchange_is_parseable_and_consistent() -> None:
    exchange = doc_exchange()
    host = [protocol.decode_host(p) for d, p in exchange if d == ">"]
    bot = [protocol.decode_line(p) for d, p in exchange if d == "<"]
    types = [m["type"] for m in host]
    assert types[0] == "hello" and types[-1] == "match_end"
    assert {"hello", "round_start", "play", "take_row", "round_end", "match_end"} <= set(types)
    hello = host[0]
    assert hello["protocol"] == protocol.VERSION
    assert set(hello["limits"]) >= {"startup", "decision", "bank", "max_reply", "stderr_cap"}
    assert bot[0] == protocol.ready(bot[0]["name"])

    # Every request is answered by the next bot line, with its id and a well-typed value.
    pending: dict[str, object] | None = None
    for direction, payload in exchange[2:]:
        if direction == ">":
            msg = protocol.decode_host(payload)
            assert pending is None, "a request was left unanswered"
            if msg["type"] in protocol.REQUESTS:
                pending = msg
            continue
        assert pending is not None, "a bot line nobody asked for"
        answer = protocol.decode_line(payload)
        assert answer["id"] == pending["id"]
        value = protocol.reply_value(answer, str(pending["type"]))
        view = View.from_dict(pending["view"])  # type: ignore[arg-type]
        if pending["type"] == "play":
            assert value in view.hand
        else:
            assert 0 <= value < 4 and view.card is not None and view.target_row(view.card) < 0
        pending = None

    # The round_end entry replays, and agrees with what the seat was shown.
    seat = hello["seat"]
    (entry,) = [m["round"] for m in host if m["type"] == "round_end"][:1]
    state = engine.new_match(hello["n_players"])
    engine.start_round(state, entry["hands"], entry["rows"])
    start_view = next(m["view"] for m in host if m["type"] == "round_start")
    assert start_view["hand"] == entry["hands"][seat]
    for turn in entry["turns"]:
        lowest = {tk["seat"]: tk["row"] for tk in turn["takes"] if tk["reason"] == "lowest"}
        takes = engine.play_turn(state, turn["cards"], lambda s, c, lowest=lowest: lowest[s])
        assert takes == turn["takes"] and state.rows == turn["rows"]
    assert engine.finish_round(state) == entry["penalties"]
    end = host[-1]
    assert end["ranks"] == engine.ranks(end["scores"])


# -- the host's fast paths: the same bytes and objects as the general ones -----------------------
def _decoded(decode: Any, line: bytes) -> Any:
    try:
        return ("ok", decode(line))
    except BotFault as fault:
        return ("fault", fault.kind, fault.detail)


REPLY_LINES = [
    b'{"id":7,"card":42}',
    b'{"id":0,"row":3}',
    b'{"id":7,"card":-0}',
    b'{"id":7,"card":-5}',
    b'{"id":123456789012345678,"card":1}',
    b'{"id":1234567890123456789012,"card":1}',
    b'{"id":7,"card":42.0}',
    b'{"id":7,"card":true}',
    b'{"id":07,"card":42}',
    b'{"id":7,"card":42,"card":43}',
    b'{"card":42,"id":7}',
    b'{"id":7, "card":42}',
    b'{"id":7,"card":42}\r',
    b'{"id":7,"card":42} ',
    b'{"id":7,"cards":42}',
    b'{"id":7,"error":"boom"}',
    b'{"id":7,"card":1e400}',
    b"[1,2]",
    b"",
    b"\xff",
    # Hostile look-alikes: a NUL, escapes (a key spelled with one, a lone surrogate), a
    # key repeated, a huge line, a number of many digits.
    b'{"id":7,"card":42}\x00',
    b'{"id":7,"\\u0063ard":42}',
    b'{"id":7,"card":42,"x":"\\ud800"}',
    b'{"id":7,"id":7,"card":42}',
    b'{"id":7,"card":' + b"9" * 5000 + b"}",
    b'{"id":7,"card":42}' * 2000,
    b"{" * 40 + b"}" * 40,
]


@pytest.mark.parametrize("line", REPLY_LINES)
def test_decode_reply_is_decode_line(line: bytes) -> None:
    assert _decoded(protocol.decode_reply, line) == _decoded(protocol.decode_line, line)


def test_decode_reply_is_decode_line_on_random_replies() -> None:
    rng = random.Random(5)
    alphabet = b'{}[]":,-0123456789idcardrowe. '
    for _ in range(3000):
        base = bytearray(rng.choice(REPLY_LINES[:5]))
        for _ in range(rng.randint(0, 3)):  # a few bytes changed, added or removed
            i = rng.randrange(len(base) + 1)
            op = rng.randrange(3)
            if op == 0 and i < len(base):
                base[i] = rng.choice(alphabet)
            elif op == 1:
                base.insert(i, rng.choice(alphabet))
            elif i < len(base):
                del base[i]
        line = bytes(base)
        assert _decoded(protocol.decode_reply, line) == _decoded(protocol.decode_line, line)


def test_a_request_line_is_the_encoded_request() -> None:
    """``host.view_json`` and ``protocol.request_line`` give the bytes of
    ``encode(request(...))`` for every view of real matches, take-row views included."""
    from cow006 import bots, play_match
    from cow006.host import view_json

    class Spy(type(bots.make("random"))):  # type: ignore[misc]
        def play(self, view: View) -> int:
            check("play", view)
            return int(super().play(view))

        def take_row(self, view: View) -> int:
            check("take_row", view)
            return int(super().take_row(view))

    asked: list[str] = []
    rng = random.Random(2)

    def check(kind: str, view: View) -> None:
        time_left = rng.choice([round(rng.random() * 10, 3), 1.5, 0.0, 3, None])
        d = view.to_dict()
        d["time_left"] = time_left
        want = protocol.encode(protocol.request(kind, 11, d))
        assert protocol.request_line(kind, 11, view_json(view, time_left)) == want
        asked.append(kind)

    for seed in range(12):
        play_match([Spy() for _ in range(4)], seed=seed)
    assert "take_row" in asked and len(asked) > 1000
