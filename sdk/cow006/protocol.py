"""The bot protocol, version 1: JSON lines between the host and one bot process.

Both sides use this module: the host (``cow006.host``) to build requests and to parse the
bot's replies *strictly* (every way a reply can be wrong maps to one fault kind), and the
Python bot runner (``cow006.bot``) to build its replies.  The wire format is specified in
docs/protocol.md; the names and shapes here are that contract.

Every message is one JSON object on one line, UTF-8, ended by ``\\n``.  Host to bot:
``hello``, ``play``, ``take_row`` (requests carrying an ``id``), and the notices
``round_start``, ``round_end``, ``match_end``.  Bot to host: ``ready`` (or ``error``) once,
then exactly one reply per request: ``{"id": N, "card": C}``, ``{"id": N, "row": R}`` or
``{"id": N, "error": "..."}``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from ._errors import BotFault

# The protocol version carried by ``hello`` and ``ready``.
VERSION = 1
# Replies nested deeper than this are refused before json.loads sees them (its recursion
# could otherwise be driven to a RecursionError or worse by a hostile line).
MAX_DEPTH = 32
# An integer literal longer than this is never a card, a row or an id; refusing it early
# avoids Python's slow (and, past 4300 digits, failing) big-int conversion.
MAX_INT_DIGITS = 20

# Message types.
HELLO = "hello"
READY = "ready"
ERROR = "error"
PLAY = "play"
TAKE_ROW = "take_row"
ROUND_START = "round_start"
ROUND_END = "round_end"
MATCH_END = "match_end"
REQUESTS = {PLAY: "card", TAKE_ROW: "row"}  # request type -> the reply's value field
NOTICES = (ROUND_START, ROUND_END, MATCH_END)

_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"?', re.DOTALL)
_BRACKET = re.compile(rb"[\[\]{}]")


# -- encoding --------------------------------------------------------------------------------
def encode(msg: Mapping[str, Any]) -> bytes:
    """One message as a line of bytes.  NaN is refused (it is not JSON)."""
    return (json.dumps(msg, separators=(",", ":"), allow_nan=False) + "\n").encode("utf-8")


def hello(
    seat: int,
    n_players: int,
    seed: int,
    names: Sequence[str],
    limits: Mapping[str, Any],
    settings: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The first message: ``names`` are the opaque per-seat labels (``runner.seat_labels``),
    never agent names or owners; ``seed`` is the bot's own, independent of the match seed."""
    return {
        "type": HELLO,
        "protocol": VERSION,
        "seat": seat,
        "n_players": n_players,
        "seed": seed,
        "names": list(names),
        "limits": dict(limits),
        "settings": dict(settings or {}),
    }


def ready(name: str) -> dict[str, Any]:
    return {"type": READY, "protocol": VERSION, "name": name}


def error(message: str) -> dict[str, Any]:
    """The bot's one-line report that it cannot start (sent instead of ``ready``)."""
    return {"type": ERROR, "message": message}


def request(kind: str, rid: int, view: Mapping[str, Any]) -> dict[str, Any]:
    """A ``play`` or ``take_row`` request carrying the seat's view (``View.to_dict()``)."""
    if kind not in REQUESTS:
        raise ValueError(f"not a request type: {kind!r}")
    return {"type": kind, "id": rid, "view": dict(view)}


def reply(kind: str, rid: int, value: Any) -> dict[str, Any]:
    """The bot's answer to request ``rid`` of type ``kind``: ``{"id", "card"|"row"}``."""
    return {"id": rid, REQUESTS[kind]: value}


def error_reply(rid: int, message: str) -> dict[str, Any]:
    """The bot's answer when its code raised while deciding (the host records "exception")."""
    return {"id": rid, "error": message}


def round_start(view: Mapping[str, Any]) -> dict[str, Any]:
    return {"type": ROUND_START, "view": dict(view)}


def round_end(entry: Mapping[str, Any]) -> dict[str, Any]:
    return {"type": ROUND_END, "round": dict(entry)}


def match_end(scores: Sequence[int], ranks: Sequence[int]) -> dict[str, Any]:
    return {"type": MATCH_END, "scores": list(scores), "ranks": list(ranks)}


# -- strict decoding of bot output -------------------------------------------------------------
def too_deep(data: bytes, limit: int = MAX_DEPTH) -> bool:
    """Whether ``[``/``{`` nest deeper than ``limit`` in ``data`` (brackets in strings aside).

    A scan of the raw bytes, safe on any input: json.loads only sees lines that pass it, so a
    hostile line cannot drive its recursion.
    """
    if data.count(b"[") + data.count(b"{") <= limit:
        return False  # the usual case: too few brackets to nest that deep at all
    depth = 0
    for m in _BRACKET.finditer(_STRING.sub(b'""', data)):
        if m.group() in (b"[", b"{"):
            depth += 1
            if depth > limit:
                return True
        else:
            depth -= 1
    return False


class _Reject(Exception):
    """Raised from inside json.loads hooks to abort parsing with a fault kind."""

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(detail)
        self.kind = kind
        self.detail = detail


def _constant(name: str) -> Any:
    raise _Reject("nan", f"{name} is not a number the protocol accepts")


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e999 parses to inf without passing parse_constant
        raise _Reject("nan", f"{text[:40]} overflows to an infinity")
    return value


def _int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise _Reject("bad_type", f"an integer of {len(text)} digits is not a card, row or id")
    return int(text)


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        raise _Reject("malformed_json", "an object repeats a key")
    return obj


def _clip(data: bytes | str, size: int = 80) -> str:
    text = data if isinstance(data, str) else data.decode("utf-8", "replace")
    return repr(text if len(text) <= size else text[:size] + "...")


def decode_line(line: bytes, *, max_depth: int = MAX_DEPTH) -> dict[str, Any]:
    """Parse one line of bot output strictly into a JSON object, or raise ``BotFault``.

    Kinds: ``nested_json`` (deeper than ``max_depth``, checked before parsing),
    ``malformed_json`` (not UTF-8, not JSON, not an object, a repeated key), ``nan``
    (NaN, Infinity or a float overflowing to one), ``bad_type`` (an absurdly long integer).
    """
    if too_deep(line, max_depth):
        raise BotFault("nested_json", f"a reply nested deeper than {max_depth} levels")
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        raise BotFault("malformed_json", f"a reply that is not UTF-8: {_clip(line)}") from None
    try:
        msg = json.loads(
            text,
            parse_constant=_constant,
            parse_float=_float,
            parse_int=_int,
            object_pairs_hook=_object,
        )
    except _Reject as exc:
        raise BotFault(exc.kind, f"{exc.detail}: {_clip(text)}") from None
    except (ValueError, RecursionError) as exc:
        raise BotFault(
            "malformed_json", f"a reply that is not JSON ({exc}): {_clip(text)}"
        ) from None
    if not isinstance(msg, dict):
        raise BotFault("malformed_json", f"a reply must be a JSON object, not {_clip(text)}")
    return msg


def reply_value(msg: Mapping[str, Any], kind: str) -> int:
    """The card or row in a reply to a ``kind`` request, or raise ``BotFault``.

    Only the type is checked here (``bad_type``: ``true``, ``5.0``, ``"5"``, a missing
    field); whether the number is legal is the runner's and the engine's business
    (``illegal_card``, ``illegal_row``).  A reply carrying ``error`` is an ``exception``.
    """
    if "error" in msg:
        err = msg["error"]
        raise BotFault("exception", err[:500] if isinstance(err, str) else _clip(json.dumps(err)))
    field = REQUESTS[kind]
    if field not in msg:
        raise BotFault(
            "bad_type", f"the reply to {kind} has no {field!r}: {_clip(json.dumps(msg))}"
        )
    value = msg[field]
    # bool is a subclass of int in Python, and `true` is not a card: hence `type(...) is int`.
    if type(value) is not int:
        raise BotFault("bad_type", f"{field} must be an integer, not {_clip(json.dumps(value))}")
    return value


# -- decoding host messages (bot side) -------------------------------------------------------
def decode_host(line: bytes | str) -> dict[str, Any]:
    """Parse one host message.  The host is trusted, so this is plain json.loads."""
    msg = json.loads(line)
    if not isinstance(msg, dict) or not isinstance(msg.get("type"), str):
        raise ValueError(f"not a protocol message: {_clip(line)}")
    return msg
