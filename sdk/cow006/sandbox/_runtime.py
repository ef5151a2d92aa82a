"""The runtime bound into the sandbox: the interpreter, its libraries and the SDK.

A Python bot gets the real interpreter binary (``sys.executable`` resolved, never a venv or
pyenv shim), its standard library without ``STDLIB_SKIP`` (site-packages hidden), the shared
libraries it and its extension modules load (found with ldd once, the answer cached), and the
host's compiled copy of the ``cow006`` package at ``/sdk/cow006`` (``launch.compiled_sdk``),
and the bot libraries (``launch.botlibs_dir``: numpy) at ``/botlibs`` with the system
libraries their extension modules load (theirs, such as OpenBLAS, are inside the directory).
A node bot gets node and its libraries; a binary bot (a static executable) nothing.
``runtime_binds`` computes the read-only binds once
per process and configuration; what the slot uid cannot reach is staged (``_staging``).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import sysconfig
import threading
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from .. import launch
from ._host import is_root, safe_dir
from ._staging import link_or_copy, reachable

if TYPE_CHECKING:
    from ._config import Sandbox

SDK_DEST = "/sdk"  # the cow006 package is at /sdk/cow006 inside
BOTLIBS_DEST = "/botlibs"  # the bot libraries (launch.botlibs_dir), read-only, last on sys.path
# Parts of the standard library a bot has no use for (or that are big): never staged.
STDLIB_SKIP = frozenset(
    {"site-packages", "dist-packages", "test", "idlelib", "tkinter", "turtledemo", "ensurepip"}
)


_runtime_cache: dict[tuple[tuple[str, ...], str], list[tuple[str, str]]] = {}
_runtime_lock = threading.Lock()


def runtime_binds(sb: Sandbox, lang: str) -> list[tuple[str, str]]:
    """(source, destination) read-only binds of a runtime: interpreter, stdlib, libraries and
    the cow006 package.  Computed once per process; sources the slot uid cannot reach (an
    interpreter under root's private home) are staged under ``cache_dir`` first."""
    key = (sb._key(), lang)
    with _runtime_lock:
        if key in _runtime_cache:
            return _runtime_cache[key]
        binds = _compute_runtime_binds(sb, lang)
        _runtime_cache[key] = binds
        return binds


def top_symlinks() -> list[tuple[str, str]]:
    """The host's top-level symlinks such as /lib -> usr/lib (merged /usr), mirrored inside."""
    out = []
    for link in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(link):
            out.append((link, os.readlink(link)))
    return out


def _shared_libs(files: Iterable[str], cache: Path | None = None) -> list[str]:
    """The shared libraries (and the dynamic loader) the given ELF files need, via ldd.

    ldd is slow (a second for the ~70 extension modules of the stdlib), so the answer is
    kept in ``cache`` (a directory only this user can write), keyed by the files' identity.
    """
    files = [f for f in files if os.path.isfile(f)]
    if not files:
        return []
    saved = None
    if cache is not None:
        ident = "|".join(f"{f}:{os.stat(f).st_mtime_ns}:{os.stat(f).st_size}" for f in files)
        saved = cache / f"libs-{hashlib.sha256(ident.encode()).hexdigest()[:20]}.json"
        with contextlib.suppress(OSError, ValueError):
            libs = json.loads(saved.read_text())
            if isinstance(libs, list) and all(isinstance(x, str) for x in libs):
                return libs
    found = _ldd(files)
    if saved is not None and found:
        tmp = saved.with_suffix(f".{os.getpid()}.tmp")
        with contextlib.suppress(OSError):
            tmp.write_text(json.dumps(found))
            os.replace(tmp, saved)
    return found


def _ldd(files: list[str]) -> list[str]:
    try:
        out = subprocess.run(
            ["ldd", *files], capture_output=True, text=True, timeout=60, env={"LC_ALL": "C"}
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return []
    libs: set[str] = set()
    for line in out.splitlines():
        line = line.strip()
        if "=>" in line:
            target = line.split("=>", 1)[1].strip().split(" (")[0].strip()
            if target.startswith("/"):
                libs.add(target)
        elif line.startswith("/") and " (0x" in line:
            libs.add(line.split(" (")[0])
    return sorted(libs)


def bot_libs_dest() -> str | None:
    """Where a sandboxed Python bot finds the bot libraries (None: the host has none)."""
    return BOTLIBS_DEST if launch.botlibs_dir() is not None else None


def _extension_files(root: str) -> list[str]:
    """The compiled modules and shared libraries under ``root``, for ldd (sorted)."""
    out = []
    for folder, dirs, names in os.walk(root):
        dirs.sort()
        out += [os.path.join(folder, n) for n in sorted(names) if n.endswith(".so") or ".so." in n]
    return out


def _lib_dest(path: str) -> str:
    """Where a library goes inside: its directory resolved (merged /usr), its name kept."""
    return os.path.join(os.path.realpath(os.path.dirname(path)), os.path.basename(path))


def sdk_source(sb: Sandbox) -> str:
    """The ``cow006`` package to bind at /sdk/cow006: the host's compiled copy of it under
    ``cache_dir`` (``launch.compiled_sdk``: sources and their bytecode, written by the host
    alone and bound read-only, so a bot neither compiles the SDK at start-up nor can change
    what another bot imports), or, if that cannot be made, the sources without bytecode."""
    staged = launch.compiled_sdk(sb.cache_path())
    if staged is not None:
        return reachable(sb, os.path.join(staged, "cow006"))
    sdk = os.path.join(launch.sdk_dir(), "cow006")
    return reachable(sb, sdk, skip=frozenset({"__pycache__"}))


def _compute_runtime_binds(sb: Sandbox, lang: str) -> list[tuple[str, str]]:
    binds: list[tuple[str, str]] = []
    cache = sb.cache_path()
    safe_dir(cache)
    elf: list[str] = []
    botlibs = None  # the host's bot libraries (Python bots only)
    if lang == "binary":
        pass  # a static executable of the bot's own: no runtime, no libraries
    elif lang == "node":
        exe = os.path.realpath(launch.node_executable())
        binds.append((reachable(sb, exe), exe))
        elf.append(exe)
    else:
        exe = launch.python_executable()
        binds.append((reachable(sb, exe), exe))
        elf.append(exe)
        stdlib = os.path.realpath(sysconfig.get_path("stdlib"))
        source = reachable(sb, stdlib, skip=STDLIB_SKIP)
        binds.append((source, stdlib))
        if source == stdlib:  # bound as it is: hide the host's installed packages
            for name in ("site-packages", "dist-packages"):
                if os.path.isdir(os.path.join(stdlib, name)):
                    binds.append(("", os.path.join(stdlib, name)))
        dynload = sysconfig.get_config_var("DESTSHARED") or os.path.join(stdlib, "lib-dynload")
        dynload = os.path.realpath(dynload)
        if os.path.isdir(dynload):
            if not (dynload + "/").startswith(stdlib + "/"):
                binds.append((reachable(sb, dynload), dynload))
            elf += [
                os.path.join(dynload, n)
                for n in sorted(os.listdir(dynload))
                if n.endswith(".so") and not n.startswith("_tkinter")
            ]
        binds.append((sdk_source(sb), f"{SDK_DEST}/cow006"))
        botlibs = launch.botlibs_dir()
        if botlibs is not None:
            binds.append((reachable(sb, botlibs), BOTLIBS_DEST))
            elf += _extension_files(botlibs)
    seen = {dest for _, dest in binds}
    libs = {}
    for lib in _shared_libs(elf, cache):
        dest = _lib_dest(lib)
        if botlibs is not None and dest.startswith(botlibs + "/"):
            continue  # numpy.libs and the like: inside /botlibs already ($ORIGIN rpaths)
        if dest not in seen:
            seen.add(dest)
            libs[dest] = os.path.realpath(lib)
    if is_root():  # one bind per library directory (each bind costs bwrap a mountinfo scan)
        binds += _lib_dirs(sb, libs, [dest for _, dest in binds])
    else:
        binds += [(src, dest) for dest, src in libs.items()]
    return sorted(binds, key=lambda b: b[1].split("/"))  # a directory before what is in it


def _lib_dirs(sb: Sandbox, libs: Mapping[str, str], others: Sequence[str]) -> list[tuple[str, str]]:
    """Stage the libraries of each destination directory together (hard links, named as the
    loader looks for them) and bind each such directory once; a directory that holds
    another bind (libpython beside the stdlib) gets its files bound one by one instead."""
    by_dir: dict[str, dict[str, str]] = {}
    for dest, src in libs.items():
        by_dir.setdefault(os.path.dirname(dest), {})[os.path.basename(dest)] = src
    out = []
    for dest_dir, files in sorted(by_dir.items()):
        if any((o + "/").startswith(dest_dir + "/") for o in others):
            for name, src in sorted(files.items()):
                out.append((reachable(sb, src), f"{dest_dir}/{name}"))
        else:
            out.append((_stage_lib_dir(sb.cache_path(), files), dest_dir))
    return out


def _stage_lib_dir(cache: Path, files: Mapping[str, str]) -> str:
    """A directory of hard links (copies across file systems) to ``files`` (name -> source)
    under ``cache``, keyed by the sources' identity."""
    ident = "|".join(
        f"{name}:{src}:{os.stat(src).st_mtime_ns}:{os.stat(src).st_size}"
        for name, src in sorted(files.items())
    )
    target = cache / f"lib-{hashlib.sha256(ident.encode()).hexdigest()[:20]}"
    if not target.is_dir():
        tmp = cache / f".{target.name}.{os.getpid()}.{threading.get_ident()}"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(mode=0o755)
        os.chmod(tmp, 0o755)
        for name, src in files.items():
            link_or_copy(src, str(tmp / name))
        try:
            os.rename(tmp, target)
        except OSError:  # another process staged it first
            shutil.rmtree(tmp, ignore_errors=True)
    return str(target)
