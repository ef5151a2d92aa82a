"""Helpers for the faulty bots that speak the protocol by hand (imported from their folder).

A raw bot calls ``serve(answer)`` at import time: it takes over the protocol channel that
``cow006.bot`` set up, so it can write exactly the bytes an attack needs, and it never
returns (the process exits when the match ends).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

from cow006 import bot

Answer = Callable[[dict[str, Any]], bytes | None]


def line(obj: Any) -> bytes:
    return (json.dumps(obj) + "\n").encode()


def lowest(msg: dict[str, Any]) -> bytes:
    """A correct reply: the lowest card, or the row with the fewest heads."""
    view = msg["view"]
    if msg["type"] == "play":
        return line({"id": msg["id"], "card": min(view["hand"])})
    return line({"id": msg["id"], "row": 0})


def handshake(name: str) -> dict[str, Any]:
    ch = bot.channel
    assert ch is not None
    hello = ch.recv()
    assert hello is not None
    ch.send({"type": "ready", "protocol": 1, "name": name})
    return hello


def serve(
    answer: Answer,
    name: str,
    *,
    after_ready: bytes | None = None,
    on_notice: Answer | None = None,
) -> None:
    """Answer every request with ``answer(msg)`` (raw bytes, or None for no answer);
    ``after_ready`` is written unasked right after the handshake."""
    ch = bot.channel
    assert ch is not None
    handshake(name)
    if after_ready:
        ch.write(after_ready)
    while (msg := ch.recv()) is not None:
        if msg["type"] in ("play", "take_row"):
            data = answer(msg)
        else:
            data = on_notice(msg) if on_notice else None
        if data:
            ch.write(data)
        if msg["type"] == "match_end":
            break
    os._exit(0)
