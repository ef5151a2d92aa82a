"""Fixtures of the RL environments' tests (tests/sdk/rl): they need the rl extra.

Each module starts with ``pytest.importorskip("cow006.rl", reason=NO_RL)`` (the same reason
everywhere): without numpy, gymnasium and pettingzoo the whole folder is skipped for that one
reason.  CI installs them (the root ``dev`` extra).
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator

import pytest


@pytest.fixture
def strict_warnings() -> Iterator[None]:
    """Every warning is an error, except the two PettingZoo's tests give any environment
    whose observation is a dict with an ``action_mask`` (they name their own such games)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.filterwarnings("ignore", message="Observation is not a NumPy array")
        warnings.filterwarnings(
            "ignore", message="Observation space for each agent probably should be"
        )
        yield
