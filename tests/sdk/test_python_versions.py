"""The Python versions the project supports (docs/installs.md): 3.11 to 3.13.

The whole suite runs on 3.11 (CI, ``make test``); here the SDK, which is standard library
only, plays a match of the built-in bots on every other supported CPython this machine has
(pyenv's 3.12 and 3.13 here), and one below the floor is refused by pyproject.toml's
``requires-python``.  A version that is not installed is skipped, with the reason.
"""

from __future__ import annotations

import os
import subprocess
import tomllib
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet

ROOT = Path(__file__).resolve().parents[2]
SUPPORTED = ("3.11", "3.12", "3.13")
SMOKE = """
import sys
from cow006 import play_match, verify
from cow006.bots import make
log = play_match([make(n) for n in ("greedy", "random", "safe", "lowest")], seed=7)
verify(log)
print(sys.version_info[:2], log["scores"])
"""


def _interpreter(version: str) -> str | None:
    root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    found = sorted(root.glob(f"{version}.*/bin/python{version}")) if root.is_dir() else []
    return str(found[-1]) if found else None


def test_requires_python_names_the_supported_versions() -> None:
    for path in (ROOT / "pyproject.toml", ROOT / "sdk" / "pyproject.toml"):
        spec = SpecifierSet(tomllib.loads(path.read_text())["project"]["requires-python"])
        assert all(spec.contains(f"{v}.0") for v in SUPPORTED), path
        assert not spec.contains("3.10.0"), path
    classifiers = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["classifiers"]
    named = {c.rsplit(" :: ", 1)[1] for c in classifiers if c.startswith("Programming Language")}
    assert named == set(SUPPORTED)


@pytest.mark.parametrize("version", ["3.12", "3.13"])
def test_the_sdk_plays_a_match_on(version: str) -> None:
    python = _interpreter(version)
    if python is None:
        pytest.skip(f"no CPython {version} here (pyenv install {version} to run this)")
    done = subprocess.run(
        [python, "-I", "-c", f"import sys; sys.path.insert(0, {str(ROOT / 'sdk')!r})\n{SMOKE}"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.startswith(f"({version.replace('.', ', ')})"), done.stdout
