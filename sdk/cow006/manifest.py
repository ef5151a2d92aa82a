"""``cow006.toml``: what runtime a bot folder needs, and which file starts it.

A bot folder may carry a manifest at its root::

    runtime = "binary"      # "python" (the default), "node" or "binary"
    entry = "bot"           # optional: bot.py, bot.js or bot by runtime

* ``python``: ``entry`` is run by the SDK's interpreter, as ``python -m cow006.bot`` would;
* ``node``: ``entry`` is run by the host's ``node`` (the version ``node --version`` says:
  a worker offers one);
* ``binary``: ``entry`` is a static Linux x86-64 executable that speaks the protocol itself
  (docs/protocol.md); it gets no loader and no shared libraries in the sandbox, so a
  dynamically linked one, or one for another machine, is refused (``check_binary``).

Without a manifest a folder is a Python bot if it has ``bot.py``, a node one if it has
``bot.js``.  Both the platform (at upload) and the host (at launch) read manifests through
this module: standard library only, no process started.
"""

from __future__ import annotations

import re
import struct
import tomllib
from pathlib import Path
from typing import NamedTuple

from ._errors import AgentLoadError

MANIFEST = "cow006.toml"
ENTRIES = {"python": "bot.py", "node": "bot.js", "binary": "bot"}
MAX_MANIFEST = 4096  # bytes: a manifest is two lines
_ENTRY = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}(/[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}){0,3}")

# ELF: the fields a static x86-64 executable is checked by (the ELF specification).
_ELF_MAGIC = b"\x7fELF"
_ELFCLASS64, _ELFDATA2LSB = 2, 1
_ET_EXEC, _ET_DYN = 2, 3
_EM_X86_64 = 62
_PT_INTERP = 3


class Manifest(NamedTuple):
    """A bot folder's runtime and the file (relative to the folder) that starts it."""

    runtime: str
    entry: str


class ManifestError(AgentLoadError):
    """A manifest, or the executable it names, that cannot run: one sentence why."""


def parse(data: bytes) -> Manifest:
    """The manifest in ``data`` (the bytes of a ``cow006.toml``)."""
    if len(data) > MAX_MANIFEST:
        raise ManifestError(f"{MANIFEST} is larger than {MAX_MANIFEST} bytes")
    try:
        table = tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else "not TOML"
        raise ManifestError(f"{MANIFEST} is not valid TOML ({reason[:120]})") from None
    unknown = sorted(set(table) - {"runtime", "entry"})
    if unknown:
        raise ManifestError(f"{MANIFEST} has an unknown key {unknown[0][:40]!r} (runtime, entry)")
    runtime = table.get("runtime", "python")
    if runtime not in ENTRIES:
        shown = repr(runtime)[:40]
        raise ManifestError(
            f"{MANIFEST}: runtime {shown} is not one of {', '.join(sorted(ENTRIES))}"
        )
    entry = table.get("entry", ENTRIES[runtime])
    if not isinstance(entry, str) or not _ENTRY.fullmatch(entry) or ".." in entry.split("/"):
        raise ManifestError(
            f"{MANIFEST}: entry must be a relative path inside the folder (letters, digits, "
            "_ . - /), not " + repr(entry)[:60]
        )
    return Manifest(runtime, entry)


def of_folder(folder: Path) -> Manifest:
    """The folder's manifest, or what its files say without one (bot.py, else bot.js)."""
    path = folder / MANIFEST
    if path.is_file():
        return parse(path.read_bytes()[: MAX_MANIFEST + 1])
    if (folder / ENTRIES["python"]).is_file():
        return Manifest("python", ENTRIES["python"])
    if (folder / ENTRIES["node"]).is_file():
        return Manifest("node", ENTRIES["node"])
    raise AgentLoadError(f"{folder} is a folder without bot.py, bot.js or {MANIFEST}")


def check_binary(data: bytes, name: str = "the executable") -> None:
    """Refuse, with one sentence, what cannot run as a ``binary`` bot: not ELF, not 64-bit
    little-endian, not x86-64, not an executable, or linked against a loader."""
    if data[:4] != _ELF_MAGIC or len(data) < 64:
        raise ManifestError(f"{name} is not a Linux executable (ELF)")
    if data[4] != _ELFCLASS64 or data[5] != _ELFDATA2LSB:
        raise ManifestError(f"{name} is not a 64-bit little-endian executable (x86-64)")
    e_type, e_machine = struct.unpack_from("<HH", data, 16)
    if e_machine != _EM_X86_64:
        raise ManifestError(
            f"{name} is built for another machine (ELF machine {e_machine}); the arena runs "
            "x86-64 (x86_64-linux) executables"
        )
    if e_type not in (_ET_EXEC, _ET_DYN):
        raise ManifestError(f"{name} is an object file or library, not an executable")
    (e_phoff,) = struct.unpack_from("<Q", data, 32)
    e_phentsize, e_phnum = struct.unpack_from("<HH", data, 54)
    if e_phentsize < 4 or e_phoff + e_phentsize * e_phnum > len(data):
        raise ManifestError(f"{name} is a truncated or damaged executable")
    for i in range(e_phnum):
        (p_type,) = struct.unpack_from("<I", data, e_phoff + i * e_phentsize)
        if p_type == _PT_INTERP:
            raise ManifestError(
                f"{name} is dynamically linked: the sandbox offers no loader or shared "
                "libraries, so link it statically (gcc -static, cargo --target "
                "x86_64-unknown-linux-musl)"
            )
