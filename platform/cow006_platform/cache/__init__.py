"""The public page cache: anonymous answers of the hot read routes, kept until their data changes.

Leaderboards, agent pages, rating histories and lists of matches are what people (and the
web pages' polling) read most, and all of them are public: the same bytes for every
anonymous caller.  Each API process keeps those answers in memory (least recently used
first out, bounded in bytes) with the tags of the data they show, which each cached route
declares (``cached``: its tags must cover every row it reads, ``changes.tags_of`` says what
each write announces), and drops them when the change feed names one of those tags:

* another process's commit (a worker storing a match result, another API process) is seen
  by polling the ``changes`` table every ``cache_poll_seconds``; a page people read is then
  answered, marked stale, for up to ``cache_stale_seconds`` more while it is rendered again
  (below): a page may be that much older than the database, never more;
* this process's own commits invalidate at once (``changes.subscribe``): whoever writes
  reads their own write.

Requests with an ``Authorization`` header are never cached or answered from the cache (an
owner may see more than the public).  When the feed cannot be read (the database is down),
nothing is served from the cache until it can again.  ``cache_max_age`` bounds every entry's
age, read or not (the polls sweep out expired entries).

Keys mean what the route reads (``page_key``): a query with a parameter given twice or a
long value is never cached (``limits.strict_query`` refuses repeated and unknown parameters
with a 422), and the budget counts each entry's key and headers as well as its body.

Misses are what make a busy API slow (a page costs milliseconds of CPU to build, a hit tens of
microseconds), so the cache also works ahead of its readers:

* **warming**: at start, the background tasks render the pages most read (the query layer
  lists them, ``crud.ladders.warm_keys``: each open ladder's leaderboard pages, then the
  agents entered in it, best first), at most ``cache_warm_pages`` of them and never past the
  memory budget;
* **refresh**: a page that was read (or warmed) and whose data changed is queued to be
  rendered again by those tasks, so the next reader finds it ready; a page kept stale after a
  change made elsewhere is held back until half of ``cache_stale_seconds`` has passed (the
  changes of the next polls land on it meanwhile, and one render covers them all: a
  leaderboard changed at every poll is rendered about twice a bound, not at every poll), the
  first changed first;
* **one render per page at a time**: readers that miss on a page already being rendered wait
  for that render instead of repeating it (a leaderboard dropped under 32 readers is built
  once, not 32 times).

Two background tasks render ahead, one page each at a time, on the same worker threads as
requests, so they take at most two of them.  A rendered page is stored only if none of the
tags it shows changed while it was being rendered.

**Parts** (``Fragments``): what does not change when a page does is kept apart from the pages,
under the tags of its own data, and the query layer builds pages from it: a finished match's
JSON (``crud.matches.list_matches_json``: a list of matches is an id query plus the parts
held, only the matches not held are read) and a ladder's whole leaderboard
(``crud.ladders.board``: every leaderboard page is a slice of it, built once per change of the
ladder, its unchanged rows' JSON taken by their values).  A part is dropped at once when one
of its tags is announced (never kept stale) and one built across such an announcement is not
kept, the rules of the pages.

Modules: ``_routes`` (the declared routes and the keys), ``_store`` (the entries and their
tags), ``_fragments`` (the parts), ``_refresh`` (the feed, warming and refresh),
``_middleware`` (the ASGI side).
"""

from ._fragments import Fragments
from ._middleware import PublicCacheMiddleware
from ._refresh import Answer, FeedReader, PageCache, Rendered, WarmKeys
from ._routes import CachedRoutes, Tagger, cache_key, cached, is_id, page_key, query_params
from ._store import Entry, Store, entry_cost

__all__ = [
    "Answer",
    "CachedRoutes",
    "Entry",
    "FeedReader",
    "Fragments",
    "PageCache",
    "PublicCacheMiddleware",
    "Rendered",
    "Store",
    "Tagger",
    "WarmKeys",
    "cache_key",
    "cached",
    "entry_cost",
    "is_id",
    "page_key",
    "query_params",
]
