"""The lock (docs/installs.md) says what pyproject.toml declares (issue 20).

Every dependency declared in pyproject.toml (the application's, each extra's, each
dependency group's) is pinned in the requirements file that installs it, at a version its
bound allows, with hashes; the requirements files are what ``uv export`` makes of uv.lock
today, and uv.lock is up to date with pyproject.toml (``uv lock --check``, offline).  After a
change to the dependencies: ``make lock``.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
REQS = ROOT / "requirements"
# The virtualenv's own uv (the dev extra), else one on PATH.
UV = shutil.which("uv", path=str(Path(sys.executable).parent)) or shutil.which("uv")
# The requirements file of each part of pyproject.toml, and the export that makes it (Makefile).
FILES = {
    "app": [],
    "dev": ["--extra", "dev"],
    "ops": ["--extra", "ops"],
    "build": ["--only-group", "build"],
    "validators": ["--only-group", "validators"],
    "botlibs": ["--only-group", "botlibs"],
}
FIX = "the lock disagrees with pyproject.toml: run `make lock`"
Pins = dict[str, tuple[str, bool]]  # name: (version, has hashes)


def pins(text: str) -> Pins:
    """A requirements file's ``name == version`` pins: {name: (version, hashed)}."""
    out: Pins = {}
    for entry in re.split(r"\n(?=\S)", text):
        head = entry.split("\\", 1)[0].strip()
        if not head or head.startswith(("#", "-")):
            continue
        req = Requirement(head)
        (spec,) = req.specifier
        assert spec.operator == "==", f"{head}: not pinned"
        out[canonicalize_name(req.name)] = (spec.version, "--hash=sha256:" in entry)
    return out


def declared() -> dict[str, list[Requirement]]:
    """The requirements of each part of pyproject.toml: the application (``app``), each
    extra with the application, each dependency group.  An extra that names another of
    ours (``cow006-arena[rl]`` in ``dev``) brings that one's requirements."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    me = canonicalize_name(project["project"]["name"])
    extras = project["project"].get("optional-dependencies", {})
    app = [Requirement(r) for r in project["project"]["dependencies"]]

    def expand(reqs: list[str], seen: frozenset[str] = frozenset()) -> list[Requirement]:
        out: list[Requirement] = []
        for req in map(Requirement, reqs):
            if canonicalize_name(req.name) != me:
                out.append(req)
                continue
            for extra in sorted(req.extras - seen):
                out += expand(extras.get(extra, []), seen | {extra})
        return out

    out = {name: expand(reqs) for name, reqs in project.get("dependency-groups", {}).items()}
    out["app"] = app
    for extra, reqs in extras.items():
        out[extra] = app + expand(reqs, frozenset({extra}))
    return out


def disagreements(requirements: list[Requirement], locked: Pins) -> list[str]:
    out = []
    for req in requirements:
        name = canonicalize_name(req.name)
        if name not in locked:
            out.append(f"{req}: not in the lock")
            continue
        version, hashed = locked[name]
        if not req.specifier.contains(version, prereleases=True):
            out.append(f"{req}: the lock pins {version}")
        if not hashed:
            out.append(f"{req}: no hash in the lock")
    return out


@pytest.mark.parametrize("part", sorted(FILES))
def test_every_declared_dependency_is_pinned_within_its_bound(part: str) -> None:
    locked = pins((REQS / f"{part}.txt").read_text())
    assert not (problems := disagreements(declared()[part], locked)), f"{FIX}: {problems}"


def test_every_other_extra_is_in_the_dev_lock() -> None:
    """An extra without a requirements file of its own (FILES, the Makefile's ``lock``) is
    installed by ``make venv`` through the dev extra (``cow006-arena[NAME]`` in it)."""
    locked = pins((REQS / "dev.txt").read_text())
    for part, reqs in declared().items():
        if part not in FILES:
            problems = disagreements(reqs, locked)
            assert not problems, (
                f"the extra {part!r} is not in requirements/dev.txt: add cow006-arena[{part}] "
                f"to the dev extra (or a file of its own to FILES and `make lock`), then run "
                f"`make lock`: {problems}"
            )


def test_a_dependency_missing_from_the_lock_or_out_of_bounds_is_caught() -> None:
    hashed = "fastapi==0.100.0 \\\n    --hash=sha256:00\nrich==13.0 \\\n    --hash=sha256:11\n"
    locked = pins(hashed)
    problems = disagreements(
        [Requirement("fastapi>=0.110"), Requirement("rich>=13"), Requirement("numpy>=2")], locked
    )
    assert problems == ["fastapi>=0.110: the lock pins 0.100.0", "numpy>=2: not in the lock"]
    assert disagreements([Requirement("rich")], pins("rich==13.0\n")) == [
        "rich: no hash in the lock"
    ]


def _uv() -> str:
    if UV is None:
        pytest.fail("uv is not installed: it is in the dev extra (make venv)")
    return UV


def test_uv_lock_is_up_to_date_with_pyproject() -> None:
    done = subprocess.run(
        [_uv(), "lock", "--check", "--offline"], cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, f"{FIX}: {done.stderr[-2000:]}"


@pytest.mark.parametrize("part", sorted(FILES))
def test_requirements_files_are_the_export_of_uv_lock(part: str, tmp_path: Path) -> None:
    out = tmp_path / f"{part}.txt"
    argv = [_uv(), "export", "-q", "--frozen", "--no-emit-project", "--no-default-groups"]
    subprocess.run([*argv, *FILES[part], "-o", str(out)], cwd=ROOT, check=True)
    assert _body(out.read_text()) == _body((REQS / f"{part}.txt").read_text()), FIX


def _body(text: str) -> list[str]:
    """A requirements file without its comments (the header names the command)."""
    return [line for line in text.splitlines() if not line.lstrip().startswith("#")]
