"""Hostile text: a lone surrogate on stderr, as the bytes of its UTF-8 form (ED A0 80, which
no UTF-8 decoder accepts) and as JSON would escape it, with NUL around.  Plays legal cards."""

import os

from cow006 import bot, protocol


def highest(msg):
    if msg["type"] == "take_row":
        return protocol.encode({"id": msg["id"], "row": 1})
    os.write(2, b"\xed\xa0\x80\xed\xb0\x80\xff\xfe\x00\n")
    return protocol.encode({"id": msg["id"], "card": max(msg["view"]["hand"])})


bot.channel.handshake("surrogate stderr")
os.write(2, b"ATTACK surrogate_stderr \xed\xa0\x80 \\ud800 \x00\n")
bot.channel.answer(highest)
