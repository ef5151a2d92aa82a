"""Per-address throttling of registrations and failed sign-ins, shared by every API process.

Counts live in the database (``rate_counters``): one row per kind, client address and fixed
window, bumped with one upsert (``INSERT ... ON CONFLICT DO UPDATE ... RETURNING``, on
PostgreSQL and SQLite alike).  So N API processes together allow what one would, not N times
as much.  Fixed windows let a client make up to twice the limit across a window's edge; that
is the price of one row and one statement per event.

The events counted are rare (a registration, a refused token), so the write costs nothing on
the paths that matter: a request with a good token never touches this table.  An address
past its limit is also remembered in the process (``Blocklist``) until its window ends, so
its further attempts are refused without a query.

The client address is ``request.client.host``: the peer of the connection (the proxy in front,
if there is one: see docs/operations.md).  IPv6 addresses are counted per /64, the block one
subscriber usually holds; otherwise one machine would have 2**64 addresses to rotate through.
"""

from __future__ import annotations

import ipaddress
import math
import threading
import time
from dataclasses import dataclass

from fastapi import HTTPException, Request, status
from sqlalchemy import delete
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session, sessionmaker

from .models import RateCounter

REGISTER = "register"
AUTH_FAILURE = "authfail"
EXPORT = "export"
MAX_BLOCKED = 10_000  # addresses remembered per process (oldest dropped first past this)


def client_address(request: Request) -> str:
    """The address a request is counted under: the peer's IPv4 address, or its IPv6 /64."""
    host = request.client.host if request.client is not None else ""
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return host[:64] or "unknown"  # a test client's "testclient", a Unix socket's ""
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((ip, 64), strict=False))
    return str(ip)


@dataclass(frozen=True)
class Count:
    """An event counted: how many in this window so far, and seconds until it ends."""

    count: int
    retry_after: int


def bump(factory: sessionmaker[Session], kind: str, address: str, period: int) -> Count:
    """Count one ``kind`` event of ``address`` in the current ``period``-second window.

    Runs in a transaction of its own, committed at once: the count holds whatever the request
    then does (a registration refused as a taken name still counts).
    """
    now = time.time()
    window = int(now // period)
    ends = (window + 1) * period
    bucket = f"{kind}:{address}:{window}"
    with factory() as session, session.begin():
        dialect = session.get_bind().dialect.name
        insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
        counted = (
            insert(RateCounter)
            .values(bucket=bucket, count=1, expires=ends)
            .on_conflict_do_update(
                index_elements=[RateCounter.bucket], set_={"count": RateCounter.count + 1}
            )
            .returning(RateCounter.count)
        )
        count = int(session.execute(counted).scalar_one())
        if count == 1:
            # A new window somewhere: sweep the windows that have ended (indexed, few rows).
            session.execute(delete(RateCounter).where(RateCounter.expires < int(now)))
    return Count(count, max(1, math.ceil(ends - now)))


def count_or_refuse(request: Request, kind: str, limit: int, period: int, what: str) -> None:
    """Count one ``kind`` event of the caller's address in the current ``period``-second
    window; past ``limit`` (0: none), a 429: "too many WHAT from your address"."""
    if limit <= 0:
        return
    counted = bump(request.app.state.session_factory, kind, client_address(request), period)
    if counted.count > limit:
        raise too_many(
            f"too many {what} from your address; try again in {counted.retry_after} s",
            counted.retry_after,
        )


def too_many(detail: str, retry_after: int) -> HTTPException:
    return HTTPException(
        status.HTTP_429_TOO_MANY_REQUESTS, detail, headers={"Retry-After": str(retry_after)}
    )


class Blocklist:
    """Addresses past a limit, until when (monotonic seconds): one process's memory of it."""

    def __init__(self) -> None:
        self._until: dict[str, float] = {}
        self._lock = threading.Lock()

    def retry_after(self, address: str) -> int | None:
        """Seconds until ``address`` may try again, or None if it is not blocked."""
        with self._lock:
            until = self._until.get(address)
            if until is None:
                return None
            left = until - time.monotonic()
            if left <= 0:
                del self._until[address]
                return None
            return max(1, math.ceil(left))

    def block(self, address: str, seconds: float) -> None:
        with self._lock:
            now = time.monotonic()
            if len(self._until) >= MAX_BLOCKED:
                self._until = {a: t for a, t in self._until.items() if t > now}
                while len(self._until) >= MAX_BLOCKED:  # all live: the oldest entry goes
                    del self._until[next(iter(self._until))]
            self._until[address] = now + seconds
