"""The deploy files' validators (tests/deploy/test_validators.py), installed on first use.

They are the ``validators`` dependency group of pyproject.toml, locked with hashes in
requirements/validators.txt (docs/installs.md), and kept out of the dev virtualenv: the
Kubernetes schemas alone are 100 MB in 17,000 files, which ``make run`` need not unpack.
``bin_dir`` installs them into a virtualenv of their own inside the one running the tests
(``<venv>/validators``), once: again only when the lock file changed.  The install needs the
package index (or pip's cache) the first time; the validators themselves run offline.
"""

from __future__ import annotations

import fcntl
import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LOCK = ROOT / "requirements" / "validators.txt"
HOME = Path(sys.prefix) / "validators"
TOOLS = ("kubernetes-validate", "check-jsonschema", "hadolint")


class InstallError(RuntimeError):
    """The validators could not be installed (the message says why, pip's words included)."""


def bin_dir() -> Path:
    """The folder of the validators' commands, installed from the lock if need be."""
    digest = hashlib.sha256(LOCK.read_bytes()).hexdigest()
    stamp = HOME / ".installed"
    HOME.parent.mkdir(parents=True, exist_ok=True)
    with open(HOME.parent / ".validators.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two test runs at once install once
        if stamp.is_file() and stamp.read_text() == digest and _complete():
            return HOME / "bin"
        shutil.rmtree(HOME, ignore_errors=True)
        _run([sys.executable, "-m", "venv", str(HOME)])
        pip = [str(HOME / "bin" / "python"), "-m", "pip", "install", "-q"]
        _run([*pip, "--require-hashes", "--no-deps", "-r", str(LOCK)])
        if not _complete():
            raise InstallError(f"{LOCK} installed none of {', '.join(TOOLS)}")
        stamp.write_text(digest)
    return HOME / "bin"


def _complete() -> bool:
    return all((HOME / "bin" / tool).is_file() for tool in TOOLS)


def _run(argv: list[str]) -> None:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        detail = "\n".join(line for line in done.stderr.splitlines() if "is ignored" not in line)[
            -2000:
        ]
        raise InstallError(f"could not install the validators ({' '.join(argv[:4])}): {detail}")
