"""The log checks' strict comparison (``cow006._checks._same``): JSON types kept apart.

``_same`` compares with Python's ``==`` (in C) and then checks that the found value holds only
JSON's plain types.  It is held here to the plain recursive definition it replaced, on random
values mixing integers, bools, floats, strings, nulls, lists, tuples and objects.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from cow006._checks import _same


def _same_by_walking(found: Any, expected: Any) -> bool:
    """The definition: equal, with the same type at every node."""
    if type(found) is not type(expected):
        return False
    if isinstance(expected, list):
        return len(found) == len(expected) and all(map(_same_by_walking, found, expected))
    if isinstance(expected, dict):
        return found.keys() == expected.keys() and all(
            _same_by_walking(found[k], v) for k, v in expected.items()
        )
    return bool(found == expected)


# What a replay gives as the expected value: lists, objects, integers, strings, null.
expected_values = st.recursive(
    st.integers(-3, 3) | st.sampled_from(["sixth", "lowest", ""]) | st.none(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from("abc"), inner),
    max_leaves=12,
)
# What a log may hold instead: the same, and the look-alikes Python finds equal.
leaf_look_alikes = st.sampled_from([True, False, 0.0, 1.0, -1.0, 2.0, "1", 0, 1])


def _disguise(value: Any, data: st.DataObject) -> Any:
    """``value`` with some nodes swapped for look-alikes (bools, floats, tuples)."""
    if isinstance(value, list):
        items = [_disguise(v, data) for v in value]
        return tuple(items) if data.draw(st.integers(0, 9)) == 0 else items
    if isinstance(value, dict):
        return {k: _disguise(v, data) for k, v in value.items()}
    if data.draw(st.integers(0, 5)) == 0:
        return data.draw(leaf_look_alikes)
    return value


@settings(max_examples=600, deadline=None)
@given(expected=expected_values, data=st.data())
def test_same_is_the_strict_json_comparison(expected: Any, data: st.DataObject) -> None:
    found = _disguise(expected, data)
    assert _same(found, expected) is _same_by_walking(found, expected)


@settings(max_examples=300, deadline=None)
@given(found=expected_values, expected=expected_values)
def test_same_on_unrelated_values(found: Any, expected: Any) -> None:
    assert _same(found, expected) is _same_by_walking(found, expected)


def test_the_look_alikes_python_finds_equal_are_told_apart() -> None:
    assert _same([1, 2], [1, 2])
    assert not _same([True, 2], [1, 2])
    assert not _same([1.0, 2], [1, 2])
    assert not _same((1, 2), [1, 2])
    assert not _same({"a": [1, False]}, {"a": [1, 0]})
    assert not _same([[1], [2.0]], [[1], [2]])
