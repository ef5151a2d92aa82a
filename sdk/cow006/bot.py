"""The bot side of the protocol: ``python -m cow006.bot path/to/bot.py`` serves one bot.

It loads the bot (a .py file, or a folder with bot.py) with ``cow006._agent``, finds its
``Agent`` subclass or ``play`` function, and answers the host over JSON lines, calling the
agent's hooks as the notices arrive.  See docs/protocol.md.

The protocol streams are moved off fd 0 and fd 1 before the bot is imported: ``print()``
(or anything written to fd 1) goes to stderr and ``input()`` sees end of file, so a debug
print can never corrupt the protocol.  A bot that wants to speak the protocol itself can use
the live ``channel`` of this module: ``handshake`` answers the host's ``hello``, ``answer``
writes exactly the bytes the bot's own function gives for each request (the hostile
battery's protocol attacks are written so).
"""

from __future__ import annotations

import os
import sys

from . import protocol
from ._agent import MatchInfo, agent_from_module, load_module
from ._errors import AgentLoadError
from ._view import View

# The bot side imports nothing it does not run: no ``typing``, ``json``, ``contextlib`` or
# ``collections`` (tests/sdk/test_bot_imports.py holds the list; docs/sandbox.md, Start-up).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, BinaryIO

    from ._agent import Agent

    # What a bot that speaks by hand writes for a host message: raw bytes, or None.
    Answer = Callable[[dict[str, Any]], bytes | None]


class Channel:
    """The protocol's two byte streams: JSON lines in from the host, out to the host."""

    def __init__(self, rfd: int, wfd: int) -> None:
        self._in: BinaryIO = os.fdopen(rfd, "rb")
        self.in_fd = rfd
        self.out_fd = wfd

    @classmethod
    def from_stdio(cls) -> Channel:
        """Take fd 0/1 for the protocol and leave /dev/null and stderr in their place."""
        # os.dup gives non-inheritable fds, so a process the bot starts cannot reach them.
        rfd, wfd = os.dup(0), os.dup(1)
        try:
            null = os.open(os.devnull, os.O_RDONLY)
            os.dup2(null, 0)
            os.close(null)
        except OSError:  # no /dev/null (odd sandboxes): a closed stdin serves as well
            os.close(0)
        os.dup2(2, 1)
        sys.stdout = sys.stderr
        return cls(rfd, wfd)

    def recv(self) -> dict[str, Any] | None:
        """The next host message, or None at end of input."""
        line = self._in.readline()
        return protocol.decode_host(line) if line else None

    def send(self, msg: dict[str, Any]) -> None:
        self.write(protocol.encode(msg))

    def write(self, data: bytes) -> None:
        """Write raw bytes to the host (all of them: pipes may take a write in parts)."""
        view = memoryview(data)
        while view:
            view = view[os.write(self.out_fd, view) :]

    # -- speaking the protocol by hand -------------------------------------------------------
    def handshake(self, name: str) -> dict[str, Any] | None:
        """Read the host's ``hello`` and answer ``ready`` as ``name``; the hello (None at
        end of input)."""
        hello = self.recv()
        self.send(protocol.ready(name))
        return hello

    def answer(self, reply: Answer, notice: Answer | None = None) -> None:
        """Write ``reply(request)`` for every request and ``notice(message)`` for every
        notice (raw bytes, or None for nothing), until ``match_end``, after which the
        process ends at once, or the end of input, where this returns."""
        while (msg := self.recv()) is not None:
            kind = msg["type"]
            handler = reply if kind in protocol.REQUESTS else notice
            data = handler(msg) if handler is not None else None
            if data:
                self.write(data)
            if kind == protocol.MATCH_END:
                os._exit(0)


# The channel of the running bot (set by ``main`` before the bot is imported).
channel: Channel | None = None


# In the command line of the sandbox's fork server (``cow006._zygote``), whose fork is the pid 1
# of a sandbox it starts.
ZYGOTE_MARKER = "cow006-zygote"


def sandboxed() -> bool:
    """Whether this bot process runs in the arena's sandbox (``cow006.sandbox``): not as
    root, and bubblewrap (or a fork of the sandbox's fork server) is pid 1 of its own pid
    namespace.  What a bot must never do on its author's machine can wait for it (the
    hostile battery's destructive attacks do)."""
    try:
        with open("/proc/1/cmdline", "rb") as f:
            init = f.read()
    except OSError:
        return False
    return (
        os.getuid() != 0
        and os.getpid() < 50
        and (b"bwrap" in init or ZYGOTE_MARKER.encode() in init)
    )


def _print_exc() -> None:
    """Print the exception being handled to stderr.  ``traceback`` is imported here, on the
    error paths only: a bot process imports just what serving a healthy bot needs."""
    exc = sys.exc_info()[1]
    try:
        import traceback

        traceback.print_exc()
    except Exception:  # no memory or no file descriptor left for the import: be brief
        try:
            print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
        except Exception:
            pass


def describe_load_error(path: str, exc: BaseException) -> str:
    """One sentence for a bot that cannot be loaded: file, exception and line."""
    from pathlib import Path  # only on this error path: pathlib costs bots ~4 ms at start-up

    p = Path(path)
    file = p / "bot.py" if p.is_dir() else p
    label = file.name
    cause = exc.__cause__ if isinstance(exc, AgentLoadError) and exc.__cause__ else exc
    if isinstance(cause, SyntaxError):
        where = Path(cause.filename or "").name or label
        return f"{where} has a syntax error: {cause.msg} (line {cause.lineno})"
    if isinstance(exc, AgentLoadError) and exc.__cause__ is None:
        return str(exc)
    folder = file.resolve().parent
    line = ""
    tb = cause.__traceback__
    while tb is not None:  # the deepest frame in the bot's own code, helpers included
        f = Path(tb.tb_frame.f_code.co_filename)
        if folder in f.parents:
            rel = f.relative_to(folder).as_posix()
            where = f"line {tb.tb_lineno}"
            line = f" ({where})" if rel == file.name else f" ({rel} {where})"
        tb = tb.tb_next
    text = str(cause)
    what = f"{type(cause).__name__}: {text}" if text else type(cause).__name__
    if isinstance(cause, SystemExit):
        return f"{label} exited while being imported ({what})"
    if isinstance(exc, AgentLoadError) and "() failed" in str(exc):
        return f"{label}: creating the bot failed: {what}{line}"
    return f"{label} failed to import: {what}{line}"


def _report(rid: int, exc: BaseException) -> dict[str, Any]:
    _print_exc()
    return protocol.error_reply(rid, f"{type(exc).__name__}: {exc}"[:500])


def serve(agent: Agent, ch: Channel) -> int:
    """Answer the host until ``match_end`` or end of input; returns the exit status."""
    hello = ch.recv()
    if hello is None:
        return 0
    if hello.get("type") != protocol.HELLO or hello.get("protocol") != protocol.VERSION:
        ch.send(protocol.error(f"this bot speaks protocol {protocol.VERSION}, not {hello!r:.80}"))
        return 1
    info = MatchInfo(
        seat=hello["seat"],
        n_players=hello["n_players"],
        seed=hello["seed"],
        names=tuple(hello.get("names", ())),
        settings=dict(hello.get("settings") or {}),
    )
    try:
        agent.on_match_start(info)
    except Exception as exc:
        _print_exc()
        ch.send(protocol.error(f"on_match_start failed: {type(exc).__name__}: {exc}"[:500]))
        return 1
    ch.send(protocol.ready(str(agent.name or "bot")))
    while (msg := ch.recv()) is not None:
        kind = msg["type"]
        if kind in protocol.REQUESTS:
            rid = msg["id"]
            try:
                view = View.from_dict(msg["view"])
                value = agent.play(view) if kind == protocol.PLAY else agent.take_row(view)
                data = protocol.encode(protocol.reply(kind, rid, value))
            except Exception as exc:  # the bot's bug, reported and survived
                data = protocol.encode(_report(rid, exc))
            ch.write(data)
            continue
        try:
            if kind == protocol.ROUND_START:
                agent.on_round_start(View.from_dict(msg["view"]))
            elif kind == protocol.ROUND_END:
                agent.on_round_end(msg["round"])
            elif kind == protocol.MATCH_END:
                agent.on_match_end({"scores": msg["scores"], "ranks": msg["ranks"]})
                return 0
            else:  # a newer host's notice: ignoring it keeps old bots working
                print(f"cow006.bot: ignoring unknown message type {kind!r}", file=sys.stderr)
        except Exception:  # notices have no reply: log the bug and keep serving
            _print_exc()
    return 0


def main(argv: list[str] | None = None) -> int:
    """Load the bot named on the command line and serve it on stdin/stdout."""
    global channel
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print(
            "usage: python -m cow006.bot path/to/bot.py (or a folder with bot.py)", file=sys.stderr
        )
        return 2
    path = args[0]
    channel = ch = Channel.from_stdio()
    try:
        module = load_module(path)
        base = os.path.basename(os.path.normpath(path))
        name = base if os.path.isdir(path) else os.path.splitext(base)[0]
        agent = agent_from_module(module, name=name)
    except (Exception, SystemExit) as exc:
        _print_exc()
        ch.send(protocol.error(describe_load_error(path, exc)))
        return 1
    try:
        return serve(agent, ch)
    except (BrokenPipeError, ValueError, KeyError) as exc:
        if isinstance(exc, ValueError) and not _json_error(exc):
            raise
        # The host went away or spoke nonsense: nothing sensible left to answer.
        print(f"cow006.bot: stopping: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1


def _json_error(exc: ValueError) -> bool:
    """Whether ``exc`` is a ``json.JSONDecodeError``: only ``json`` raises one, so it is
    loaded by then (``protocol.decode_host`` hands bad lines to ``json.loads``)."""
    decoder = sys.modules.get("json.decoder")
    return decoder is not None and isinstance(exc, decoder.JSONDecodeError)


def run(argv: list[str] | None = None) -> None:
    """``main``, then end the process at once: the program of a bot process (the ``-c``
    bootstrap of ``cow006.launch``; ``python -m cow006.bot`` exits the usual way).

    When ``main`` returns the match is over (or never started): the bot's hooks have run
    and the host is waiting for the process to end, killing it after ``grace``.  So after
    the ``atexit`` handlers and a flush of stdout and stderr the process ends with
    ``os._exit``, without the interpreter's teardown (clearing every module, a last garbage
    collection: a sizeable part of a short bot process's CPU time).  Threads the bot left
    running end with it instead of being waited for.
    """
    code = main(argv)
    import atexit

    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            if stream is not None:
                stream.flush()
        except Exception:
            pass
    os._exit(code)


if __name__ == "__main__":
    sys.exit(main())
