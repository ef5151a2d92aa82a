"""What the layers may know: the query layer no HTTP, the page cache no tables or routes."""

from __future__ import annotations

import ast
from pathlib import Path

import cow006_platform

PLATFORM = Path(cow006_platform.__file__).parent


def _imports(package: str) -> set[str]:
    """The modules the package's files import (relative ones as written: ``..models``)."""
    names: set[str] = set()
    for path in (PLATFORM / package).glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                names.add("." * node.level + (node.module or ""))
    return names


def test_the_query_layer_knows_no_http() -> None:
    imported = _imports("crud")
    assert not {n for n in imported if n.startswith(("fastapi", "starlette"))}, imported
    assert not {n for n in imported if "routers" in n or "web" in n or "deps" in n}


def test_the_page_cache_reads_no_tables_and_names_no_routes() -> None:
    imported = _imports("cache")
    assert not {n for n in imported if n.endswith(("models", "crud", "routers", "web"))}
    source = "".join(p.read_text() for p in (PLATFORM / "cache").glob("*.py"))
    assert "/api/" not in source  # the routes declare their tags; crud lists the warm pages
