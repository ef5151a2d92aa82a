"""The store of the page cache: entries by key, least recently used first out, dropped by
the tags of the data they show, within a budget of bytes; and the queue of pages to render
again (``pending``), which invalidation fills."""

from __future__ import annotations

import time
from collections import OrderedDict, deque
from collections.abc import Iterable
from dataclasses import dataclass

from .. import changes
from ._fragments import Fragments


@dataclass
class Entry:
    status: int
    headers: list[tuple[bytes, bytes]]
    body: bytes
    etag: bytes
    tags: frozenset[str]
    expires: float
    reads: int = 0  # hits since it was stored
    warm: bool = False  # rendered ahead by warming: worth keeping even before a first read
    stale_since: float | None = None  # its data changed elsewhere; being rendered again
    route: str = ""  # the label of the route that answered: request metrics count its hits under it
    cost: int = 0  # the bytes it is counted for against the budget (``entry_cost``)
    gzipped: bytes | None = None  # the body compressed, made by the first reader taking gzip


# A page kept stale is rendered again once it has been stale this share of
# ``stale_seconds``: a leaderboard that changes at every poll is rendered about twice within
# the bound rather than at every poll, and is never answered past the bound.
DEFER = 0.5

# Bytes an entry costs beyond its key, body and headers: the Entry, its dict slots and tags.
ENTRY_OVERHEAD = 512


def entry_cost(key: str, entry: Entry) -> int:
    """What an entry holds in memory, as counted against ``cache_bytes``: its key too (a key
    may be kilobytes long, the answer a few bytes)."""
    headers = sum(len(k) + len(v) for k, v in entry.headers)
    return ENTRY_OVERHEAD + len(key) + len(entry.body) + headers + len(entry.etag)


class Store:
    """One process's cached answers (``entries``), the keys showing each tag (``by_tag``),
    and the pages queued to be rendered ahead (``pending``)."""

    def __init__(self, *, max_bytes: int, max_age: float, stale_seconds: float = 0.0) -> None:
        self.max_bytes = max_bytes
        # The parts pages are built from (``_fragments``), on a quarter of the budget of
        # their own: dropped with the same tags, at once.
        self.fragments = Fragments(max_bytes // 4)
        self.max_age = max_age
        self.stale_seconds = stale_seconds
        self.entries: OrderedDict[str, Entry] = OrderedDict()
        self.by_tag: dict[str, set[str]] = {}
        self.size = 0
        # Bumped by every invalidation, whose tags are remembered for a while: an answer
        # rendered across an invalidation of one of its tags is not stored (it may show the
        # data from before the change).
        self.generation = 0
        self.recent: deque[tuple[int, frozenset[str]]] = deque(maxlen=1024)
        self.last_sweep = time.monotonic()
        # Pages to render ahead (warming, refresh), in order; the value: warmed (True) or
        # refreshed after a read (False).
        self.pending: OrderedDict[str, bool] = OrderedDict()
        # Read pages kept stale after a change made elsewhere, held back until their due
        # time (first changed, first due): the changes of the next polls land on them
        # meanwhile, and one render covers them all (``DEFER``).
        self.deferred: OrderedDict[str, float] = OrderedDict()

    def _queued(self) -> None:
        """Pages were queued to be rendered ahead (the page cache wakes its render tasks)."""

    def _queue(self, keys: Iterable[str]) -> None:
        """Queue pages people read to be rendered again, ahead of any warming still to do."""
        for key in keys:
            self.pending[key] = False
            self.pending.move_to_end(key, last=False)
        if self.pending:
            self._queued()

    def _unchanged_since(self, generation: int, tags: frozenset[str]) -> bool:
        if generation == self.generation:
            return True
        later = [(g, t) for g, t in self.recent if g > generation]
        if len(later) < self.generation - generation:  # forgotten: assume the worst
            return False
        return not any(changes.EVERYTHING in t or not t.isdisjoint(tags) for _, t in later)

    def next_due(self, now: float) -> str | None:
        """The first stale page held back whose time has come (None: none yet)."""
        for key, due in self.deferred.items():
            if due > now:
                return None
            del self.deferred[key]
            return key
        return None

    def clear(self) -> None:
        self.fragments.clear()
        self.deferred.clear()
        self.entries.clear()
        self.by_tag.clear()
        self.size = 0
        self.generation += 1
        self.recent.append((self.generation, frozenset({changes.EVERYTHING})))

    def invalidate(self, tags: set[str], *, local: bool = False) -> None:
        """Drop the pages showing ``tags``, and queue those worth having to be rendered again.

        A change made elsewhere (``local`` False: polled from the feed) already reaches this
        process up to a poll late; a page that readers want is then kept, marked stale, and
        answered for up to ``stale_seconds`` more while it is rendered again, so that readers
        do not queue behind its render.  This process's own changes drop their pages at once:
        whoever wrote reads their write.
        """
        if not tags:
            return
        self.fragments.invalidate(tags)
        if changes.EVERYTHING in tags:
            self._queue(key for key, entry in self.entries.items() if entry.reads or entry.warm)
            self.clear()
            return
        self.generation += 1
        self.recent.append((self.generation, frozenset(tags)))
        now = time.monotonic()
        keep_stale = not local and self.stale_seconds > 0
        due = now + self.stale_seconds * DEFER
        again = []
        for tag in tags:
            for key in list(self.by_tag.get(tag, ())):
                entry = self.entries[key]
                wanted = bool(entry.reads or entry.warm)
                if wanted and keep_stale:
                    if entry.stale_since is None:  # the bound runs from the first change
                        entry.stale_since = now
                    if key not in self.deferred and self.pending.get(key) is not False:
                        self.deferred[key] = due  # its place from its first change
                    continue
                if wanted:
                    again.append(key)
                self._drop(key)
        if self.deferred:
            self._queued()
        self._queue(again)

    def _drop(self, key: str) -> Entry | None:
        entry = self.entries.pop(key, None)
        if entry is None:
            return None
        self.size -= entry.cost
        for tag in entry.tags:
            keys = self.by_tag.get(tag)
            if keys is not None:
                keys.discard(key)
                if not keys:
                    del self.by_tag[tag]
        return entry

    def get(self, key: str) -> Entry | None:
        entry = self.entries.get(key)
        if entry is None:
            return None
        now = time.monotonic()
        if entry.expires < now or (
            entry.stale_since is not None and now - entry.stale_since > self.stale_seconds
        ):
            self._drop(key)
            return None
        self.entries.move_to_end(key)
        if entry.stale_since is None and self._ageing(entry) and key not in self.pending:
            self._queue([key])  # read and near ``max_age``: renewed before it runs out
        return entry

    def _ageing(self, entry: Entry) -> bool:
        return entry.expires - time.monotonic() < self.max_age * 0.1

    def expire(self) -> None:
        """Drop every entry past its maximum age, read or not (``get`` drops only what it
        reads: an entry nobody reads again would otherwise stay until pushed out)."""
        now = self.last_sweep = time.monotonic()
        for key in [k for k, e in self.entries.items() if e.expires < now]:
            self._drop(key)

    def account(self, key: str, entry: Entry, extra: int) -> None:
        """Count ``extra`` more bytes for ``entry`` (its compressed copy) if it is still the
        one stored under ``key`` (a dropped entry counts for nothing any more)."""
        if self.entries.get(key) is entry:
            entry.cost += extra
            self.size += extra

    def put(self, key: str, entry: Entry) -> None:
        entry.cost = entry_cost(key, entry)
        if entry.cost > self.max_bytes // 8:
            return  # one huge answer would push out hundreds of small ones
        self._drop(key)
        self.entries[key] = entry
        self.size += entry.cost
        for tag in entry.tags:
            self.by_tag.setdefault(tag, set()).add(key)
        while self.size > self.max_bytes and self.entries:
            self._drop(next(iter(self.entries)))
