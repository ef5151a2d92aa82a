"""Every setting is documented: docs/operations.md's table is generated from ``Settings``."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic_settings import BaseSettings

from cow006_platform import settings as settings_module
from cow006_platform.settings import Settings, settings_table, with_settings_table

OPERATIONS = Path(__file__).parents[2] / "docs" / "operations.md"


def test_the_operator_guide_holds_the_table_of_every_setting() -> None:
    doc = OPERATIONS.read_text(encoding="utf-8")
    assert with_settings_table(doc) == doc, "docs/operations.md is stale: run `make docs`"
    for name in Settings.model_fields:
        assert f"| `{name.upper()}` |" in doc


def test_a_setting_without_a_description_cannot_be_documented() -> None:
    class Undocumented(BaseSettings):
        documented: int = settings_module._doc(1, "a documented one")
        silent: int = 2

    with pytest.raises(ValueError, match="'silent' has no description"):
        settings_table(Undocumented)


def test_defaults_are_shown_as_the_environment_takes_them(monkeypatch: pytest.MonkeyPatch) -> None:
    table = settings_table()
    row = next(line for line in table.splitlines() if "`VALIDATION_OPPONENTS`" in line)
    shown = row.split("|")[2].strip().strip("`")
    monkeypatch.setenv("COW006_VALIDATION_OPPONENTS", shown)
    assert Settings().validation_opponents == Settings.model_fields["validation_opponents"].default
    assert "| `PUBLIC_CACHE` | `true` |" in table and "| `BROKER_URL` | empty |" in table
