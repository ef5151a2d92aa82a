"""Hostile text: a lone surrogate on stderr, as the bytes of its UTF-8 form (ED A0 80, which
no UTF-8 decoder accepts) and as JSON would escape it, with NUL around.  Plays legal cards."""

import os

from cow006 import bot

ch = bot.channel
hello = ch.recv()
ch.send({"type": "ready", "protocol": 1, "name": "surrogate stderr"})
os.write(2, b"ATTACK surrogate_stderr \xed\xa0\x80 \\ud800 \x00\n")

while (msg := ch.recv()) is not None:
    if msg["type"] == "play":
        os.write(2, b"\xed\xa0\x80\xed\xb0\x80\xff\xfe\x00\n")
        ch.send({"id": msg["id"], "card": max(msg["view"]["hand"])})
    elif msg["type"] == "take_row":
        ch.send({"id": msg["id"], "row": 1})
    elif msg["type"] == "match_end":
        os._exit(0)
