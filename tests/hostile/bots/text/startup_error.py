"""Hostile text: a start-up ``error`` whose message holds NUL and a lone surrogate, so the
fault detail of its ``startup`` fault quotes them (and so would a rejection reason)."""

import os

from cow006 import bot

ch = bot.channel
hello = ch.recv()
os.write(2, b"ATTACK startup_error \x00\n")
ch.write(b'{"type": "error", "message": "cannot start \\u0000 \\ud800 \\udbff!"}\n')
os._exit(0)
