"""The SDK's public surface is what docs/sdk-surface.md says, and our own code keeps to it.

The page has two tables this test reads: the bot author's names (``cow006.__all__``) and the
host-side modules.  Every other module of the SDK is private (a leading underscore), and the
platform, the workers, ``bench/`` and ``examples/`` import only documented modules and names.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import re
from pathlib import Path

import pytest

import cow006

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "sdk-surface.md"
SDK = ROOT / "sdk" / "cow006"
# Code outside the SDK that must import only the public surface.
CONSUMERS = ("platform", "workers", "bench", "examples")
# A benchmark of the sandbox's internals (the cost of its /proc masks) swaps them out for a
# run: the one import of a private module outside the SDK, and it stays a benchmark's.
ALLOWED_PRIVATE = {("bench/proc_masks.py", "cow006.sandbox._command")}


def _table(heading: str) -> list[str]:
    """The first column's backquoted names of the table under ``## heading`` in the page."""
    sections = re.split(r"^## ", DOC.read_text(), flags=re.M)
    (section,) = [s for s in sections if s.startswith(heading)]
    return re.findall(r"^\| `([^`]+)` \|", section, flags=re.M)


NAMES = _table("The bot author's names")
MODULES = frozenset(["cow006", *_table("The host-side modules")])


def test_the_tables_are_found() -> None:
    assert "Agent" in NAMES and "verify" in NAMES
    assert {"cow006.engine", "cow006.host", "cow006.bot"} <= MODULES


def test_the_top_level_is_the_documented_list_and_every_name_resolves() -> None:
    assert sorted(cow006.__all__) == sorted(NAMES)
    assert len(set(NAMES)) == len(NAMES)
    for name in cow006.__all__:
        assert getattr(cow006, name) is not None, name
    with pytest.raises(AttributeError):
        cow006.Match  # noqa: B018 - the runner's former alias is gone


def _rl_extra() -> bool:
    """Whether the rl extra's libraries are installed (``cow006.rl`` needs them)."""
    return all(importlib.util.find_spec(m) for m in ("numpy", "gymnasium", "pettingzoo"))


def test_every_documented_module_imports() -> None:
    for module in MODULES:
        if module.startswith("cow006.rl") and not _rl_extra():
            continue  # the rl extra's modules (tests/sdk/rl: skipped without it)
        importlib.import_module(module)


def _sdk_modules() -> list[str]:
    """Every module of the SDK by its dotted name (a package by its own name)."""
    found = []
    for path in sorted(SDK.rglob("*.py")):
        parts = ["cow006", *path.relative_to(SDK).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        found.append(".".join(parts))
    return found


def _private(dotted: str) -> bool:
    return any(part.startswith("_") for part in dotted.split("."))


def test_a_module_outside_the_documented_list_has_the_underscore() -> None:
    public = [m for m in _sdk_modules() if not _private(m)]
    assert sorted(public) == sorted(MODULES)


def _ours(module: str | None) -> bool:
    return module is not None and module.split(".")[0] == "cow006"


def _imports(path: Path) -> list[tuple[int, str]]:
    """(line, what) for every ``cow006`` module or name a file imports: ``cow006.x`` or
    ``cow006.x:name``."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if _ours(a.name)]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and _ours(node.module):
            found += [(node.lineno, f"{node.module}:{a.name}") for a in node.names]
    return found


def _documented(what: str) -> bool:
    module, _, name = what.partition(":")
    if module not in MODULES:
        return False
    if not name:
        return True
    if f"{module}.{name}" in MODULES:  # a public module taken from its package
        return True
    if module == "cow006":
        return name in NAMES
    return not name.startswith("_") and hasattr(importlib.import_module(module), name)


def test_the_platform_workers_bench_and_examples_import_only_the_surface() -> None:
    wrong = []
    for top in CONSUMERS:
        for path in sorted((ROOT / top).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            for line, what in _imports(path):
                if (rel, what.replace(":", ".")) in ALLOWED_PRIVATE:
                    continue
                if not _documented(what):
                    wrong.append(f"{rel}:{line}: {what}")
    assert not wrong, "imports of the SDK's private surface:\n" + "\n".join(wrong)
