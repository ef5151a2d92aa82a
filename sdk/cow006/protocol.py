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

import _json

from ._errors import BotFault

# Both sides import this module, the bot side at every bot process's start: it imports only
# ``_json`` (the C half of ``json``) at run time.  ``json`` itself (which brings ``re``),
# ``re`` and ``math`` are the host's, for the strict decoding of bot output, imported when
# first used there (docs/sandbox.md, Start-up).
TYPE_CHECKING = False
if TYPE_CHECKING:
    import re
    from collections.abc import Mapping, Sequence
    from typing import Any

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

_patterns: list[re.Pattern[bytes]] = []  # (strings, brackets), compiled at first use


def _scan_patterns() -> list[re.Pattern[bytes]]:
    if not _patterns:
        import re

        _patterns.extend((re.compile(rb'"(?:[^"\\]|\\.)*"?', re.DOTALL), re.compile(rb"[\[\]{}]")))
    return _patterns


def _not_serializable(o: Any) -> Any:
    # json.JSONEncoder.default's error, word for word.
    raise TypeError(f"Object of type {o.__class__.__name__} is not JSON serializable")


def _dump(obj: Any) -> str:
    """``json.dumps(obj)``, for the host's error details (json imported on that path only)."""
    import json

    return json.dumps(obj)


class _DecodeContext:
    """What ``_json.make_scanner`` reads from ``json.JSONDecoder()``: its defaults."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int

    @staticmethod
    def parse_constant(name: str) -> float:
        return {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}[name]


# typeshed types the context as a scanner; any object with JSONDecoder's attributes is one.
_scan_once = _json.make_scanner(_DecodeContext())  # type: ignore[arg-type]
_WS = " \t\n\r"


# -- encoding --------------------------------------------------------------------------------
def encode(msg: Mapping[str, Any]) -> bytes:
    """One message as a line of bytes.  NaN is refused (it is not JSON)."""
    # What ``json.dumps(msg, separators=(",", ":"), allow_nan=False)`` does, without importing
    # json: its C encoder, made the same way (a fresh one each time, as json does: its dict
    # of markers for circular references is left dirty by an error), the same bytes and errors.
    chunks = _json.make_encoder(
        {}, _not_serializable, _json.encode_basestring_ascii, None, ":", ",", False, False, False
    )(msg, 0)
    return ("".join(chunks) + "\n").encode("utf-8")


# The host's encoder of its own messages, made once: they hold no cycles, so it keeps no
# markers (``encode`` makes a fresh one per message for whatever a bot's code returns).
_host_encoder = _json.make_encoder(
    None, _not_serializable, _json.encode_basestring_ascii, None, ":", ",", False, False, False
)


def encode_json(value: Any) -> str:
    """``value`` as ``encode`` spells it (no newline), for the host's own messages."""
    return "".join(_host_encoder(value, 0))


def request_line(kind: str, rid: int, view_json: str) -> bytes:
    """``encode(request(kind, rid, view))`` for a view already encoded (``view_json``): the
    same bytes, without a dict of the message."""
    if kind not in REQUESTS:
        raise ValueError(f"not a request type: {kind!r}")
    return f'{{"type":"{kind}","id":{int(rid)},"view":{view_json}}}\n'.encode()


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
    string, bracket = _scan_patterns()
    for m in bracket.finditer(string.sub(b'""', data)):
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
    import math  # the host's (bot output is decoded there only)

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


_STRICT: list[Any] = []  # the host's strict decoder, made on first use (``_strict_decoder``)


def _strict_decoder() -> Any:
    """One ``json.JSONDecoder`` with the strict hooks, for every reply of the host's bots
    (``json.loads`` with hooks would build a decoder per line)."""
    if not _STRICT:
        import json  # the host's: the bot side never decodes bot output

        _STRICT.append(
            json.JSONDecoder(
                parse_constant=_constant,
                parse_float=_float,
                parse_int=_int,
                object_pairs_hook=_object,
            )
        )
    return _STRICT[0]


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
        msg = _strict_decoder().decode(text)
    except _Reject as exc:
        raise BotFault(exc.kind, f"{exc.detail}: {_clip(text)}") from None
    except (ValueError, RecursionError) as exc:
        raise BotFault(
            "malformed_json", f"a reply that is not JSON ({exc}): {_clip(text)}"
        ) from None
    if not isinstance(msg, dict):
        raise BotFault("malformed_json", f"a reply must be a JSON object, not {_clip(text)}")
    return msg


_REPLY: list[re.Pattern[bytes]] = []  # the shape every SDK bot's reply has, compiled at first use


def decode_reply(line: bytes) -> dict[str, Any]:
    """``decode_line`` for a bot's answer to a request: the shape every SDK bot writes
    (``{"id":7,"card":42}``) is read by one match instead of the strict JSON decoder, into
    the same object; anything else goes to ``decode_line``."""
    if not _REPLY:
        import re

        _REPLY.append(
            re.compile(rb'\{"id":(0|[1-9][0-9]{0,17}),"(card|row)":(-?(?:0|[1-9][0-9]{0,17}))\}')
        )
    m = _REPLY[0].fullmatch(line)
    if m is None:
        return decode_line(line)
    return {"id": int(m[1]), m[2].decode(): int(m[3])}


def reply_value(msg: Mapping[str, Any], kind: str) -> int:
    """The card or row in a reply to a ``kind`` request, or raise ``BotFault``.

    Only the type is checked here (``bad_type``: ``true``, ``5.0``, ``"5"``, a missing
    field); whether the number is legal is the runner's and the engine's business
    (``illegal_card``, ``illegal_row``).  A reply carrying ``error`` is an ``exception``.
    """
    if "error" in msg:
        err = msg["error"]
        raise BotFault("exception", err[:500] if isinstance(err, str) else _clip(_dump(err)))
    field = REQUESTS[kind]
    if field not in msg:
        raise BotFault("bad_type", f"the reply to {kind} has no {field!r}: {_clip(_dump(msg))}")
    value = msg[field]
    # bool is a subclass of int in Python, and `true` is not a card: hence `type(...) is int`.
    if type(value) is not int:
        raise BotFault("bad_type", f"{field} must be an integer, not {_clip(_dump(value))}")
    return value


# -- decoding host messages (bot side) -------------------------------------------------------
def decode_host(line: bytes | str) -> dict[str, Any]:
    """Parse one host message.  The host is trusted, so this is plain ``json.loads``: the C
    scanner ``json.loads`` uses, called directly (a bot process does not import ``json``);
    anything unusual (an error, a byte order mark) is handed to ``json.loads`` itself, so the
    result or the error is exactly its own."""
    msg: Any = None
    try:
        text = line.decode("utf-8") if isinstance(line, bytes) else line
        start = len(text) - len(text.lstrip(_WS))
        msg, end = _scan_once(text, start)
        if text[end:].strip(_WS):
            raise ValueError("extra data")
    except Exception:
        import json

        msg = json.loads(line)
    if not isinstance(msg, dict) or not isinstance(msg.get("type"), str):
        raise ValueError(f"not a protocol message: {_clip(line)}")
    return msg
