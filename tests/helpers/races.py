"""Races on purpose: one function run by several threads released at the same instant."""

from __future__ import annotations

import threading
from collections.abc import Callable


def at_once(run: Callable[[], object], n: int = 3, timeout: float = 60) -> list[BaseException]:
    """Run ``run`` in ``n`` threads that wait for each other at a barrier, then start it
    together; what they raised (an empty list: nothing), once all are done or ``timeout``
    seconds went by for each."""
    barrier = threading.Barrier(n)
    errors: list[BaseException] = []

    def one() -> None:
        try:
            barrier.wait(10)
            run()
        except BaseException as exc:  # reported to the test, which asserts on the list
            errors.append(exc)

    threads = [threading.Thread(target=one) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
    return errors
