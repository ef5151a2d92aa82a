"""What the page cache keeps: the routes that declare their tags (``cached``), and the key
of a request's answer (``page_key``).

A route's tags must cover every row its answer shows (``changes.tags_of`` says what each
write announces).  The middleware looks an answer up by its key first (only a cached route's
answers are ever stored), and on a miss finds the request's route among the declared ones
itself (``CachedRoutes``), before the app routes it: a hit never reaches the app.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar
from urllib.parse import parse_qsl, urlencode

from fastapi.routing import iter_route_contexts
from starlette.routing import BaseRoute

F = TypeVar("F", bound=Callable[..., Any])
# The tags of one request's answer, from the route's path parameters (raw strings) and the
# query string; None: this request's answer is not cached.
Tagger = Callable[[dict[str, str], str], set[str] | None]

_TAGGER = "__cache_tags__"  # the endpoint's attribute ``cached`` sets


def is_id(value: str) -> bool:
    """Whether a path or query value is an id the tags may name (int() of a 60,000-digit
    string raises; a longer one is no row's id)."""
    return value.isdigit() and len(value) <= 18


def _from_template(template: str) -> Tagger:
    def tags(params: dict[str, str], _query: str) -> set[str] | None:
        if not all(is_id(v) for v in params.values()):
            return None
        return {template.format(**{k: int(v) for k, v in params.items()})}

    return tags


def cached(tags: str | Tagger) -> Callable[[F], F]:
    """Declare a GET route's anonymous answers cacheable, with the tags of what they show:
    a template of the route's id parameters (``"agent:{agent_id}"``), or a ``Tagger``."""
    tagger = _from_template(tags) if isinstance(tags, str) else tags

    def declare(endpoint: F) -> F:
        setattr(endpoint, _TAGGER, tagger)
        return endpoint

    return declare


class CachedRoutes:
    """The cached routes among an app's routes: a request's tags, found by path."""

    def __init__(self, routes: Iterable[BaseRoute]) -> None:
        self.routes: list[tuple[Any, Tagger]] = []
        for route in iter_route_contexts(list(routes)):
            tagger = getattr(route.endpoint, _TAGGER, None)
            if tagger is not None and "GET" in (route.methods or ()):
                self.routes.append((route.path_regex, tagger))

    def tags(self, path: str, query: str) -> set[str] | None:
        """The tags of a cacheable GET, or None for a route that is not cached."""
        for pattern, tagger in self.routes:
            m = pattern.fullmatch(path)
            if m is not None:
                return tagger(m.groupdict(), query)
        return None


# Query parameters equal to their default (``deps.get_paging``): ``?limit=50&offset=0`` is the
# same page as no query at all, and is cached once.
_DEFAULT_PARAMS = frozenset({("limit", "50"), ("offset", "0")})


# A query value longer than this is not cached: the routes read ids and small numbers, and a
# long value (``limit=000...050``) would only make a big key for an ordinary page.
MAX_VALUE = 32


def query_params(query: str) -> dict[str, str]:
    """A query string's parameters (the last of a repeated one, as the route reads it)."""
    return dict(parse_qsl(query))


def page_key(path: str, query: str) -> str | None:
    """The cache key of a request, or None when its answer must not be cached.

    A parameter given twice is never cached: the route reads only one of them (FastAPI takes
    the last; ``limits.strict_query`` refuses it), while dropping defaults from the key
    (``?offset=2&offset=0`` -> ``?offset=2``) would name another page, so the answer for one
    would be stored under the key of the other.  Neither is a value longer than ``MAX_VALUE``.
    A name the route does not read gets a key of its own, and the route's 422 is not stored.
    """
    pairs = parse_qsl(query, keep_blank_values=True)
    names = [name for name, _ in pairs]
    if len(set(names)) != len(names) or any(len(v) > MAX_VALUE for _, v in pairs):
        return None
    return cache_key(path, query)


def cache_key(path: str, query: str) -> str:
    """The key of a page: its path and its query parameters sorted, defaults left out.

    Only the order of different parameters changes (the sort is stable, so a repeated one
    keeps its order): the key names exactly the answer the route gives for the raw query.
    """
    params = [p for p in parse_qsl(query, keep_blank_values=True) if p not in _DEFAULT_PARAMS]
    params.sort(key=lambda p: p[0])
    return f"{path}?{urlencode(params)}" if params else path
