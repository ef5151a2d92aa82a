"""Checks of the JSON values of a match log, each raising LogError that names the place.

Shared by the replay (``cow006.replay``), which reads a log's deals and decisions, and by
``cow006.log.verify``, which compares everything else a log records with that replay.  Python
compares ``5.0`` and ``True`` equal to ``5`` and ``1``; a log's integers must be JSON integers,
so the comparisons here keep the JSON types apart.
"""

from __future__ import annotations

import json
from typing import Any

from ._errors import LogError


def need(cond: bool, where: str, what: str) -> None:
    if not cond:
        raise LogError(f"{where}: {what}")


def a_list(value: Any, where: str, what: str = "expected a list") -> list[Any]:
    """``value`` if it is a list, else LogError."""
    if not isinstance(value, list):
        raise LogError(f"{where}: {what}")
    return value


def int_list(value: Any, where: str, length: int | None = None) -> list[int]:
    items = a_list(value, where)
    for v in items:
        need(type(v) is int, where, f"expected integers, found {v!r}")
    if length is not None:
        need(len(items) == length, where, f"expected {length} entries, found {len(items)}")
    return items


def show(value: Any) -> str:
    """A value as the log spells it (JSON: ``5.0``, ``true``)."""
    try:
        return json.dumps(value)[:80]
    except (TypeError, ValueError):
        return repr(value)[:80]


def integer(value: Any, where: str, what: str = "expected an integer") -> int:
    if type(value) is not int:
        found = f", found {show(value)}" if isinstance(value, bool | float) else ""
        raise LogError(f"{where}: {what}{found}")
    return value


def _non_integer(value: Any) -> Any:
    """The first number in ``value`` (lists and objects walked) that is not a JSON integer
    (a float, or a bool: Python compares 5.0 and True equal to 5 and 1), else None."""
    todo = [value]
    while todo:
        v = todo.pop()
        if isinstance(v, int | float) and type(v) is not int:  # bool is an int subclass
            return v
        if isinstance(v, list):
            todo.extend(reversed(v))
        elif isinstance(v, dict):
            todo.extend(reversed(list(v.values())))
    return None


def _same(found: Any, expected: Any) -> bool:
    """``found == expected`` with JSON types kept apart (5.0 and true are not 5 and 1), for an
    ``expected`` made of lists, objects, integers, strings and null only (what a replay
    gives): then the two are the same exactly when Python finds them equal and ``found``
    holds nothing else either (``_plain``), and both checks run mostly in C."""
    return bool(found == expected) and _plain(found)


_LEAVES = frozenset({int, str, type(None)})


def _plain(value: Any) -> bool:
    """Whether ``value`` holds only lists, objects, integers, strings and nulls (no bool, no
    float, no tuple or other subclass)."""
    kind = type(value)
    if kind is list:
        kinds = set(map(type, value))
        if kinds <= _LEAVES:
            return True
        return all(map(_plain, value))
    if kind is dict:
        return all(map(_plain, value.values()))
    return kind in _LEAVES


def expect(found: Any, expected: Any, where: str) -> None:
    """LogError unless ``found`` is exactly ``expected``: a number of the wrong JSON type
    is named as such, anything else as expected-versus-found."""
    if _same(found, expected):
        return
    if found == expected:
        bad = _non_integer(found)
        raise LogError(f"{where}: {show(bad)} where the format has an integer")
    raise LogError(f"{where}: expected {expected}, found {found}")
