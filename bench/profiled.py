"""The API server under cProfile, for ``bench/api.py --profile``: where its CPU goes.

Runs uvicorn in this process (the arena's app, ``cow006_workers.embedded:embedded_app``) with
every thread's work profiled, in the CPU time of each thread, between two signals: SIGUSR1
starts (the event loop's thread, and each call the app sends to a worker thread through
``anyio.to_thread.run_sync``: the routes' bodies, the cache's polls and renders), SIGUSR2
stops and writes the profiles of all threads, merged, to ``COW006_PROFILE`` (a ``pstats``
file) once no thread is inside a profiled call.  cProfile's own cost makes
everything slower (about 2x): read the shares, not the absolute times.

    python bench/profiled.py --port 8000      # then kill -USR1 / -USR2 the process
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import os
import pstats
import signal
import threading
import time
from collections.abc import Callable
from typing import Any

import anyio.to_thread
import uvicorn

_on = False
# Each thread's CPU, not wall time: a thread waiting for the database or for the GIL spends
# nothing.
_main = cProfile.Profile(time.thread_time)
_local = threading.local()
_profiles: list[cProfile.Profile] = []
_lock = threading.Lock()
_active: set[cProfile.Profile] = set()  # enabled in their threads right now
_run_sync = anyio.to_thread.run_sync


def _profiled(func: Callable[..., Any]) -> Callable[..., Any]:
    """``func`` run under its worker thread's profiler while profiling is on."""

    @functools.wraps(func)
    def run(*args: Any) -> Any:
        if not _on:
            return func(*args)
        profile = getattr(_local, "profile", None)
        if profile is None:
            profile = _local.profile = cProfile.Profile(time.thread_time)
            with _lock:
                _profiles.append(profile)
        with _lock:
            _active.add(profile)
        profile.enable()
        try:
            return func(*args)
        finally:
            profile.disable()
            with _lock:
                _active.discard(profile)

    return run


async def run_sync(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    return await _run_sync(_profiled(func), *args, **kwargs)


def _start(_signum: int, _frame: Any) -> None:
    global _on
    _on = True
    _main.enable()


def _stop(_signum: int, _frame: Any) -> None:
    global _on
    _on = False
    _main.disable()
    threading.Thread(target=_dump, daemon=True).start()


def _dump() -> None:
    """Merge the profiles once none is enabled (a profile read while its thread runs would
    count that thread's open calls with this thread's clock) and write them out."""
    while True:
        with _lock:
            if not _active:
                stats = pstats.Stats(_main)
                for profile in _profiles:
                    stats.add(profile)
                break
        time.sleep(0.01)
    stats.dump_stats(os.environ["COW006_PROFILE"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    args = ap.parse_args()
    anyio.to_thread.run_sync = run_sync  # type: ignore[assignment]  # looked up at each call
    signal.signal(signal.SIGUSR1, _start)
    signal.signal(signal.SIGUSR2, _stop)
    uvicorn.run(
        "cow006_workers.embedded:embedded_app",
        factory=True,
        host=args.host,
        port=args.port,
        log_level="warning",
        access_log=False,
    )


if __name__ == "__main__":
    main()
