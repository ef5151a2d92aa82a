"""Fragments: parts of pages (one finished match's JSON, a ladder's whole board) kept apart
from the pages, so that a page whose data changed is rebuilt from the parts that did not.

A finished match's answer never changes (its seats, scores and names: a rename is ``*``), yet
it shows on four agents' lists of matches, each rendered again whenever its agent plays; a
ladder's leaderboard pages are slices of one sorted list that one finished match changes.
The query layer keeps those parts here, under the tags of the data they show, and builds a
page from them: the rows that did not change cost no query and no validation.

The rules are the pages' (``_store``): a part is dropped at once when one of its tags is
announced (never kept stale: the page built from it may be, not the part), and a part built
while one of its tags was announced is not kept (it may show the data from before the change).
Parts are built in the routes' worker threads and dropped on the event loop: every access
takes the lock.
"""

from __future__ import annotations

import threading
from collections import OrderedDict, deque
from collections.abc import Callable
from typing import Any, TypeVar

from .. import changes

T = TypeVar("T")

# Invalidations remembered for the check of a part built across them: beyond these, a part
# built meanwhile is not kept (the worst is assumed).
RECENT = 1024


class Fragments:
    """Parts of pages by key, each with its tags and its size, least recently used out past
    ``max_bytes``."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.size = 0
        self.hits = 0
        self.misses = 0
        self._lock = threading.Lock()
        self._parts: OrderedDict[str, tuple[Any, frozenset[str], int]] = OrderedDict()
        self._by_tag: dict[str, set[str]] = {}
        self._generation = 0
        self._recent: deque[tuple[int, frozenset[str]]] = deque(maxlen=RECENT)
        self._builders: dict[str, threading.Lock] = {}

    def __len__(self) -> int:
        return len(self._parts)

    def generation(self) -> int:
        """Taken before the data of a part is read: ``put`` keeps it only if none of its
        tags was announced since."""
        with self._lock:
            return self._generation

    def get(self, key: str) -> Any | None:
        with self._lock:
            found = self._parts.get(key)
            if found is None:
                self.misses += 1
                return None
            self._parts.move_to_end(key)
            self.hits += 1
            return found[0]

    def put(self, key: str, value: Any, tags: frozenset[str], size: int, since: int) -> bool:
        """Keep ``value`` (read after ``generation()`` returned ``since``) unless one of its
        tags was announced meanwhile; whether it was kept."""
        if size > self.max_bytes // 8:
            return False
        with self._lock:
            if since != self._generation:
                later = [t for g, t in self._recent if g > since]
                if len(later) < self._generation - since:  # forgotten: assume the worst
                    return False
                if any(changes.EVERYTHING in t or not t.isdisjoint(tags) for t in later):
                    return False
            self._drop(key)
            self._parts[key] = (value, tags, size)
            self.size += size
            for tag in tags:
                self._by_tag.setdefault(tag, set()).add(key)
            while self.size > self.max_bytes and self._parts:
                self._drop(next(iter(self._parts)))
            return True

    def cached(self, key: str, tags: frozenset[str], build: Callable[[], tuple[T, int]]) -> T:
        """The part ``key``, built (value and size) and kept if it is not held."""
        found = self.get(key)
        if found is not None:
            return found
        since = self.generation()
        value, size = build()
        self.put(key, value, tags, size, since)
        return value

    def building(self, key: str) -> threading.Lock:
        """The lock a builder of ``key`` holds: readers that miss on a part being built wait
        for it rather than build it too (a board dropped under 32 readers is built once)."""
        with self._lock:
            return self._builders.setdefault(key, threading.Lock())

    def invalidate(self, tags: set[str] | frozenset[str]) -> None:
        """Drop the parts showing ``tags`` (all of them for ``*``)."""
        if not tags:
            return
        with self._lock:
            self._generation += 1
            self._recent.append((self._generation, frozenset(tags)))
            if changes.EVERYTHING in tags:
                self._parts.clear()
                self._by_tag.clear()
                self.size = 0
                return
            for tag in tags:
                for key in list(self._by_tag.get(tag, ())):
                    self._drop(key)

    def clear(self) -> None:
        self.invalidate({changes.EVERYTHING})

    def _drop(self, key: str) -> None:
        found = self._parts.pop(key, None)
        if found is None:
            return
        _value, tags, size = found
        self.size -= size
        for tag in tags:
            keys = self._by_tag.get(tag)
            if keys is not None:
                keys.discard(key)
                if not keys:
                    del self._by_tag[tag]
