"""How a bot process is started: the one place that turns a bot path into a running process.

Kept apart from the host on purpose: the sandbox wraps exactly these two steps (the command
for a bot, and spawning it), so nothing else in the SDK knows how processes are made.

A Python bot runs on the real interpreter (not a venv shim) in isolated mode, without site
packages: it sees the standard library, ``cow006`` and the bot libraries (``botlibs_dir``:
numpy, installed apart from every other package) only, exactly as inside the sandbox, and
starts quickly.  The ``cow006`` it imports is a compiled copy (``compiled_sdk``): the
host stages the package with its bytecode once into a cache directory that only the host
writes, so no bot process compiles the SDK at start-up (bots run with ``-B`` and could not
keep what they compiled anyway).  A ``.js`` bot runs on node.  Every bot gets a clean, minimal
environment (nothing is inherited, so no secrets leak) and its own session, so the host can
kill the bot together with anything it started.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import stat
import subprocess
import sys
import threading
from pathlib import Path

from . import manifest
from ._errors import AgentLoadError

# The only environment a bot sees.  (-I makes Python ignore PYTHON* variables, so the
# interpreter flag -B is what actually stops .pyc writes; the variable is kept for bots
# that start Python themselves.)
BOT_ENV: dict[str, str] = {
    "PATH": "/usr/bin:/bin",
    "LANG": "C.UTF-8",
    "PYTHONDONTWRITEBYTECODE": "1",
    "MALLOC_ARENA_MAX": "2",
    # One thread for the numerical libraries a bot may import (``botlibs_dir``): a bot has
    # one core's share, and the sandbox's pids cap counts threads, so OpenBLAS's pool of a
    # thread per core would take a bot's share of both (docs/sandbox.md, "Bot libraries").
    "OPENBLAS_NUM_THREADS": "1",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
}

# The directory of the libraries a bot may import (numpy: requirements/botlibs.txt), where
# ``make venv`` installs them; unset: ``<sys.prefix>/botlibs`` if it exists, "off": none.
ENV_BOTLIBS = "COW006_BOTLIBS"


def sdk_dir() -> str:
    """The directory that contains the ``cow006`` package (its sources)."""
    return str(Path(__file__).resolve().parent.parent)


def cache_dir() -> Path:
    """Where the host keeps the compiled copy of the SDK for bots it runs unsandboxed (the
    sandbox keeps its own under ``Sandbox.cache_path()``)."""
    if os.geteuid() == 0:
        return Path("/var/cache/cow006")
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "cow006"


_staged: dict[str, str | None] = {}
_staged_lock = threading.Lock()


def compiled_sdk(cache: str | Path | None = None) -> str | None:
    """A directory holding a copy of the ``cow006`` package with its bytecode, for bots to
    put first on their sys.path; None if it cannot be made (bots then import the sources).

    The copy is made once, under ``cache`` (default ``cache_dir()``), which must be a
    directory of this user that no one else can write.  It is named after the content of
    the sources and the interpreter's bytecode version, built in a temporary directory and
    renamed into place (so it is complete or absent, and never changed afterwards), with
    checked-hash ``.pyc`` files: a bytecode file is only used for the very source it was
    compiled from.  The host itself never imports from it.
    """
    root = Path(cache) if cache is not None else cache_dir()
    key = str(root)
    with _staged_lock:
        if key not in _staged:
            try:
                _staged[key] = _stage_sdk(root)
            except Exception:  # an unusable cache only costs start-up time
                _staged[key] = None
        return _staged[key]


def _private_dir(path: Path) -> bool:
    """Create ``path`` (mode 0711) if needed; True if it is a directory of this user that
    no one else can write (so nothing in it can have been put there by someone else)."""
    with contextlib.suppress(OSError):
        path.mkdir(mode=0o711, parents=True, exist_ok=True)
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid() and not st.st_mode & 0o022


def _stage_sdk(root: Path) -> str | None:
    import importlib.util

    if not _private_dir(root):
        return None
    src = Path(__file__).resolve().parent
    files: dict[str, bytes] = {}
    for folder, dirs, names in os.walk(src):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not d.startswith("."))
        for name in sorted(names):
            full = os.path.join(folder, name)
            if name.startswith(".") or not os.path.isfile(full) or os.path.islink(full):
                continue
            with open(full, "rb") as f:
                files[os.path.relpath(full, src)] = f.read()
    tag = sys.implementation.cache_tag
    h = hashlib.sha256(importlib.util.MAGIC_NUMBER + tag.encode())
    for rel, data in files.items():
        h.update(f"\0{rel}\0{len(data)}\0".encode())
        h.update(data)
    target = root / f"sdk-{h.hexdigest()[:24]}"
    if (target / "cow006").is_dir():
        return str(target)
    import py_compile

    tmp = root / f".{target.name}.{os.getpid()}.{threading.get_ident()}"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        pkg = tmp / "cow006"
        for rel, data in files.items():
            dest = pkg / rel
            dest.parent.mkdir(mode=0o755, parents=True, exist_ok=True)
            with open(dest, "wb") as f:
                f.write(data)
            if dest.suffix == ".py":  # bytecode for the interpreter the bots run on
                pyc = dest.parent / "__pycache__" / f"{dest.stem}.{tag}.pyc"
                py_compile.compile(
                    str(dest),
                    cfile=str(pyc),
                    dfile=str(target / "cow006" / rel),
                    doraise=True,
                    optimize=0,
                    invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH,
                )
        for folder, _dirs, names in os.walk(tmp):  # readable by the sandbox's slot uids
            os.chmod(folder, 0o755)
            for name in names:
                os.chmod(os.path.join(folder, name), 0o644)
        try:
            os.rename(tmp, target)
        except OSError:  # another host staged the same sources first
            if not (target / "cow006").is_dir():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return str(target)


def botlibs_dir() -> str | None:
    """The host's directory of bot libraries (resolved), or None when there is none.

    ``COW006_BOTLIBS`` names it (``off`` or empty: none); unset, it is ``botlibs`` under the
    interpreter's prefix (the virtualenv's ``.venv/botlibs``, installed by ``make venv``) if
    that directory exists.  A directory that is named but missing is an error: a worker
    configured for libraries must not quietly run bots without them."""
    named = os.environ.get(ENV_BOTLIBS)
    if named is None:
        found = os.path.join(sys.prefix, "botlibs")
        return os.path.realpath(found) if os.path.isdir(found) else None
    named = named.strip()
    if named.lower() in ("", "off", "none"):
        return None
    if not os.path.isabs(named) or not os.path.isdir(named):
        raise AgentLoadError(
            f"{ENV_BOTLIBS}={named!r} names no directory (an absolute path, or off)"
        )
    return os.path.realpath(named)


_python: list[str] = ["", ""]  # sys.executable, and the interpreter it resolves to


def python_executable() -> str:
    """The real interpreter behind ``sys.executable`` (a venv's python is only a symlink),
    resolved once per ``sys.executable`` (every bot start asks for it, some twice)."""
    named, real = _python
    if named != sys.executable:
        named, real = sys.executable, os.path.realpath(sys.executable)
        _python[:] = [named, real]
    return real


def node_executable() -> str:
    return shutil.which("node") or shutil.which("node", path=BOT_ENV["PATH"]) or "/usr/bin/node"


def bootstrap(sdk: str | None = None, libs: str | None = None) -> str:
    """The ``-c`` program of a Python bot: find cow006 at ``sdk`` (default: the compiled copy,
    else the sources), the bot libraries at ``libs`` (last on sys.path, after the standard
    library: they shadow nothing; default for a host run, without ``sdk``: ``botlibs_dir()``),
    then serve the protocol.  Nothing of the libraries is imported unless the bot does."""
    where = sdk if sdk is not None else (compiled_sdk() or sdk_dir())
    if sdk is None and libs is None:
        libs = botlibs_dir()
    extra = f"sys.path.append({libs!r}); " if libs else ""
    return (
        f"import sys; sys.path.insert(0, {where!r}); {extra}"
        "from cow006.bot import run; run(sys.argv[1:])"
    )


def resolve(path: str | Path) -> tuple[str, Path]:
    """(runtime, file) for a bot path: a .py or .js file, or a folder with bot.py / bot.js,
    or with a ``cow006.toml`` naming its runtime and entry (``cow006.manifest``)."""
    p = Path(path)
    if p.is_dir():
        found = manifest.of_folder(p)
        entry = (p / found.entry).resolve()
        if not entry.is_relative_to(p.resolve()) or not entry.is_file():
            raise AgentLoadError(f"{path} has no {found.entry} (the {found.runtime} entry)")
        return found.runtime, entry
    if not p.is_file():
        raise AgentLoadError(f"no bot at {path}")
    if p.suffix == ".py":
        return "python", p.resolve()
    if p.suffix == ".js":
        return "node", p.resolve()
    raise AgentLoadError(f"{path}: a bot is a .py or .js file, or a folder with bot.py")


def command_for(path: str | Path, *, sdk: str | None = None, libs: str | None = None) -> list[str]:
    """The argv that runs the bot at ``path`` (raises AgentLoadError if it is not a bot);
    a Python bot finds cow006 in ``sdk`` and the bot libraries in ``libs`` (``bootstrap``)."""
    return command(*resolve(path), sdk=sdk, libs=libs)


def command(lang: str, file: Path, *, sdk: str | None = None, libs: str | None = None) -> list[str]:
    """``command_for`` a bot already resolved (``resolve``: its runtime and file)."""
    if lang == "node":
        return [node_executable(), str(file)]
    if lang == "binary":
        return [str(file)]
    return [python_executable(), "-I", "-S", "-B", "-c", bootstrap(sdk, libs), str(file)]


def workdir(path: str | Path) -> Path:
    """The directory a bot runs in: its folder, or the folder holding its file."""
    p = Path(path).resolve()
    return p if p.is_dir() else p.parent


def spawn(argv: list[str], cwd: str | Path) -> subprocess.Popen[bytes]:
    """Start a bot process with pipes on stdin/stdout/stderr, a clean environment and its
    own session (its pid is the process group to kill)."""
    return subprocess.Popen(
        argv,
        cwd=str(cwd),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(BOT_ENV),
        start_new_session=True,
        close_fds=True,
        bufsize=0,
    )


def launch(path: str | Path) -> subprocess.Popen[bytes]:
    """The default launcher of ``RemoteAgent``: ``spawn(command_for(path), workdir(path))``."""
    return spawn(command_for(path), workdir(path))
