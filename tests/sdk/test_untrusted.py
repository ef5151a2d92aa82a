"""cow006.untrusted: bot text cleaned for storage and escaped for terminals."""

from __future__ import annotations

import json
import sqlite3

import pytest

from cow006.untrusted import (
    REPLACEMENT,
    clean,
    clean_data,
    for_terminal,
    is_clean,
    terminal_data,
)


def _storable(text: str) -> None:
    """What the databases and encoders need: UTF-8 encodable, no NUL."""
    text.encode("utf-8")  # raises on a lone surrogate
    assert "\x00" not in text


@pytest.mark.parametrize(
    "dirty",
    [
        {"faults": [{"detail": "a NUL \x00 in a fault"}]},
        {"faults": [{"detail": "a lone surrogate \ud800"}]},
        {"k\x00ey": 1},  # in a key
        {"k\udfffey": 1},
        ["\x00"],
        {"not json": {1, 2}},  # unsure: cleaned the slow way
    ],
)
def test_is_clean_sees_every_unstorable_string(dirty: object) -> None:
    assert not is_clean(dirty)


def test_is_clean_passes_a_real_log_and_strings_that_look_like_escapes() -> None:
    from cow006 import play_match
    from cow006.bots import make

    log = play_match([make("greedy"), make("random"), make("safe"), make("lowest")], seed=3)
    assert is_clean(log) and clean_data(log) == log
    # The six characters of a JSON escape are no NUL: cleaning keeps them (a false alarm is
    # allowed, a miss is not).
    assert clean_data({"d": "\\u0000"}) == {"d": "\\u0000"}
    assert is_clean({"d": "tab\t newline\n and \u00e9\u4e2d", "n": [1, 2.5, None, True]})


def test_is_clean_agrees_with_clean_data_on_random_data() -> None:
    import random

    rng = random.Random(6)
    alphabet = ["a", "\x00", "\ud800", "\udfff", "\\", "u", "0", "\x01", "\u2028", "é"]

    def text() -> str:
        return "".join(rng.choice(alphabet) for _ in range(rng.randrange(4)))

    def value(depth: int) -> object:
        pick = rng.randrange(6 if depth < 3 else 3)
        if pick == 0:
            return rng.randrange(-5, 200)
        if pick == 1:
            return text()
        if pick == 2:
            return rng.choice([None, True, 0.25])
        if pick == 3:
            return [value(depth + 1) for _ in range(rng.randrange(4))]
        return {text(): value(depth + 1) for _ in range(rng.randrange(4))}

    for _ in range(3000):
        data = value(0)
        if is_clean(data):
            assert clean_data(data) == data, data


@pytest.mark.parametrize(
    ("raw", "want"),
    [
        ("plain text\nwith lines\tand tabs", "plain text\nwith lines\tand tabs"),
        ("a\x00b", f"a{REPLACEMENT}b"),
        ("lone \ud800 high", f"lone {REPLACEMENT} high"),
        ("lone \udfff low", f"lone {REPLACEMENT} low"),
        ("reversed pair \udc00\ud800", f"reversed pair {REPLACEMENT}{REPLACEMENT}"),
        (b"bytes \xed\xa0\x80 surrogate", f"bytes {REPLACEMENT * 3} surrogate"),
        (b"invalid \xff\xfe utf-8 \x00", f"invalid {REPLACEMENT * 2} utf-8 {REPLACEMENT}"),
        (bytearray(b"ok \xe2\x82\xac"), "ok \u20ac"),
        ("emoji \U0001f42e stays", "emoji \U0001f42e stays"),
        (None, ""),
    ],
)
def test_clean_replaces_what_no_database_holds(raw: str | bytes | None, want: str) -> None:
    got = clean(raw)
    assert got == want
    _storable(got)


def test_clean_accepts_what_json_loads_makes_of_hostile_replies() -> None:
    msg = json.loads('{"id": 1, "error": "\\ud800\\u0000\\udbff\\udc00"}')
    got = clean(msg["error"])
    # A lone surrogate and NUL are replaced; an escaped *pair* is one real character.
    assert got == f"{REPLACEMENT}{REPLACEMENT}\U0010fc00"
    _storable(got)


def test_clean_bounds_the_length_with_a_marker() -> None:
    text = "x" * 10_000
    got = clean(text, 500)
    assert len(got) <= 500
    assert got.startswith("x" * 400)
    assert got.endswith("more characters cut]")
    cut = int(got.rsplit("[... ", 1)[1].split()[0])
    assert got.index(" [... ") + cut == 10_000  # what is kept and what is cut add up
    assert clean("short", 500) == "short"
    assert clean("abcdef", 6) == "abcdef"
    assert len(clean("y" * 100, 3)) == 3  # even a limit shorter than the marker holds


def test_cleaned_text_goes_into_sqlite_and_back() -> None:
    hostile = "\x00\ud800 tail \udfff"
    with sqlite3.connect(":memory:") as conn:
        conn.execute("create table t (x text)")
        with pytest.raises(UnicodeEncodeError):
            conn.execute("insert into t values (?)", (hostile,))
        conn.execute("insert into t values (?)", (clean(hostile),))
        (back,) = conn.execute("select x from t").fetchone()
    assert back == clean(hostile)


def test_clean_data_cleans_every_string_and_keeps_the_rest() -> None:
    data = {
        "seed": 5,
        "ok": True,
        "none": None,
        "ratio": 0.5,
        "faults": [{"kind": "exception", "detail": "bad \ud800\x00"}],
        "k\x00ey": ("tuple", "\udfff"),
    }
    got = clean_data(data)
    assert got == {
        "seed": 5,
        "ok": True,
        "none": None,
        "ratio": 0.5,
        "faults": [{"kind": "exception", "detail": f"bad {REPLACEMENT}{REPLACEMENT}"}],
        f"k{REPLACEMENT}ey": ["tuple", REPLACEMENT],
    }
    json.dumps(got, ensure_ascii=False).encode("utf-8")
    assert data["faults"][0]["detail"] == "bad \ud800\x00"  # a copy: the input is untouched


@pytest.mark.parametrize(
    ("raw", "want"),
    [
        ("\x1b]52;c;ZXZpbA==\x07", "\\x1b]52;c;ZXZpbA==\\x07"),  # OSC 52: the clipboard
        ("\x1b]0;title\x07", "\\x1b]0;title\\x07"),  # window title
        ("\x1b[2J\x1b[H", "\\x1b[2J\\x1b[H"),  # clear screen
        ("\x9b2J", "\\x9b2J"),  # C1 CSI
        ("\x9d52;c;x\x9c", "\\x9d52;c;x\\x9c"),  # C1 OSC ... ST
        ("a\rb\x08c\x7fd\x00", "a\\x0db\\x08c\\x7fd\\x00"),
        ("evil\u202etxt.exe \u2066x\u2069", "evil\\u202etxt.exe \\u2066x\\u2069"),
        ("lone \ud800", "lone \\ud800"),
        ("lines\nand\ttabs stay, \u00e9 too", "lines\nand\ttabs stay, \u00e9 too"),
        (b"\x1b[31mred", "\\x1b[31mred"),
        (None, ""),
    ],
)
def test_for_terminal_escapes_control_characters(raw: str | bytes | None, want: str) -> None:
    got = for_terminal(raw)
    assert got == want
    assert "\x1b" not in got and "\x07" not in got
    got.encode("utf-8")


def test_for_terminal_leaves_nothing_a_terminal_interprets() -> None:
    every = "".join(chr(c) for c in range(0x0, 0x3000))
    got = for_terminal(every)
    for ch in got:
        code = ord(ch)
        assert ch in "\n\t" or not (code < 0x20 or 0x7F <= code <= 0x9F), hex(code)
        assert not (0x202A <= code <= 0x202E or 0x2066 <= code <= 0x2069), hex(code)


def test_terminal_data_escapes_nested_strings() -> None:
    data = {"faults": [{"detail": "\x1b]0;t\x07", "turn": 3}], "error": None}
    assert terminal_data(data) == {
        "faults": [{"detail": "\\x1b]0;t\\x07", "turn": 3}],
        "error": None,
    }
