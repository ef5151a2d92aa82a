"""The observation vector and the mask, on a known position (the layout of docs/rl.md)."""

from __future__ import annotations

import pytest

rl = pytest.importorskip(
    "cow006.rl", reason="the rl extra is not installed (pip install 'cow006[rl]')"
)

import numpy as np  # noqa: E402

from cow006 import engine  # noqa: E402
from cow006._view import observe  # noqa: E402
from cow006.rl import obs  # noqa: E402


def _position() -> engine.State:
    st = engine.new_match(3, [10, 0, 70])
    hands = [[5, 60, 104], [2, 30, 77], [1, 40, 90]]
    engine.start_round(st, hands, [[10], [20, 21], [50, 55], [80]], position=True)
    return st


def test_the_layout_has_the_documented_offsets() -> None:
    assert (obs.HAND, obs.TABLE, obs.SEEN, obs.CURRENT) == (0, 104, 208, 312)
    assert (obs.ROWS, obs.SCORES, obs.PENALTIES, obs.PRESENT, obs.MISC) == (
        416,
        428,
        438,
        448,
        458,
    )
    assert (obs.N_OBS, obs.N_ACTIONS, obs.PASS) == (463, 109, 108)
    assert obs.observation_space()["observation"].shape == (463,)


def test_a_view_encodes_to_its_cards_rows_and_rotated_scores() -> None:
    st = _position()
    view = observe(st, 1, (10, 20, 50, 80))
    v = obs.encode(view, False)
    assert v.dtype == np.float32
    assert set(np.flatnonzero(v[obs.HAND : obs.TABLE]) + 1) == {2, 30, 77}
    assert set(np.flatnonzero(v[obs.TABLE : obs.SEEN]) + 1) == {10, 20, 21, 50, 55, 80}
    assert set(np.flatnonzero(v[obs.SEEN : obs.CURRENT]) + 1) == {10, 20, 21, 50, 55, 80}
    assert not v[obs.CURRENT : obs.ROWS].any()
    # row 2 is [50, 55]: last card 55, 2 cards, 3 + 7 heads
    assert v[obs.ROWS + 6 : obs.ROWS + 9].tolist() == pytest.approx([55 / 104, 2 / 5, 10 / 27])
    # seat 1 first, then 2, then 0
    assert v[obs.SCORES : obs.SCORES + 4].tolist() == pytest.approx([0, 70 / 66, 10 / 66, 0])
    assert v[obs.PRESENT : obs.MISC].tolist() == [1, 1, 1, 0, 0, 0, 0, 0, 0, 0]
    assert v[obs.MISC : obs.N_OBS].tolist() == pytest.approx([7 / 10, 0, 3 / 10, 0, 0])
    assert obs.observation_space()["observation"].contains(v)


def test_the_row_phase_shows_the_card_and_the_turns_cards() -> None:
    st = _position()
    engine.reveal(st, [60, 2, 40])  # 2 is below every row end: seat 1 chooses a row
    view = observe(st, 1, (10, 20, 50, 80), card=2)
    v = obs.encode(view, True)
    assert set(np.flatnonzero(v[obs.CURRENT : obs.ROWS]) + 1) == {60, 2, 40}
    assert {2, 40, 60} <= set(np.flatnonzero(v[obs.SEEN : obs.CURRENT]) + 1)
    assert v[obs.MISC + 3] == 1.0 and v[obs.MISC + 4] == pytest.approx(2 / 104)


def test_the_mask_of_each_kind_of_decision() -> None:
    assert set(np.flatnonzero(obs.mask([3, 50, 104], "play"))) == {2, 49, 103}
    assert set(np.flatnonzero(obs.mask([3], "row"))) == {104, 105, 106, 107}
    assert set(np.flatnonzero(obs.mask([3], "pass"))) == {108}
    out = np.ones(109, dtype=np.int8)
    assert obs.mask([1], "play", out) is out and out.sum() == 1
    assert [obs.describe(a) for a in (0, 103, 104, 108, 500)] == [
        "play card 1",
        "play card 104",
        "take row 0",
        "pass",
        "action 500 (not one of 0..108)",
    ]
