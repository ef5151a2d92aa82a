"""The host side of the protocol: ``RemoteAgent`` runs one bot in its own process.

A ``RemoteAgent`` is an ``Agent`` to the runner, so a match between bot processes is just
``play_match([RemoteAgent("a.py"), RemoteAgent("b.js")])``.  It starts one process per
agent and keeps it for the whole match, and it never trusts the bot:

* every wait is bounded by a deadline, and the pipes are non-blocking and multiplexed with
  ``epoll`` (``_Pipes``), so a bot that stops reading, stops writing or floods stderr cannot
  stall the host;
* every reply is parsed strictly (``cow006.protocol.decode_line``) and anything wrong is
  raised as a ``BotFault`` of one kind; the runner records it and plays the fallback;
* a request ``id`` makes a late reply (after a timeout) recognisable: it is dropped, not
  faulted again;
* stderr is kept up to a cap (the rest is counted and dropped) and exposed as ``.stderr``.

How the process is started is ``cow006.launch``'s business (the sandbox replaces it by
passing another ``launcher``).  The runner that plays a match between agents is re-exported
here as ``MatchRunner``: with ``RemoteAgent``, ``TimedAgent`` and ``Limits`` it is what a host
needs to play bot processes (docs/sdk-surface.md).
"""

from __future__ import annotations

import contextlib
import math
import os
import select
import signal
import subprocess
import time
import weakref
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from . import launch, protocol
from ._agent import Agent, MatchInfo
from ._errors import AgentLoadError
from ._faults import BotFault
from ._runner import MatchRunner as MatchRunner  # the host-side name of the runner
from ._runner import new_agent_seeds, seat_labels
from ._view import View
from .untrusted import clean

Launcher = Callable[[str | Path], "subprocess.Popen[bytes]"]

_READ_CHUNK = 65536
# While waiting, wake at least this often to notice a bot that exited while something
# else (a child it started) still holds its stdout open.
_POLL = 0.1


@dataclass(frozen=True, slots=True)
class Limits:
    """Time and size limits for one bot, in seconds and bytes.

    ``startup``: from spawning the process to its ``ready``.  ``decision``: per request;
    time beyond it is taken from ``bank``, a reserve for the whole match; a request that
    outlasts both is a timeout (and empties the bank).  ``max_reply``: the longest line the
    bot may send.  ``stderr_cap``: how much of its stderr is kept.  ``grace``: how long a bot
    may take to exit after ``match_end`` (or when closed) before it is killed.
    """

    startup: float = 5.0
    decision: float = 1.0
    bank: float = 10.0
    max_reply: int = 65536
    stderr_cap: int = 65536
    grace: float = 0.5

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _kill_group(pid: int) -> None:
    """SIGKILL a bot's whole process group (its session: the bot and all it started)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


class _Pipes:
    """The bot's pipes watched with one ``epoll``: what ``selectors`` would do for the host's
    three file descriptors, without its per-call mapping of file objects to keys (the host
    waits on it once or twice for every request of a match)."""

    def __init__(self) -> None:
        self._ep = select.epoll()
        self.watched: set[int] = set()

    def register(self, fd: int, events: int) -> None:
        self._ep.register(fd, events)
        self.watched.add(fd)

    def unregister(self, fd: int) -> None:
        self._ep.unregister(fd)
        self.watched.discard(fd)

    def poll(self, timeout: float) -> list[int]:
        """The watched descriptors with something to do (readable, writable, or an error or
        hang-up to read) within ``timeout`` seconds, rounded up to the millisecond as
        ``selectors`` does (a shorter wait would spin)."""
        wait = math.ceil(max(0.0, timeout) * 1e3) * 1e-3
        return [fd for fd, _ in self._ep.poll(wait, max(len(self.watched), 1))]

    def close(self) -> None:
        self._ep.close()
        self.watched.clear()


# The last table a view was encoded from, and its part of a view's JSON: the seats' views of
# one moment share their table (``View.table``), so a turn encodes it once, not per seat.
_table_json: tuple[object, str] = (None, "")


def view_json(view: View, time_left: float | None) -> str:
    """``view.to_dict()`` with ``time_left`` set, as ``protocol.encode`` spells it: the seat
    and hand, the table's fields in their order (``Table._fields``, the order ``to_dict``
    writes them in), the time left, and a take-row view's card and current turn."""
    global _table_json
    table = view.table
    shared, middle = _table_json
    if shared is not table:
        middle = protocol.encode_json(table._asdict())[1:-1]
        _table_json = (table, middle)
    enc = protocol.encode_json
    head = (
        f'{{"seat":{enc(view.seat)},"hand":{enc(view.hand)},{middle},"time_left":{enc(time_left)}'
    )
    if view.card is None:
        return f"{head}}}"
    return f'{head},"card":{enc(view.card)},"current":{enc(view.current or ())}}}'


def default_name(path: str | Path) -> str:
    p = Path(path)
    return p.name if p.is_dir() else p.stem


class RemoteAgent(Agent):
    """An agent whose decisions come from a bot process speaking protocol 1.

    ``start()`` spawns the process (``on_match_start`` does it if needed); the startup
    deadline runs from the spawn.  ``close()`` (or leaving a ``with`` block) ends it; so
    does ``match_end``; ``forfeit()`` kills it at once.  Attributes for the caller:
    ``stderr`` / ``stderr_dropped`` (what the bot wrote to stderr, capped, and how many bytes
    were dropped), ``reported_name`` (the name in its ``ready``), ``startup_time`` (spawn to
    ready, seconds), ``bank`` (time left in the bank), ``returncode``.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        name: str | None = None,
        limits: Limits | None = None,
        launcher: Launcher = launch.launch,
    ) -> None:
        self.path = Path(path)
        self.name = name or default_name(path)
        self.limits = limits or Limits()
        self.launcher = launcher
        self.reported_name: str | None = None
        self.startup_time: float | None = None
        self.bank = self.limits.bank
        self.returncode: int | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._sel: _Pipes | None = None
        self._finalizer: weakref.finalize[[int], RemoteAgent] | None = None
        self._t_spawn = 0.0
        self._fd_in = self._fd_out = self._fd_err = -1
        self._rbuf = bytearray()  # stdout bytes not yet split into lines
        self._wbuf = bytearray()  # bytes queued for the bot's stdin
        self._writing = False  # stdin is watched for room to write (the queue is not empty)
        self._err = bytearray()  # the first stderr_cap bytes of stderr
        self.stderr_dropped = 0
        self._out_eof = False
        self._in_broken = False
        self._started = False  # hello answered by ready
        self._closed = False
        self._end_sent = False  # match_end queued (announce_end, or on_match_end)
        self._next_id = 0
        self._stale: set[int] = set()  # ids of requests given up on whose replies may come

    # -- lifecycle -----------------------------------------------------------------------------
    @property
    def process(self) -> subprocess.Popen[bytes] | None:
        return self._proc

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def stderr(self) -> str:
        """What the bot wrote to stderr (capped), cleaned: invalid UTF-8 and NUL replaced
        (``cow006.untrusted.clean``), so any database can store it."""
        return clean(self._err)

    def start(self) -> None:
        """Spawn the bot process (once).  Raises AgentLoadError if it cannot be started."""
        if self._proc is not None or self._closed:
            return
        try:
            proc = self.launcher(self.path)
        except OSError as exc:
            raise AgentLoadError(f"cannot start the bot {self.path}: {exc}") from exc
        self._t_spawn = time.monotonic()
        self._proc = proc
        # If the caller forgets close(), the process group still dies with this object.
        self._finalizer = weakref.finalize(self, _kill_group, proc.pid)
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        self._fd_in, self._fd_out, self._fd_err = (
            proc.stdin.fileno(),
            proc.stdout.fileno(),
            proc.stderr.fileno(),
        )
        for fd in (self._fd_in, self._fd_out, self._fd_err):
            os.set_blocking(fd, False)
        self._sel = _Pipes()
        self._sel.register(self._fd_out, select.EPOLLIN)
        self._sel.register(self._fd_err, select.EPOLLIN)

    def __enter__(self) -> RemoteAgent:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """End the bot: flush what is queued, close its stdin, give it ``grace`` seconds to
        exit, then kill its process group and reap it.  Idempotent."""
        self._shutdown(self.limits.grace)

    def forfeit(self) -> None:
        """Kill the bot at once (its seat was forfeited).  Idempotent."""
        self._shutdown(0.0)

    def _shutdown(self, grace: float) -> None:
        if self._closed:
            return
        self._closed = True
        proc = self._proc
        if proc is None:
            return
        if grace > 0 and proc.poll() is None:
            deadline = time.monotonic() + grace
            with contextlib.suppress(BotFault):
                self._pump(deadline, want_line=False)  # deliver match_end, if queued
            self._close_stdin()  # end of input: a polite bot exits now
            while proc.poll() is None and (left := deadline - time.monotonic()) > 0:
                self._select(min(left, 0.02))
                self._rbuf.clear()  # lines after match_end are ignored
        else:
            self._drain_now()  # keep what the bot said last (a traceback, usually)
        _kill_group(proc.pid)
        try:
            proc.wait(timeout=5.0)
        except subprocess.TimeoutExpired:  # unkillable (stuck in the kernel): leave it
            pass
        self.returncode = proc.returncode
        # After the kill every writer of stderr is gone: read what is left, briefly.
        end = time.monotonic() + 0.2
        while self._sel is not None and self._fd_err in self._sel.watched:
            if time.monotonic() >= end:
                break
            self._select(0.02)
        if self._finalizer is not None:
            self._finalizer.detach()
        if self._sel is not None:
            self._sel.close()
            self._sel = None
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()

    def _close_stdin(self) -> None:
        proc = self._proc
        if proc is not None and proc.stdin is not None and not proc.stdin.closed:
            if self._sel is not None and self._writing:
                self._sel.unregister(self._fd_in)
                self._writing = False
            with contextlib.suppress(OSError):
                proc.stdin.close()
        self._in_broken = True
        self._wbuf.clear()

    # -- I/O -------------------------------------------------------------------------------
    def _queue(self, msg: dict[str, Any]) -> None:
        """Queue a message for the bot and write what the pipe takes now, without waiting."""
        self._send(protocol.encode(msg))

    def _send(self, line: bytes) -> None:
        """Queue an encoded message (``_queue``)."""
        if self._in_broken or self._closed:
            return
        self._wbuf += line
        self._write()

    def _write(self) -> None:
        assert self._sel is not None
        try:
            n = os.write(self._fd_in, self._wbuf[:_READ_CHUNK])
            del self._wbuf[:n]
        except BlockingIOError:
            pass
        except OSError:  # EPIPE: the bot closed its stdin or died; the reads will tell which
            self._close_stdin()
            return
        if self._wbuf and not self._writing:
            self._sel.register(self._fd_in, select.EPOLLOUT)
            self._writing = True
        elif not self._wbuf and self._writing:
            self._sel.unregister(self._fd_in)
            self._writing = False

    def _read(self, fd: int) -> bytes | None:
        """What ``fd`` holds now: None if nothing yet, b"" at its end (then it is no longer
        watched)."""
        assert self._sel is not None
        try:
            data = os.read(fd, _READ_CHUNK)
        except BlockingIOError:
            return None
        except OSError:
            data = b""
        if not data:
            self._sel.unregister(fd)
        return data

    def _read_err(self) -> None:
        data = self._read(self._fd_err)
        if data:
            room = self.limits.stderr_cap - len(self._err)
            if room > 0:
                self._err += data[:room]
            self.stderr_dropped += max(0, len(data) - max(room, 0))

    def _read_out(self) -> None:
        data = self._read(self._fd_out)
        if data == b"":
            self._out_eof = True
        elif data:
            self._rbuf += data

    def _select(self, timeout: float) -> bool:
        """One multiplexed step: move whatever bytes are ready.  False if nothing was."""
        assert self._sel is not None
        if not self._sel.watched:
            self._await_exit(max(0.0, timeout))
            return False
        ready = self._sel.poll(timeout)
        for fd in ready:
            if fd == self._fd_out:
                self._read_out()
            elif fd == self._fd_err:
                self._read_err()
            elif fd == self._fd_in:
                self._write()
        return bool(ready)

    def _await_exit(self, timeout: float) -> None:
        """Sleep until the bot process can be reaped, at most ``timeout`` seconds: with no
        pipe left to watch (the end of file of the last one comes a moment before its writer
        is reapable), a pidfd wakes this at the exit itself instead of a fixed nap."""
        proc = self._proc
        try:
            fd = os.pidfd_open(proc.pid) if proc is not None else -1
        except (AttributeError, OSError):  # not Linux 5.3+: a nap
            fd = -1
        if fd < 0:
            time.sleep(timeout)
            return
        try:
            select.select([fd], [], [], timeout)
        finally:
            os.close(fd)

    def _drain_now(self) -> None:
        """Move what is ready this instant (bounded, for a bot that writes without end)."""
        if self._sel is None:
            return
        for _ in range(16):
            if not self._select(0.0):
                break

    def _take_line(self) -> bytes | None:
        """The next complete stdout line, or None; ``oversize`` past ``max_reply`` bytes."""
        cap = self.limits.max_reply
        i = self._rbuf.find(b"\n", 0, cap + 1)
        if i < 0:
            if len(self._rbuf) > cap:
                raise BotFault("oversize", f"a line longer than {cap} bytes")
            return None
        line = bytes(self._rbuf[:i])
        del self._rbuf[: i + 1]
        return line

    def _pump(self, deadline: float, *, want_line: bool) -> bytes | None:
        """Move bytes until a stdout line is complete (``want_line``) or the queue for stdin
        is written (not ``want_line``), or the deadline passes (then None).

        Raises ``crash`` when a line is wanted and the bot closed its stdout or exited.
        """
        final = False
        while True:
            if want_line:
                line = self._take_line()
                if line is not None:
                    return line
                if self._out_eof:
                    raise BotFault("crash", self._ended("closed its output"))
                proc = self._proc
                if final and proc is not None and proc.poll() is not None:
                    raise BotFault("crash", self._ended("exited"))
            elif not self._wbuf or self._in_broken:
                return None
            if final:
                return None
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                final = True  # one last look: a reply may have landed right at the deadline
                self._drain_now()
                continue
            if not self._select(min(remaining, _POLL)) and want_line:
                proc = self._proc
                if proc is not None and proc.poll() is not None:
                    self._drain_now()
                    final = True

    def _ended(self, what: str) -> str:
        """A fault detail for a bot that went away: how it ended.

        Never its stderr: fault details go into the public match log, and a seat's stderr is
        for its owner alone (``probe`` adds the stderr tail to its own, private, message).
        """
        proc = self._proc
        code = None
        if proc is not None:
            end = time.monotonic() + 0.5  # an exiting process takes a moment to be reapable
            while proc.poll() is None and time.monotonic() < end:
                self._select(0.01)
            code = proc.poll()
            self._drain_now()
        when = "" if self._started else " before it was ready"
        status = "" if code is None else f" (exit status {code})"
        # A sandboxed bot's slot may have been killed for going over a limit of its cgroup.
        hit = getattr(proc, "limit_hit", None) if proc is not None else None
        limit = f": it was stopped at its {hit}" if isinstance(hit, str) else ""
        return f"the bot {what}{when}{status}{limit}"

    def _tail(self) -> str:
        lines = [ln for ln in self.stderr.strip().splitlines() if ln.strip()]
        return f"; stderr ends: {lines[-1].strip()[:300]}" if lines else ""

    # -- the protocol ----------------------------------------------------------------------
    def on_match_start(self, info: MatchInfo) -> None:
        """Spawn the bot if needed, send ``hello`` and wait for ``ready`` (``startup`` fault)."""
        if self._closed:
            raise BotFault("startup", "the bot was closed before the match started")
        try:
            self.start()
        except AgentLoadError as exc:
            raise BotFault("startup", str(exc)) from None
        lim = self.limits
        # A bot process is told seat labels whatever names the caller put in ``info``: who
        # sits where (agents, owners, built-ins) is never the bot's to know (fair tables).
        labels = seat_labels(info.n_players)
        self._queue(
            protocol.hello(
                info.seat, info.n_players, info.seed, labels, lim.to_dict(), info.settings
            )
        )
        deadline = self._t_spawn + lim.startup
        try:
            line = self._pump(deadline, want_line=True)
            if line is None:
                raise BotFault("startup", f"the bot was not ready within {lim.startup:g} s")
            msg = protocol.decode_line(line)
        except BotFault as fault:
            if fault.kind == "crash":  # its detail already says how it ended
                raise BotFault("startup", fault.detail) from None
            detail = fault.detail if fault.kind == "startup" else f"{fault.kind}: {fault.detail}"
            raise BotFault("startup", detail) from None
        if msg.get("type") == protocol.ERROR:
            text = msg.get("message")
            raise BotFault("startup", text if isinstance(text, str) else repr(text))
        if msg.get("type") != protocol.READY or msg.get("protocol") != protocol.VERSION:
            raise BotFault(
                "startup", f"expected ready for protocol {protocol.VERSION}, got {line[:100]!r}"
            )
        name = msg.get("name")
        self.reported_name = clean(name, 64) if isinstance(name, str) and name else self.name
        self.startup_time = time.monotonic() - self._t_spawn
        self._started = True

    def _ask(self, kind: str, view: View) -> int:
        """Send a request with the seat's view and return the int in the bot's reply."""
        if not self._started or self._closed:
            raise BotFault("crash", "the bot is not running")
        self._next_id += 1
        rid = self._next_id
        allowed = self.limits.decision + self.bank
        request = protocol.request_line(kind, rid, view_json(view, round(allowed, 3)))
        start = time.monotonic()
        self._send(request)
        if self._in_broken:  # the request cannot be delivered: the bot is gone or deaf
            proc = self._proc
            gone = self._out_eof or (proc is not None and proc.poll() is not None)
            raise BotFault("crash", self._ended("exited" if gone else "closed its input"))
        deadline = start + allowed
        try:
            while True:
                line = self._pump(deadline, want_line=True)
                if line is None:
                    self.bank = 0.0
                    raise BotFault("timeout", f"no reply to {kind} #{rid} within {allowed:.2f} s")
                msg = protocol.decode_reply(line)
                mid = msg.get("id")
                if type(mid) is int and mid == rid:
                    break
                if type(mid) is int and mid in self._stale:
                    self._stale.discard(mid)  # the late reply to a request given up on
                    continue
                raise BotFault("unrequested", f"while waiting for reply #{rid}: {line[:100]!r}")
        except BotFault:
            # The reply to this request may still come: drop it then instead of faulting
            # the next request again.
            self._stale.add(rid)
            raise
        over = time.monotonic() - start - self.limits.decision
        if over > 0:
            self.bank = max(0.0, self.bank - over)
        return protocol.reply_value(msg, kind)

    def play(self, view: View) -> int:
        return self._ask(protocol.PLAY, view)

    def take_row(self, view: View) -> int:
        return self._ask(protocol.TAKE_ROW, view)

    def on_round_start(self, view: View) -> None:
        if self._started:
            self._queue(protocol.round_start(view.to_dict()))

    def on_round_end(self, result: dict[str, Any]) -> None:
        if self._started:
            self._queue(protocol.round_end(result))

    def announce_end(self, result: dict[str, Any]) -> None:
        """Send ``match_end`` now, without waiting for the bot to exit (``on_match_end``,
        which follows, does): the runner tells every seat first, so that the bot processes
        end together instead of each one after the last one's exit.  Its stdin is closed
        once the message is written (a polite bot exits at ``match_end`` anyway)."""
        if self._started and not self._end_sent:
            self._end_sent = True
            self._queue(protocol.match_end(result["scores"], result["ranks"]))
            if not self._wbuf:
                self._close_stdin()

    def on_match_end(self, result: dict[str, Any]) -> None:
        """Send ``match_end``; the bot then has ``grace`` seconds to exit before it is killed."""
        if self._started and not self._end_sent:
            self._end_sent = True
            self._queue(protocol.match_end(result["scores"], result["ranks"]))
        self.close()


class TimedAgent(RemoteAgent):
    """A RemoteAgent that records the wall time of each ``play`` round trip in ``times``
    (seconds, a faulted one too): what the benchmarks and the fairness tests compare."""

    def __init__(self, path: str | Path, **kwargs: Any) -> None:
        super().__init__(path, **kwargs)
        self.times: list[float] = []

    def play(self, view: View) -> int:
        t = time.perf_counter()
        try:
            return super().play(view)
        finally:
            self.times.append(time.perf_counter() - t)


def probe(
    path: str | Path, limits: Limits | None = None, *, launcher: Launcher = launch.launch
) -> str:
    """Start the bot, do the hello/ready handshake, close it; return the name it reported.

    Raises ``AgentLoadError`` with one sentence saying what is wrong (for clean CLI errors).
    """
    agent = RemoteAgent(path, limits=limits, launcher=launcher)
    with agent:
        try:
            agent.start()
            agent.on_match_start(
                MatchInfo(seat=0, n_players=2, seed=new_agent_seeds(1)[0], names=seat_labels(2))
            )
        except BotFault as fault:
            detail = fault.detail or fault.kind
            if "failed to import" not in detail:  # the import error already says it all
                detail += agent._tail()
            raise AgentLoadError(detail) from None
        return agent.reported_name or default_name(path)  # the name it was given
