"""Fault kinds (a StrEnum spelled as the log spells them), BotFault, the fallbacks, and a bot
process that never imports them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import cow006
from cow006 import BotFault
from cow006._faults import FATAL_KINDS, FAULT_KINDS, FaultKind, fallback_card, fallback_row

# The kinds docs/log-format.md lists, in its order.
DOCUMENTED = [
    "timeout",
    "startup",
    "malformed_json",
    "nested_json",
    "nan",
    "bad_type",
    "illegal_card",
    "illegal_row",
    "unrequested",
    "oversize",
    "crash",
    "exception",
]


def test_the_fault_kinds_are_the_documented_strings() -> None:
    assert [str(k) for k in FaultKind] == list(FAULT_KINDS) == DOCUMENTED
    assert all(k in FAULT_KINDS for k in DOCUMENTED)  # plain strings are members too
    assert json.dumps({"kind": FaultKind.NAN}) == '{"kind": "nan"}'
    assert {"crash", "startup", "oversize"} == FATAL_KINDS


def test_a_bot_fault_takes_a_kind_or_its_string() -> None:
    for kind in (FaultKind.CRASH, "crash"):
        fault = BotFault(kind, "gone\x00")
        assert fault.kind is FaultKind.CRASH and fault.fatal
        assert fault.detail == "gone\ufffd" and str(fault) == "crash: gone\ufffd"
    assert not BotFault("timeout").fatal
    with pytest.raises(ValueError, match="unknown fault kind"):
        BotFault("late")


def test_the_fallbacks_are_the_lowest_card_and_the_cheapest_row() -> None:
    assert fallback_card([30, 4, 17]) == 4
    assert fallback_row([[55], [1, 2, 3], [10], [4, 6, 7]]) == 2


def test_a_bot_process_imports_neither_the_fault_kinds_nor_enum_for_them() -> None:
    sdk = Path(cow006.__file__).parent.parent
    code = "import sys, cow006.bot; print(sorted(m for m in sys.modules if m.startswith('cow006')))"
    out = subprocess.run(
        [sys.executable, "-S", "-c", code],
        env={**os.environ, "PYTHONPATH": str(sdk)},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    modules = json.loads(out.replace("'", '"'))
    assert "cow006._faults" not in modules and "cow006.log" not in modules
