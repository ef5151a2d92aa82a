"""Closes its protocol output and hangs: a crash (the host must not wait for it)."""

import os
import time

from cow006 import bot


def play(view):
    if view.turn == 2:
        os.close(bot.channel.out_fd)
        time.sleep(60)
    return max(view.hand)
