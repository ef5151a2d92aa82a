"""The protocol pipes of a Python bot, handed to it over a socket once it runs.

bwrap's own processes keep the stdio they were started with, so pipes on the bot's fd 0 and
1 would be held by them as well, and a bot that closes its output would not be seen to.  So
a Python bot's stdin and stdout are ``/dev/null`` at the start; the host sends the real pipes
over a socketpair (``hand_off``) and the bot's first statements (``HANDOFF``, before the
usual bootstrap of ``cow006.launch``) receive them and put them on fd 0 and 1.  Only the bot
holds them then: closing its output is a ``crash`` fault, as outside the sandbox.
"""

from __future__ import annotations

import os
import socket
from typing import BinaryIO

# Run first in a Python bot: take the protocol pipes (fd 0 and 1) from the socket whose fd
# number is argv[1], then go on as the usual bootstrap (``cow006.launch.bootstrap``).
HANDOFF = (
    "import _socket, array, os, sys; "
    "_c = _socket.socket(fileno=int(sys.argv.pop(1))); "
    "_a = array.array('i'); "
    "_m, _anc, _f, _x = _c.recvmsg(1, _socket.CMSG_LEN(2 * _a.itemsize)); "
    "[_a.frombytes(d[: len(d) - len(d) % _a.itemsize]) for l, t, d in _anc "
    "if l == _socket.SOL_SOCKET and t == _socket.SCM_RIGHTS]; "
    "_c.close(); os.dup2(_a[0], 0); os.dup2(_a[1], 1); os.close(_a[0]); os.close(_a[1]); "
    "del _c, _a, _m, _anc, _f, _x; "
)


def hand_off(ctl: socket.socket) -> tuple[BinaryIO, BinaryIO]:
    """Make the bot's stdin/stdout pipes and send its ends over ``ctl``; returns the host's
    ends (the bot's stdin to write, its stdout to read).  After this, the bot is the only
    process that holds its ends."""
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    try:
        socket.send_fds(ctl, [b"p"], [in_r, out_w])
    except OSError:
        for fd in (in_w, out_r):
            os.close(fd)
        raise
    finally:
        os.close(in_r)
        os.close(out_w)
    return os.fdopen(in_w, "wb", buffering=0), os.fdopen(out_r, "rb", buffering=0)
