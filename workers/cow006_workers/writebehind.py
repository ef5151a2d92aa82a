"""Write-behind: a worker process stores one match's result while it plays the next.

A match of quick bots takes some 70 ms to play and 30 to 40 ms to store, rate and follow up
(a dozen round trips and two or three commits, each waiting for the database's disk).  Played
one after the other, the core the match ran on idles during the store.  A ``Writer`` is one
thread per worker process that takes what follows a played match (``runs.settle``) and does
it while the process's main thread already claims and plays the next match.

Nothing about the guarantees changes: a result is stored only by the run whose attempt is
still the match's (the lease's fencing token), whenever it comes.  A process that dies with a
result not yet stored leaves its match running under a lease that runs out, and the reaper
sends it again: what happens today to a process that dies while it plays.  The writer holds
at most two results (one being stored, one waiting): a store slower than the matches makes the
next ``submit`` wait, so memory stays bounded and the database sets the pace.

Only a task run on its process's main thread uses it (Celery's prefork and solo pools: one
match at a time per process); the threads pool, and the embedded executors, store in line.
On shutdown (``worker_process_shutdown``, ``worker_shutdown``, and at exit) the process
waits for what it holds to be stored.
"""

from __future__ import annotations

import atexit
import logging
import os
import queue
import threading
from collections.abc import Callable
from typing import Any

from celery.signals import worker_process_shutdown, worker_shutdown

logger = logging.getLogger(__name__)

# How long a process that shuts down waits for its last results: about a lease, after which
# another worker may have taken the match over anyway.
DRAIN_SECONDS = 30.0


class Writer:
    """One thread that runs submitted work in order, one piece at a time."""

    def __init__(self, name: str = "cow006-write-behind") -> None:
        # One waiting besides the one being run: ``submit`` blocks beyond that.
        self._queue: queue.Queue[Callable[[], Any]] = queue.Queue(maxsize=1)
        self._idle = threading.Condition()
        self._pending = 0
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._thread.start()

    def submit(self, work: Callable[[], Any]) -> None:
        """Run ``work`` on the writer's thread after what was submitted before; waits while
        the writer already holds two pieces of work."""
        with self._idle:
            self._pending += 1
        self._queue.put(work)

    def drain(self, timeout: float | None = None) -> bool:
        """Wait until everything submitted has run; False if ``timeout`` ran out first."""
        with self._idle:
            return self._idle.wait_for(lambda: self._pending == 0, timeout)

    @property
    def pending(self) -> int:
        """Pieces of work submitted and not finished yet."""
        return self._pending

    def _loop(self) -> None:
        while True:
            work = self._queue.get()
            try:
                work()
            except Exception:  # a store that failed is the reaper's; the writer goes on
                logger.exception("write-behind: the work after a match failed")
            finally:
                with self._idle:
                    self._pending -= 1
                    self._idle.notify_all()


_lock = threading.Lock()
_current: tuple[int, Writer] | None = None


def writer() -> Writer:
    """This process's writer, started on first use (a forked child starts its own)."""
    global _current
    with _lock:
        if _current is None or _current[0] != os.getpid():
            _current = (os.getpid(), Writer())
        return _current[1]


def for_task(enabled: bool) -> Writer | None:
    """The writer a task may hand its match's result to: None unless ``enabled`` (the
    ``write_behind`` setting) and the task runs on its process's main thread."""
    if not enabled or threading.current_thread() is not threading.main_thread():
        return None
    return writer()


def drain(timeout: float = DRAIN_SECONDS) -> bool:
    """Wait for this process's writer, if it has one, to store what it holds."""
    current = _current
    if current is None or current[0] != os.getpid():
        return True
    done = current[1].drain(timeout)
    if not done:
        logger.warning(
            "write-behind: %d match results not stored at shutdown; the reaper runs them again",
            current[1].pending,
        )
    return done


@worker_process_shutdown.connect
@worker_shutdown.connect
def _on_shutdown(**_: Any) -> None:
    drain()


atexit.register(drain)
