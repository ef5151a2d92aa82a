"""Writes lines nobody asked for: one right after ready, one at the start of every round."""

import _raw

STRAY = b'{"note": "hello, is anyone there?"}\n'


def answer(msg):
    if msg["type"] == "play":
        return _raw.line({"id": msg["id"], "card": max(msg["view"]["hand"])})
    return _raw.line({"id": msg["id"], "row": 3})


_raw.serve(
    answer,
    "chatty",
    after_ready=STRAY,
    on_notice=lambda m: STRAY if m["type"] == "round_start" else None,
)
