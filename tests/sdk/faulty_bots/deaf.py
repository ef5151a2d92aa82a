"""Says ready, then never reads stdin again, with its input pipe shrunk to one page so the
host's writes fill it quickly: the host must neither block nor stop the match."""

import fcntl
import os
import time

from cow006 import bot

bot.channel.recv()  # the hello
fcntl.fcntl(bot.channel.in_fd, fcntl.F_SETPIPE_SZ, 4096)  # before ready: the pipe is empty
bot.channel.send({"type": "ready", "protocol": 1, "name": "deaf"})
time.sleep(60)
os._exit(0)
